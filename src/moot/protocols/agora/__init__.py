"""The Agora debate: drones state positions with confidence, signals and proposals, then a mediator decides.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.registry import ProtocolPlugin

PLUGIN = ProtocolPlugin(
    name="agora",
    folder=".agora",
    title="# Agora Debate:",
    rules=("moot.protocols.agora.machine:RULES",),
    config="moot.protocols.agora.machine:AgoraConfig",
    machine="moot.protocols.agora.machine:AgoraProtocol",
    record="moot.protocols.agora.record",
    driver="moot.protocols.agora.driver:AgoraDriver",
    command="moot.cli.run:run_agora",
    view="moot.web.views:agora",
    turn_heading="## Turn ",
)

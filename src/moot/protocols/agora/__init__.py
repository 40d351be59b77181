"""The Agora debate: drones state positions with confidence, signals and proposals, then a mediator decides.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.plugin import GROUNDED, SEALED, Protocol, Ref

PLUGIN = Protocol(
    name="agora",
    summary="drones state positions with confidence, signals and proposals, then a mediator decides.",
    folder=".agora",
    title="# Agora Debate:",
    rules=(Ref("moot.protocols.agora.machine:RULES"),),
    machine=Ref("moot.protocols.agora.machine:AgoraProtocol"),
    record=Ref("moot.protocols.agora.record:FORMAT"),
    driver=Ref("moot.protocols.agora.driver:AgoraDriver"),
    command=Ref("moot.protocols.agora.command:run_agora"),
    view=Ref("moot.protocols.agora.view:panels"),
    analysis=Ref("moot.protocols.agora.analysis:ANALYSIS"),
    capabilities=frozenset({SEALED, GROUNDED}),
)

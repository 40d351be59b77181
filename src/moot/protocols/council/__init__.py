"""The Council: members answer sealed, review each other's answers anonymously, and a chairman synthesises.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.registry import ProtocolPlugin

PLUGIN = ProtocolPlugin(
    name="council",
    folder=".council",
    title="# Council:",
    rules=("moot.protocols.council.machine:RULES",),
    config="moot.protocols.council.machine:CouncilConfig",
    machine="moot.protocols.council.machine:CouncilProtocol",
    record="moot.protocols.council.record",
    driver="moot.protocols.council.driver:CouncilDriver",
    command="moot.protocols.council.command:run_council",
    view="moot.web.views:council",
    turn_heading="## Stage ",
)

"""Roundtable v2: speakers take the floor in turn, round by round, and the moderator writes the minutes.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.registry import ProtocolPlugin

PLUGIN = ProtocolPlugin(
    name="roundtable",
    folder=".roundtable",
    marker="turn.json",
    rules=("moot.protocols.roundtable.machine:RULES",),
    config="moot.protocols.roundtable.machine:TurnState",
    machine="moot.protocols.roundtable.machine:RoundtableProtocol",
    record="moot.protocols.roundtable.record",
    driver="moot.protocols.roundtable.driver:RoundtableDriver",
    command="moot.cli.run:run_roundtable",
    documents="moot.protocols.roundtable.record:documents",
    tool_commands="moot.cli.tools:roundtable_app",
    view="moot.web.views:roundtable",
    mcp_tools="moot.protocols.roundtable.mcp_tools:ROUNDTABLE_TOOLS",
)

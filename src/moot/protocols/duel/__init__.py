"""The Socratic Duel: two agents debate a read-only source document in at most six evidence-backed turns.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.registry import ProtocolPlugin

PLUGIN = ProtocolPlugin(
    name="duel",
    folder="debates",
    title="# Socratic Duel:",
    rules=("moot.protocols.duel.machine:RULES", "moot.protocols.duel.record:FORMAT_RULES"),
    config="moot.protocols.duel.machine:DuelConfig",
    machine="moot.protocols.duel.machine:DuelProtocol",
    record="moot.protocols.duel.record",
    driver="moot.protocols.duel.driver:DuelDriver",
    command="moot.cli.run:run_duel",
    tool_commands="moot.cli.tools:duel_app",
    mcp_tools="moot.protocols.duel.mcp_tools:DUEL_TOOLS",
    view="moot.web.views:duel",
    turn_heading="## Turn ",
)

"""The Critique Loop: a proposer and a critic take turns until both agree, or the round limit.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.registry import ProtocolPlugin

PLUGIN = ProtocolPlugin(
    name="critique",
    folder=".dialogues",
    title="# Dialogue:",
    rules=("moot.protocols.critique.machine:RULES",),
    config="moot.protocols.critique.machine:CritiqueConfig",
    machine="moot.protocols.critique.machine:CritiqueProtocol",
    record="moot.protocols.critique.record",
    driver="moot.protocols.critique.driver:CritiqueDriver",
    command="moot.cli.run:run_critique",
    tool_commands="moot.cli.tools:critique_app",
    view="moot.web.views:critique",
    turn_heading="## [",
    mcp_tools="moot.protocols.critique.mcp_tools:CRITIQUE_TOOLS",
)

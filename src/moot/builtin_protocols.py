"""moot's four seed protocols and the Council, registered through moot's own ``moot.protocols`` entry points
exactly as a third-party protocol is. Plain data: importing this module imports no protocol."""

from __future__ import annotations

from moot.registry import ProtocolPlugin

CRITIQUE = ProtocolPlugin(
    name="critique",
    folder=".dialogues",
    title="# Dialogue:",
    rules=("moot.protocols.critique:RULES",),
    config="moot.protocols.critique:CritiqueConfig",
    machine="moot.protocols.critique:CritiqueProtocol",
    record="moot.artifacts.critique",
    driver="moot.engine.critique:CritiqueDriver",
    command="moot.cli.run:run_critique",
    tool_commands="moot.cli.tools:critique_app",
    view="moot.web.views:critique",
    turn_heading="## [",
    mcp_tools="moot.mcp.critique_tools:CRITIQUE_TOOLS",
)

DUEL = ProtocolPlugin(
    name="duel",
    folder="debates",
    title="# Socratic Duel:",
    rules=("moot.protocols.duel:RULES", "moot.artifacts.duel:FORMAT_RULES"),
    config="moot.protocols.duel:DuelConfig",
    machine="moot.protocols.duel:DuelProtocol",
    record="moot.artifacts.duel",
    driver="moot.engine.duel:DuelDriver",
    command="moot.cli.run:run_duel",
    tool_commands="moot.cli.tools:duel_app",
    mcp_tools="moot.mcp.duel_tools:DUEL_TOOLS",
    view="moot.web.views:duel",
    turn_heading="## Turn ",
)

AGORA = ProtocolPlugin(
    name="agora",
    folder=".agora",
    title="# Agora Debate:",
    rules=("moot.protocols.agora:RULES",),
    config="moot.protocols.agora:AgoraConfig",
    machine="moot.protocols.agora:AgoraProtocol",
    record="moot.artifacts.agora",
    driver="moot.engine.agora:AgoraDriver",
    command="moot.cli.run:run_agora",
    view="moot.web.views:agora",
    turn_heading="## Turn ",
)

ROUNDTABLE = ProtocolPlugin(
    name="roundtable",
    folder=".roundtable",
    marker="turn.json",
    rules=("moot.protocols.roundtable:RULES",),
    config="moot.protocols.roundtable:TurnState",
    machine="moot.protocols.roundtable:RoundtableProtocol",
    record="moot.artifacts.roundtable",
    driver="moot.engine.roundtable:RoundtableDriver",
    command="moot.cli.run:run_roundtable",
    documents="moot.artifacts.roundtable:documents",
    tool_commands="moot.cli.tools:roundtable_app",
    view="moot.web.views:roundtable",
    mcp_tools="moot.mcp.roundtable_tools:ROUNDTABLE_TOOLS",
)

COUNCIL = ProtocolPlugin(
    name="council",
    folder=".council",
    title="# Council:",
    rules=("moot.protocols.council:RULES",),
    config="moot.protocols.council:CouncilConfig",
    machine="moot.protocols.council:CouncilProtocol",
    record="moot.artifacts.council",
    driver="moot.engine.council:CouncilDriver",
    command="moot.cli.council:run_council",
    view="moot.web.views:council",
    turn_heading="## Stage ",
)

BUILTIN_PROTOCOLS = (CRITIQUE, DUEL, AGORA, ROUNDTABLE, COUNCIL)

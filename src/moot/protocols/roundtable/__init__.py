"""Roundtable v2: speakers take the floor in turn, round by round, and the moderator writes the minutes.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.plugin import SEALED, Protocol, Ref

PLUGIN = Protocol(
    name="roundtable",
    summary="speakers take the floor in turn, round by round, and the moderator writes the minutes.",
    folder=".roundtable",
    marker="turn.json",
    rules=(Ref("moot.protocols.roundtable.machine:RULES"),),
    machine=Ref("moot.protocols.roundtable.machine:RoundtableProtocol"),
    record=Ref("moot.protocols.roundtable.record:FORMAT"),
    driver=Ref("moot.protocols.roundtable.driver:RoundtableDriver"),
    command=Ref("moot.protocols.roundtable.command:run_roundtable"),
    tools=Ref("moot.protocols.roundtable.tools:TOOLS"),
    sharing=Ref("moot.protocols.roundtable.tools:SHARING"),
    view=Ref("moot.protocols.roundtable.view:panels"),
    analysis=Ref("moot.protocols.roundtable.analysis:ANALYSIS"),
    capabilities=frozenset({SEALED}),
)

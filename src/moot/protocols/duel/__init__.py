"""The Socratic Duel: two agents debate a read-only source document in at most six evidence-backed turns.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.plugin import GROUNDED, Protocol, Ref

PLUGIN = Protocol(
    name="duel",
    summary="two agents debate a read-only source document in at most six evidence-backed turns.",
    folder="debates",
    title="# Socratic Duel:",
    rules=(Ref("moot.protocols.duel.machine:RULES"), Ref("moot.protocols.duel.record:FORMAT_RULES")),
    machine=Ref("moot.protocols.duel.machine:DuelProtocol"),
    record=Ref("moot.protocols.duel.record:FORMAT"),
    driver=Ref("moot.protocols.duel.driver:DuelDriver"),
    command=Ref("moot.protocols.duel.command:run_duel"),
    tools=Ref("moot.protocols.duel.tools:TOOLS"),
    sharing=Ref("moot.protocols.duel.tools:SHARING"),
    hosts=Ref("moot.protocols.duel.guide:host_files"),
    view=Ref("moot.protocols.duel.view:panels"),
    analysis=Ref("moot.protocols.duel.analysis:ANALYSIS"),
    capabilities=frozenset({GROUNDED}),
)

"""Auto: the members answer sealed and vote; only a split panel escalates to a council's reviews and synthesis.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.plugin import SEALED, Protocol, Ref

PLUGIN = Protocol(
    name="auto",
    summary="members answer sealed and vote; only a split escalates to a council's anonymous reviews and synthesis.",
    folder=".auto",
    title="# Auto:",
    rules=(Ref("moot.protocols.auto.machine:RULES"), Ref("moot.protocols.council.machine:RULES")),
    machine=Ref("moot.protocols.auto.machine:AutoProtocol"),
    record=Ref("moot.protocols.auto.record:FORMAT"),
    driver=Ref("moot.protocols.auto.driver:AutoDriver"),
    command=Ref("moot.protocols.auto.command:run_auto"),
    view=Ref("moot.protocols.auto.view:panels"),
    analysis=Ref("moot.protocols.auto.analysis:ANALYSIS"),
    capabilities=frozenset({SEALED}),
)

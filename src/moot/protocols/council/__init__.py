"""The Council: members answer sealed, review each other's answers anonymously, and a chairman synthesises.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.plugin import SEALED, Protocol, Ref

PLUGIN = Protocol(
    name="council",
    summary="members answer sealed, review each other's answers anonymously, and a chairman synthesises.",
    folder=".council",
    title="# Council:",
    rules=(Ref("moot.protocols.council.machine:RULES"),),
    machine=Ref("moot.protocols.council.machine:CouncilProtocol"),
    record=Ref("moot.protocols.council.record:FORMAT"),
    driver=Ref("moot.protocols.council.driver:CouncilDriver"),
    command=Ref("moot.protocols.council.command:run_council"),
    view=Ref("moot.protocols.council.view:panels"),
    analysis=Ref("moot.protocols.council.analysis:ANALYSIS"),
    review=Ref("moot.protocols.council.review:REVIEW"),
    capabilities=frozenset({SEALED}),
)

"""The Critique Loop: a proposer and a critic take turns until both agree, or the round limit.

This module holds the protocol's plugin object alone (plain data); each part it names is imported
when first used, so loading the entry point imports nothing else of the protocol."""

from __future__ import annotations

from moot.plugin import Protocol, Ref

PLUGIN = Protocol(
    name="critique",
    summary="a proposer and a critic take turns until both agree, or the round limit.",
    folder=".dialogues",
    title="# Dialogue:",
    rules=(Ref("moot.protocols.critique.machine:RULES"),),
    machine=Ref("moot.protocols.critique.machine:CritiqueProtocol"),
    record=Ref("moot.protocols.critique.record:FORMAT"),
    driver=Ref("moot.protocols.critique.driver:CritiqueDriver"),
    command=Ref("moot.protocols.critique.command:run_critique"),
    tools=Ref("moot.protocols.critique.tools:TOOLS"),
    sharing=Ref("moot.protocols.critique.tools:SHARING"),
    hosts=Ref("moot.protocols.critique.host:host_files"),
    view=Ref("moot.protocols.critique.view:panels"),
    analysis=Ref("moot.protocols.critique.analysis:ANALYSIS"),
    review=Ref("moot.protocols.critique.review:REVIEW"),
)

"""Auto's panels in the viewer: the vote (its tally, agreement and whether it escalated) and, for an escalated
run, the council's ranking matrix."""

from __future__ import annotations

from pathlib import Path

from moot.plugin import Panel
from moot.protocols.auto import record
from moot.protocols.auto.machine import ESCALATED, Vote
from moot.protocols.council.machine import Review, Synthesis
from moot.protocols.council.view import rankings


def panels(target: Path, document: str) -> list[Panel]:
    parsed = record.parse(document, str(target))
    vote = next((entry.turn for entry in parsed.turns if isinstance(entry.turn, Vote)), None)
    if vote is None:
        return []
    rows = [
        ("decision", vote.decision),
        ("escalated", "yes: the council reviewed and synthesised" if vote.decision == ESCALATED else "no"),
        ("agreement", vote.agreement),
        ("threshold", vote.threshold),
        ("quorum", str(vote.quorum)),
        *((f"{len(members)} vote(s)", f"{answer} — {', '.join(members)}") for answer, members in vote.tally),
    ]
    found = [Panel("Vote", rows=rows)]
    council = [entry.turn for entry in parsed.turns if isinstance(entry.turn, Review | Synthesis)]
    svg = rankings(council) if council else None
    return found + ([Panel("Ranking matrix and aggregate", svg)] if svg is not None else [])

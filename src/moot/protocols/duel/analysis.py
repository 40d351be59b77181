"""What moot reads out of a duel record: each participant's stance after each of its turns (conformity).

A stance change is supported when its turn cites Stance Revision Support: the duel's own rule for a change
made on grounds rather than under pressure.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from moot.core.files import read_text
from moot.plugin import Analysis, Positions, Stated
from moot.protocols.duel import record
from moot.protocols.duel.machine import DuelTurn


def stances(turns: Iterable[DuelTurn]) -> list[Stated]:
    """Each turn's stance, in turn order; a change is supported when the turn cites Stance Revision Support."""
    return [
        Stated(t.participant, t.stance, t.number, supported=bool(t.stance_revision_support), turn=t.number)
        for t in turns
    ]


def positions(path: Path) -> list[Positions]:
    """The stances of the duel at ``path``; [] when it cannot be read or parsed (``moot check`` says why)."""
    text, _ = read_text(path)
    if text is None:
        return []
    parsed, _ = record.parse(text, str(path))
    return [] if parsed is None else [Positions("stance", stances(parsed.turns))]


ANALYSIS = Analysis(positions=positions)

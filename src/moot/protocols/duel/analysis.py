"""What moot reads out of a duel record: each participant's stance after each of its turns (conformity), and
the decision.

A stance change is supported when its turn cites Stance Revision Support: the duel's own rule for a change
made on grounds rather than under pressure.

The decision: on ACCEPTED_CONSENSUS, the agreed position is the Position of the earlier of the two accepting
turns, the one the closing turn accepted (the closing turn often reads "I accept the same design, with …", and
its amendments are among its Agreements). What each participant conceded is the Agreements of its turns. The
open and blocking items are the Unresolved Items of each participant's latest turn. On any other ending nothing
was decided, and the latest Position of each participant still DISSENTING is its dissent.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from moot.core.files import read_text
from moot.plugin import Analysis, Decision, Point, Positions, Stated
from moot.protocols.duel import record
from moot.protocols.duel.machine import DuelProtocol, DuelState, DuelTurn, OutcomeName, Stance, latest_turns


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


def decision(path: Path) -> Decision | None:
    """The decision of the duel at ``path`` (see the module docstring); None when it cannot be read or parsed."""
    text, _ = read_text(path)
    if text is None:
        return None
    parsed, _ = record.parse(text, str(path))
    if parsed is None:
        return None
    state = DuelState(turns=tuple(parsed.turns), conclusion=parsed.conclusion)
    ended = DuelProtocol(parsed.config, parsed.participants).outcome(state)
    latest = sorted(latest_turns(parsed.turns).values(), key=lambda t: t.number)
    decided = None
    if ended is not None and ended.name == OutcomeName.ACCEPTED_CONSENSUS.value and latest:
        decided = Point(latest[0].position, latest[0].number, latest[0].participant)
    dissent = (
        ()
        if ended is None
        else tuple(Point(t.position, t.number, t.participant) for t in latest if t.stance == Stance.DISSENTING.value)
    )
    unresolved = [(t, item) for t in latest for item in t.unresolved]
    return Decision(
        outcome=ended.name if ended is not None else None,
        decided=decided,
        conceded=tuple(Point(a, t.number, t.participant) for t in parsed.turns for a in t.agreements),
        open=tuple(Point(item.text, t.number, t.participant) for t, item in unresolved if not item.blocking),
        blocking=tuple(Point(item.text, t.number, t.participant) for t, item in unresolved if item.blocking),
        dissent=dissent,
    )


ANALYSIS = Analysis(positions=positions, decision=decision)

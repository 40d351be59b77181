"""What moot reads out of a critique record: the conclusion both parties agreed on, and each turn's message.

The loop's answer is the summary of its DONE turn, which confirms the other party's proposal to conclude:
the one place the two parties state what they agreed. A loop that ran out of rounds or escalated (STUCK)
concluded nothing and has no answer. The decision is that summary, from the DONE turn; a loop that escalated
has the STUCK turn's explanation as its one blocking item. The turns are free text, so the loop records no
concessions or open items moot could list. Turns alternate and each reads the ones before it, so each turn is a
round of its own: round 0 is the opening turn alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from moot.core.files import read_text
from moot.plugin import Analysis, Decision, Held, Point
from moot.protocols.critique import record
from moot.protocols.critique.machine import CritiqueProtocol, CritiqueTurn, StatusKind


def _parsed(path: Path) -> record.CritiqueRecord | None:
    text, _ = read_text(path)
    if text is None:
        return None
    parsed, _ = record.parse(text, str(path))
    return parsed


def _turns(path: Path) -> tuple[CritiqueTurn, ...]:
    parsed = _parsed(path)
    return () if parsed is None else parsed.turns


def answer(path: Path) -> str | None:
    """The DONE turn's summary; None when the loop did not conclude."""
    turns = _turns(path)
    if not turns or turns[-1].status != StatusKind.DONE:
        return None
    return turns[-1].summary or None


def rounds(path: Path) -> list[dict[str, Held]]:
    """Each turn's message as a round of its own; the DONE turn's summary stands for its author's last word."""
    result: list[dict[str, Held]] = []
    for turn in _turns(path):
        text = turn.summary if turn.status == StatusKind.DONE and turn.summary else turn.message
        result.append({turn.role: Held(text or None)})
    return result


def pose(question: str, panel: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The first two panel members as the loop's two roles; the question, on one line, as its topic."""
    roles = [name for name, _ in panel][:2]
    return {"topic": " ".join(question.split()), "roles": roles}


def decision(path: Path) -> Decision | None:
    """The DONE turn's summary, or the blocker a STUCK turn escalated (see the module docstring)."""
    parsed = _parsed(path)
    if parsed is None:
        return None
    protocol = CritiqueProtocol(parsed.config)
    state = protocol.replay(parsed.turns).state
    ended = protocol.outcome(state)
    done, last = state.done, state.last
    decided = Point(done.summary, state.done_at, done.role) if done is not None and done.summary else None
    blocking: tuple[Point, ...] = ()
    if ended is not None and ended.name == StatusKind.STUCK.value and last is not None and last.message:
        blocking = (Point(last.message, state.turns, last.role),)
    return Decision(outcome=ended.name if ended is not None else None, decided=decided, blocking=blocking)


def panel(path: Path) -> list[str] | None:
    """The loop's two roles, as ``pose`` names them."""
    parsed = _parsed(path)
    return None if parsed is None else list(parsed.config.roles)


ANALYSIS = Analysis(answer=answer, rounds=rounds, pose=pose, decision=decision, panel=panel)

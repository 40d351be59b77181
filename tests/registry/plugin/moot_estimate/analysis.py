"""What moot reads out of an estimate: numeric positions for the conformity metrics, and the answer, rounds, pose
and panel that make it a ``moot eval --strategy protocol:estimate``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from moot.plugin import Analysis, Held, Positions, Stated, read_text
from moot_estimate.protocol import final, number
from moot_estimate.record import Parsed, parse


def _read(path: Path) -> Parsed | None:
    text, _ = read_text(path)
    parsed = parse(text) if text is not None else None
    return parsed if parsed is not None and parsed.config is not None else None


def positions(path: Path) -> list[Positions]:
    """Each estimate as a number; a round's estimates are stated at once (made without seeing each other)."""
    parsed = _read(path)
    if parsed is None:
        return []
    return [
        Positions(
            "estimate", [Stated(e.estimator, e.value, e.round, turn=n) for n, e in enumerate(parsed.estimates, 1)]
        )
    ]


def answer(path: Path) -> str | None:
    parsed = _read(path)
    value = final(parsed.config, tuple(parsed.estimates)) if parsed is not None and parsed.config else None
    return number(value) if value is not None else None


def rounds(path: Path) -> list[dict[str, Held]]:
    parsed = _read(path)
    held: list[dict[str, Held]] = []
    for e in parsed.estimates if parsed is not None else ():
        while e.round > len(held):
            held.append({})
        held[e.round - 1][e.estimator] = Held(number(e.value))
    return held


def pose(question: str, panel: Sequence[tuple[str, str]]) -> dict[str, Any]:
    return {"question": question, "estimators": [name for name, _ in panel]}


def panel(path: Path) -> list[str] | None:
    parsed = _read(path)
    return list(parsed.config.estimators) if parsed is not None and parsed.config else None


ANALYSIS = Analysis(positions=positions, answer=answer, rounds=rounds, pose=pose, panel=panel)

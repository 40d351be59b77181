"""The decision of a record on disk, as its protocol reads it out (``Analysis.decision``): what a person wants
before the transcript. ``moot show`` prints it first, ``moot show --json`` and MCP ``debate_result`` carry
:func:`decision_json`, and the viewer leads a record's page with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from moot import registry
from moot.detect import detect
from moot.plugin import Decision, Point


def record_decision(protocol: str, target: Path) -> Decision | None:
    """The decision of a record; None for a protocol without the hook or a record it cannot read."""
    analysis = registry.get(protocol).analysis
    hook = analysis.load().decision if analysis is not None else None
    return hook(target) if hook is not None else None


def decision_json(path: Path) -> dict[str, Any] | None:
    """The decision of the record at ``path`` (a file or a meeting directory) as JSON, or None."""
    protocol, target, _ = detect(path)
    if protocol is None:
        return None
    found = record_decision(protocol, target)
    return found.to_json() if found is not None else None


def place(point: Point) -> str:
    """Where a point stands: 'turn 5, alice', 'turn 5', 'moderator', or '' when the record does not say."""
    return ", ".join(part for part in (f"turn {point.turn}" if point.turn is not None else "", point.who or "") if part)


def _item(point: Point, lead: str) -> list[str]:
    where = place(point)
    first, *rest = point.text.strip().split("\n") or [""]
    pad = " " * len(lead)
    return [f"{lead}{f'({where}) ' if where else ''}{first}", *(f"{pad}{line}" if line else "" for line in rest)]


def decision_lines(decision: Decision) -> list[str]:
    """The decision for a terminal: the outcome, what was decided and where, then each list that holds items."""
    lines = [f"outcome: {decision.outcome or 'open'}"]
    if decision.decided is not None:
        lines += _item(decision.decided, "decided: ")
    else:
        lines.append("decided: nothing" + (" yet" if decision.outcome is None else ""))
    for name, points in decision.lists():
        lines.append(f"{name}:")
        for point in points:
            lines += _item(point, "  - ")
    return lines

"""The duel's panel in the viewer: each participant's stance after each of its turns."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from moot.plugin import Panel
from moot.protocols.duel import record
from moot.protocols.duel.machine import DuelTurn, Stance
from moot.web.plots import LABEL_ROOM, LEFT, LINE, ROW, STEP, TOP, axis, fit, latest, legend, legend_lines, order
from moot.web.svg import colour, el, figure, line, text


def stance_timeline(turns: Sequence[DuelTurn]) -> Markup | None:
    """Each participant's stance after each of its turns, from dissent (top) to accepted consensus (bottom)."""
    if not turns:
        return None
    stances = [s.value for s in (Stance.DISSENTING, Stance.REVISING, Stance.OPEN_TO_DEBATE, Stance.CONVERGING)]
    stances.append(Stance.ACCEPTING_CONSENSUS.value)
    stances += order(t.stance for t in turns if t.stance not in stances)  # an unknown stance still shows
    people = order(t.participant for t in turns)
    width = max(LEFT + STEP * len(turns) + 20, LEFT + 320)
    height = TOP + ROW * len(stances) + 24 + LINE * legend_lines(people, width - 10)
    parts: list[Markup] = []
    for row, stance in enumerate(stances):
        y = TOP + ROW * row
        parts.append(line(LEFT - 6, y, width - 10, y, class_="grid"))
        parts.append(text(LEFT - 10, y + 4, fit(stance, LABEL_ROOM), text_anchor="end", class_="axis"))
    for index, person in enumerate(people):
        points = [
            (LEFT + STEP * i, TOP + ROW * stances.index(t.stance))
            for i, t in enumerate(turns)
            if t.participant == person
        ]
        path = " ".join(f"{x:.0f},{y:.0f}" for x, y in points)
        parts.append(el("polyline", {"points": path, "fill": "none", "stroke": colour(index), "stroke_width": 2}))
        for (x, y), turn in zip(points, [t for t in turns if t.participant == person], strict=True):
            dot = el("circle", {"cx": x, "cy": y, "r": 6, "fill": colour(index)}, el("title", None, _tip(turn)))
            parts.append(dot)
    parts += axis((t.number for t in turns), TOP + ROW * len(stances) + 2)
    parts += legend(people, TOP + ROW * len(stances) + 26, width - 10)
    return figure(width, height, "stance of each participant by turn", parts)


def _tip(turn: DuelTurn) -> str:
    return f"turn {turn.number} · {turn.participant} · {turn.stance}"


def panels(target: Path, document: str) -> list[Panel]:
    parsed, _ = record.parse(document, str(target))
    if parsed is None:
        return []
    turns, title = latest(parsed.turns, "Stance timeline")
    svg = stance_timeline(turns)
    return [Panel(title, svg)] if svg is not None else []

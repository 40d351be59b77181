"""The Agora's panel in the viewer: each drone's confidence per turn, marked with its signal."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from moot.plugin import Panel
from moot.protocols.agora import record
from moot.protocols.agora.machine import MEDIATOR, AgoraTurn
from moot.web.plots import (
    LEFT,
    LINE,
    STEP,
    TOP,
    axis,
    fit,
    key,
    lanes,
    latest,
    legend,
    legend_lines,
    order,
    text_width,
)
from moot.web.svg import colour, el, figure, line, text

LANE = 16  # px between two lanes of proposal names
SIGNAL_MARKS = {"propose": "P", "counter": "C", "approve": "A", "no-change": "N", "defer": "D"}


def confidence(turns: Sequence[AgoraTurn]) -> Markup | None:
    """Each participant's confidence per turn, every point marked with its signal; proposals are ringed and named
    in lanes above the plot, so that no two names overlap."""
    spoken = [t for t in turns if t.role != MEDIATOR]
    if not spoken:
        return None
    people = order(t.role for t in spoken)
    first = turns[0].number
    mediated = [t for t in turns if t.role == MEDIATOR]
    plot_height = 150
    width = max(LEFT + STEP * (turns[-1].number - first + 1) + 20, LEFT + 320)
    names, lane_of = _proposal_lanes([t for t in turns if t.signal == "propose"], first, width)
    top = TOP + LANE * (max(lane_of, default=-1) + 1)
    named = [*people, *([MEDIATOR] if mediated else [])]
    marks = [f"{mark} {signal}" for signal, mark in SIGNAL_MARKS.items()] + ["ringed: a proposal"]
    bottom = top + plot_height + 40
    key_parts, key_lines = key(marks, bottom, width - 10)
    height = bottom + LINE * key_lines + LINE * legend_lines(named, width - 10)
    parts: list[Markup] = [text(12, 14, "confidence", class_="axis")]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_height * (1 - tick)
        parts.append(line(LEFT - 6, y, width - 10, y, class_="grid"))
        parts.append(text(LEFT - 10, y + 4, f"{tick:.2f}", text_anchor="end", class_="axis"))
    for turn in mediated:
        x = LEFT + STEP * (turn.number - first)
        parts.append(line(x, top, x, top + plot_height, class_="mediator"))
    for index, person in enumerate(people):
        mine = [t for t in spoken if t.role == person]
        points = [
            (LEFT + STEP * (t.number - first), top + plot_height * (1 - max(0.0, min(1.0, t.confidence)))) for t in mine
        ]
        path = " ".join(f"{x:.0f},{y:.0f}" for x, y in points)
        parts.append(el("polyline", {"points": path, "fill": "none", "stroke": colour(index), "stroke_width": 2}))
        for (x, y), turn in zip(points, mine, strict=True):
            tip = el("title", None, _tip(turn))
            if turn.signal == "propose":
                parts.append(el("circle", {"cx": x, "cy": y, "r": 10, "fill": "none", "stroke": colour(index)}))
            parts.append(el("circle", {"cx": x, "cy": y, "r": 7, "fill": colour(index)}, tip))
            mark = SIGNAL_MARKS.get(turn.signal, "?")
            parts.append(text(x, y + 4, mark, text_anchor="middle", class_="mark"))
    for (at, name), lane in zip(names, lane_of, strict=True):
        parts.append(text(at, TOP + LANE * lane - 4, name, text_anchor="middle", class_="axis"))
        parts.append(line(at, TOP + LANE * lane, at, top - 2, class_="leader"))
    parts += axis(range(first, turns[-1].number + 1), top + plot_height + 22)
    parts += key_parts
    parts += legend(named, bottom + LINE * key_lines, width - 10)
    return figure(width, height, "confidence of each participant by turn, with its signal", parts)


def _proposal_lanes(
    proposals: Sequence[AgoraTurn], first: int, width: float
) -> tuple[list[tuple[float, str]], list[int]]:
    """Each proposal's name at its turn's column (kept inside the figure), and the lane above the plot it takes."""
    names: list[tuple[float, str]] = []
    for turn in proposals:
        name = fit(turn.proposal_id or "proposal", 160)
        half = text_width(name) / 2
        x = max(LEFT - 40 + half, min(width - 10 - half, LEFT + STEP * (turn.number - first)))
        names.append((x, name))
    return names, lanes([(x - text_width(name) / 2, text_width(name)) for x, name in names])


def _tip(turn: AgoraTurn) -> str:
    target = f" → {turn.target}" if turn.target else ""
    proposal = f" ({turn.proposal_id})" if turn.proposal_id else ""
    return f"turn {turn.number} · {turn.role} · {turn.signal}{proposal}{target} · confidence {turn.confidence:g}"


def panels(target: Path, document: str) -> list[Panel]:
    parsed, _ = record.parse(document, str(target))
    if parsed is None:
        return []
    turns, title = latest(parsed.turns, "Confidence, signals and proposals")
    svg = confidence(turns)
    return [Panel(title, svg)] if svg is not None else []

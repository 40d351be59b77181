"""The Agora's panel in the viewer: each drone's confidence per turn, marked with its signal."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from moot.plugin import Panel
from moot.protocols.agora import record
from moot.protocols.agora.machine import MEDIATOR, AgoraTurn
from moot.web.plots import LEFT, STEP, TOP, axis, latest, legend, order
from moot.web.svg import colour, el, figure, line, short, text

SIGNAL_MARKS = {"propose": "P", "counter": "C", "approve": "A", "no-change": "N", "defer": "D"}


def confidence(turns: Sequence[AgoraTurn]) -> Markup | None:
    """Each participant's confidence per turn, every point marked with its signal; proposals are ringed."""
    spoken = [t for t in turns if t.role != MEDIATOR]
    if not spoken:
        return None
    people = order(t.role for t in spoken)
    first = turns[0].number
    plot_height = 150
    width = max(LEFT + STEP * (turns[-1].number - first + 1) + 20, LEFT + 460)
    height = TOP + plot_height + 64
    parts: list[Markup] = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = TOP + plot_height * (1 - tick)
        parts.append(line(LEFT - 6, y, width - 10, y, class_="grid"))
        parts.append(text(LEFT - 10, y + 4, f"{tick:.2f}", text_anchor="end", class_="axis"))
    parts.append(text(12, TOP - 14, "confidence", class_="axis"))
    for index, person in enumerate(people):
        mine = [t for t in spoken if t.role == person]
        points = [
            (LEFT + STEP * (t.number - first), TOP + plot_height * (1 - max(0.0, min(1.0, t.confidence)))) for t in mine
        ]
        path = " ".join(f"{x:.0f},{y:.0f}" for x, y in points)
        parts.append(el("polyline", {"points": path, "fill": "none", "stroke": colour(index), "stroke_width": 2}))
        for (x, y), turn in zip(points, mine, strict=True):
            tip = el("title", None, _tip(turn))
            if turn.signal == "propose":
                parts.append(el("circle", {"cx": x, "cy": y, "r": 10, "fill": "none", "stroke": colour(index)}))
                parts.append(
                    text(x, y - 14, short(turn.proposal_id or "proposal", 22), text_anchor="middle", class_="axis")
                )
            parts.append(el("circle", {"cx": x, "cy": y, "r": 7, "fill": colour(index)}, tip))
            mark = SIGNAL_MARKS.get(turn.signal, "?")
            parts.append(text(x, y + 4, mark, text_anchor="middle", class_="mark"))
    mediated = [t for t in turns if t.role == MEDIATOR]
    for turn in mediated:
        x = LEFT + STEP * (turn.number - first)
        parts.append(line(x, TOP, x, TOP + plot_height, class_="mediator"))
    parts += axis(range(first, turns[-1].number + 1), TOP + plot_height + 22)
    key = "  ".join(f"{mark} {signal}" for signal, mark in SIGNAL_MARKS.items()) + "  · ringed: a proposal"
    parts.append(text(LEFT, TOP + plot_height + 40, key, class_="axis"))
    parts += legend(people + ([MEDIATOR] if mediated else []), height - 6)
    return figure(width, height, "confidence of each participant by turn, with its signal", parts)


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

"""The critique loop's panel in the viewer: each role's status in each round."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from moot.plugin import Panel
from moot.protocols.critique import record
from moot.protocols.critique.machine import CritiqueTurn
from moot.web.plots import LABEL_ROOM, LEFT, LINE, ROW, STEP, TOP, axis, fit, key, latest, order
from moot.web.svg import el, figure, text

STATUS_COLOURS = {"AWAITING": "#56b4e9", "PROPOSING_DONE": "#e69f00", "DONE": "#009e73", "STUCK": "#d55e00"}


def rounds_and_statuses(turns: Sequence[CritiqueTurn]) -> Markup | None:
    """Each role's status in each round."""
    if not turns:
        return None
    roles = order(t.role for t in turns)
    rounds = sorted({t.round for t in turns})
    width = max(LEFT + STEP * len(rounds) + 20, LEFT + 320)
    marks, lines = key([f"{name[:1]} {name}" for name in STATUS_COLOURS], TOP + ROW * len(roles) + 22, width - 10)
    height = TOP + ROW * len(roles) + 14 + LINE * lines
    parts: list[Markup] = []
    for row, role in enumerate(roles):
        parts.append(text(LEFT - 24, TOP + ROW * row + 4, fit(role, LABEL_ROOM - 14), text_anchor="end", class_="axis"))
    for turn in turns:
        x = LEFT + STEP * rounds.index(turn.round)
        y = TOP + ROW * roles.index(turn.role)
        status = str(turn.status)
        tip = el("title", None, f"round {turn.round} · {turn.role} · {status}")
        box = {"x": x - 18, "y": y - 10, "width": 36, "height": 20, "rx": 4, "fill": STATUS_COLOURS.get(status, "#999")}
        parts.append(el("rect", box, tip))
        parts.append(text(x, y + 4, status[:1], text_anchor="middle", class_="mark"))
    parts += axis(rounds, TOP + ROW * len(roles) + 2, label="round")
    parts += marks
    return figure(width, height, "status of each role by round", parts)


def panels(target: Path, document: str) -> list[Panel]:
    parsed, _ = record.parse(document, str(target))
    if parsed is None:
        return []
    turns, title = latest(parsed.turns, "Rounds and statuses")
    svg = rounds_and_statuses(turns)
    return [Panel(title, svg)] if svg is not None else []

"""Drawing helpers for a protocol's view (``Protocol.view``): the layout every built-in plot uses, on top of
:mod:`moot.web.svg`, which escapes every text. A plugin's view may use them too.

A plot draws one column per turn from :data:`LEFT`, :data:`STEP` apart, rows :data:`ROW` apart below
:data:`TOP`; it shows at most :data:`PLOT_TURNS` turns of a longer record (:func:`latest`) and says so in
its title.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from markupsafe import Markup

from moot.web.svg import colour, el, short, text

T = TypeVar("T")

LEFT = 150  # room for the row labels
STEP = 46  # horizontal distance between two turns
ROW = 28
TOP = 34
PLOT_TURNS = 120


def order(names: Iterable[str]) -> list[str]:
    """Names in order of first appearance, once each."""
    return list(dict.fromkeys(names))


def legend(names: Sequence[str], y: float) -> list[Markup]:
    """A dot in each name's colour (:func:`moot.web.svg.colour` of its index) and the name, in a row at ``y``."""
    parts: list[Markup] = []
    x = LEFT
    for index, name in enumerate(names):
        parts.append(el("circle", {"cx": x, "cy": y - 4, "r": 5, "fill": colour(index)}))
        parts.append(text(x + 9, y, short(name), class_="legend"))
        x += 20 + 8 * min(len(name), 18)
    return parts


def axis(ticks: Iterable[object], y: float, label: str = "turn") -> list[Markup]:
    """The labels under the columns, one every ``STEP`` from ``LEFT``."""
    parts = [text(LEFT - 10, y, label, text_anchor="end", class_="axis")]
    parts += [text(LEFT + STEP * i, y, str(tick), text_anchor="middle", class_="axis") for i, tick in enumerate(ticks)]
    return parts


def latest(turns: Sequence[T], title: str, first: bool = False) -> tuple[Sequence[T], str]:
    """At most :data:`PLOT_TURNS` of ``turns`` (the latest, or the ``first``), and the title saying which."""
    if len(turns) <= PLOT_TURNS:
        return turns, title
    which = "first" if first else "latest"
    shown = turns[:PLOT_TURNS] if first else turns[-PLOT_TURNS:]
    return shown, f"{title} (the {which} {PLOT_TURNS} of {len(turns):,} turns)"

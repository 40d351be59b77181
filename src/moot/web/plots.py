"""Drawing helpers for a protocol's view (``Protocol.view``): the layout every built-in plot uses, on top of
:mod:`moot.web.svg`, which escapes every text. A plugin's view may use them too.

A plot draws one column per turn from :data:`LEFT`, :data:`STEP` apart, rows :data:`ROW` apart below
:data:`TOP`; it shows at most :data:`PLOT_TURNS` turns of a longer record (:func:`latest`) and says so in
its title.

Labels never overlap: the page cannot measure a text before it is drawn, so :func:`text_width` estimates it from
the widest common sans-serif font (DejaVu Sans, what a Linux browser falls back to), a label is cut to the room it
has (:func:`fit`), and labels that share a line are laid out one after another and wrapped (:func:`flow`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from typing import TypeVar

from markupsafe import Markup

from moot.web.svg import colour, el, text

T = TypeVar("T")

LEFT = 150  # room for the row labels
STEP = 46  # horizontal distance between two turns
ROW = 28
TOP = 34
PLOT_TURNS = 120
FONT = 11  # px of a plot's axis and legend labels (style.css)
LABEL_ROOM = LEFT - 20  # the widest a row label may be, left of the plot
GAP = 14  # px between two labels on one line
LINE = 16  # px between two lines of a legend or key

# Advance widths in em of DejaVu Sans, rounded up: a little wider than most fonts draw, so that an estimate errs
# on the side of room.
_NARROW = {"i": 0.3, "j": 0.3, "l": 0.3, "f": 0.38, "t": 0.4, "r": 0.42, " ": 0.32, ".": 0.32, ",": 0.32}
_WIDE = {"m": 0.98, "w": 0.83, "M": 0.87, "W": 1.0, "—": 1.0, "…": 1.0}


def text_width(value: str, size: float = FONT) -> float:
    """The width in px that ``value`` takes at ``size`` px, estimated (see the module docstring)."""
    em = 0.0
    for char in value:
        if char in _NARROW or char in _WIDE:
            em += _NARROW.get(char) or _WIDE[char]
        elif unicodedata.east_asian_width(char) in "WF":
            em += 1.0
        elif unicodedata.combining(char):
            continue
        else:
            em += 0.78 if char.isupper() else 0.65
    return em * size


def fit(value: str, room: float, size: float = FONT) -> str:
    """``value``, cut with an ellipsis to fit ``room`` px; the full text stays in the transcript and the tooltip."""
    if text_width(value, size) <= room:
        return value
    kept = value
    while kept and text_width(kept + "…", size) > room:
        kept = kept[:-1]
    return kept + "…" if kept else ""


def flow(widths: Sequence[float], left: float, right: float, gap: float = GAP) -> list[tuple[float, int]]:
    """Where each of labels ``widths`` wide goes: one after another from ``left``, a new line (numbered from 0)
    when one would pass ``right``."""
    placed: list[tuple[float, int]] = []
    x, line = left, 0
    for width in widths:
        if x > left and x + width > right:
            x, line = left, line + 1
        placed.append((x, line))
        x += width + gap
    return placed


def lanes(spans: Sequence[tuple[float, float]], gap: float = GAP) -> list[int]:
    """A lane (numbered from 0) for each label given as (left, width), sorted by left edge: the first lane where it
    overlaps none of the labels already there."""
    ends: list[float] = []  # the right edge of the last label in each lane
    chosen: list[int] = []
    for left, width in spans:
        lane = next((i for i, end in enumerate(ends) if end + gap <= left), len(ends))
        if lane == len(ends):
            ends.append(left + width)
        else:
            ends[lane] = left + width
        chosen.append(lane)
    return chosen


def order(names: Iterable[str]) -> list[str]:
    """Names in order of first appearance, once each."""
    return list(dict.fromkeys(names))


def _legend_items(names: Sequence[str], right: float | None) -> tuple[list[str], list[tuple[float, int]]]:
    shown = [fit(name, (right or LEFT + 400) - LEFT - 12) for name in names]
    widths = [12 + text_width(name) for name in shown]
    return shown, flow(widths, LEFT, right if right is not None else float("inf"))


def legend(names: Sequence[str], y: float, right: float | None = None) -> list[Markup]:
    """A dot in each name's colour (:func:`moot.web.svg.colour` of its index) and the name, from :data:`LEFT` at
    ``y``, wrapped onto more lines (:data:`LINE` apart) before ``right`` (the figure's width less a margin)."""
    parts: list[Markup] = []
    shown, placed = _legend_items(names, right)
    for index, (name, (x, line)) in enumerate(zip(shown, placed, strict=True)):
        parts.append(el("circle", {"cx": x + 4, "cy": y + LINE * line - 4, "r": 5, "fill": colour(index)}))
        parts.append(text(x + 12, y + LINE * line, name, class_="legend"))
    return parts


def legend_lines(names: Sequence[str], right: float) -> int:
    """How many lines :func:`legend` takes for ``names`` before ``right``."""
    _, placed = _legend_items(names, right)
    return placed[-1][1] + 1 if placed else 0


def key(items: Sequence[str], y: float, right: float) -> tuple[list[Markup], int]:
    """Plain labels (a plot's key) from :data:`LEFT` at ``y``, wrapped before ``right``; and the lines taken."""
    placed = flow([text_width(item) for item in items], LEFT, right)
    parts = [text(x, y + LINE * line, item, class_="axis") for item, (x, line) in zip(items, placed, strict=True)]
    return parts, (placed[-1][1] + 1 if placed else 0)


def axis(ticks: Iterable[object], y: float, label: str = "turn") -> list[Markup]:
    """The labels under the columns, one every ``STEP`` from ``LEFT``, and the axis's name left of them."""
    parts = [text(LEFT - STEP / 2, y, label, text_anchor="end", class_="axis")]
    parts += [
        text(LEFT + STEP * i, y, fit(str(tick), STEP - 6), text_anchor="middle", class_="axis")
        for i, tick in enumerate(ticks)
    ]
    return parts


def latest(turns: Sequence[T], title: str, first: bool = False) -> tuple[Sequence[T], str]:
    """At most :data:`PLOT_TURNS` of ``turns`` (the latest, or the ``first``), and the title saying which."""
    if len(turns) <= PLOT_TURNS:
        return turns, title
    which = "first" if first else "latest"
    shown = turns[:PLOT_TURNS] if first else turns[-PLOT_TURNS:]
    return shown, f"{title} (the {which} {PLOT_TURNS} of {len(turns):,} turns)"


__all__ = [
    "FONT",
    "GAP",
    "LABEL_ROOM",
    "LEFT",
    "LINE",
    "PLOT_TURNS",
    "ROW",
    "STEP",
    "TOP",
    "axis",
    "fit",
    "flow",
    "key",
    "lanes",
    "latest",
    "legend",
    "legend_lines",
    "order",
    "text_width",
]

"""Estimate's panels in the viewer: each estimator's estimate round by round, and each round's median."""

from __future__ import annotations

import statistics
from pathlib import Path

from markupsafe import Markup

from moot.plugin import Panel, plots, svg
from moot_estimate.protocol import Estimate, number
from moot_estimate.record import parse

HEIGHT = 120  # px between the lowest and the highest estimate


def estimates_plot(names: tuple[str, ...], estimates: list[Estimate]) -> Markup:
    """One line per estimator through its estimates, round by round; the values' range on the left."""
    rounds = sorted({e.round for e in estimates})
    low, high = min(e.value for e in estimates), max(e.value for e in estimates)
    left, bottom = plots.LEFT, plots.TOP + HEIGHT
    width = max(left + plots.STEP * len(rounds) + 20, left + 320)

    def x(round_: int) -> float:
        return left + plots.STEP * rounds.index(round_)

    def y(value: float) -> float:
        return bottom - (value - low) / ((high - low) or 1) * HEIGHT

    room = plots.LABEL_ROOM - 14
    parts = [
        svg.text(left - 24, y(value) + 4, plots.fit(number(value), room), text_anchor="end", class_="axis")
        for value in {low, high}
    ]
    for index, name in enumerate(names):
        own = [e for e in estimates if e.estimator == name]
        points = " ".join(f"{x(e.round):.1f},{y(e.value):.1f}" for e in own)
        line = {"points": points, "fill": "none", "stroke": svg.colour(index), "stroke-width": 2}
        parts.append(svg.el("polyline", line))
        for e in own:
            tip = svg.el("title", None, f"round {e.round} · {name} · {number(e.value)}: {e.reason}")
            circle = {"cx": x(e.round), "cy": f"{y(e.value):.1f}", "r": 5, "fill": svg.colour(index)}
            parts.append(svg.el("circle", circle, tip))
    parts += plots.axis(rounds, bottom + plots.ROW, label="round")
    parts += plots.legend(names, bottom + 2 * plots.ROW, width - 10)
    return svg.figure(width, bottom + 2 * plots.ROW + 14, "each estimator's estimate by round", parts)


def panels(target: Path, document: str) -> list[Panel]:
    parsed = parse(document)
    if parsed.config is None or not parsed.estimates:
        return []
    medians = [
        (f"round {r}", number(statistics.median(e.value for e in parsed.estimates if e.round == r)))
        for r in sorted({e.round for e in parsed.estimates})
    ]
    return [
        Panel("Estimates by round", estimates_plot(parsed.config.estimators, parsed.estimates)),
        Panel("Median of each round", rows=medians),
    ]

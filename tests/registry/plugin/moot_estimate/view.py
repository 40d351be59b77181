"""Estimate's panels in the viewer: each estimator's estimate round by round, and each round's median."""

from __future__ import annotations

import statistics
from pathlib import Path

from markupsafe import Markup

from moot.plugin import Panel
from moot.web.plots import LABEL_ROOM, LEFT, ROW, STEP, TOP, axis, fit, legend
from moot.web.svg import colour, el, figure, text
from moot_estimate.protocol import Estimate, number
from moot_estimate.record import parse

HEIGHT = 120  # px between the lowest and the highest estimate


def estimates_plot(names: tuple[str, ...], estimates: list[Estimate]) -> Markup:
    """One line per estimator through its estimates, round by round; the values' range on the left."""
    rounds = sorted({e.round for e in estimates})
    low, high = min(e.value for e in estimates), max(e.value for e in estimates)
    width = max(LEFT + STEP * len(rounds) + 20, LEFT + 320)

    def y(value: float) -> float:
        return TOP + HEIGHT - (value - low) / ((high - low) or 1) * HEIGHT

    parts = [
        text(LEFT - 24, y(value) + 4, fit(number(value), LABEL_ROOM - 14), text_anchor="end", class_="axis")
        for value in {low, high}
    ]
    for index, name in enumerate(names):
        own = [e for e in estimates if e.estimator == name]
        points = " ".join(f"{LEFT + STEP * rounds.index(e.round):.1f},{y(e.value):.1f}" for e in own)
        parts.append(el("polyline", {"points": points, "fill": "none", "stroke": colour(index), "stroke-width": 2}))
        for e in own:
            tip = el("title", None, f"round {e.round} · {name} · {number(e.value)}: {e.reason}")
            circle = {"cx": LEFT + STEP * rounds.index(e.round), "cy": f"{y(e.value):.1f}", "r": 5}
            parts.append(el("circle", {**circle, "fill": colour(index)}, tip))
    parts += axis(rounds, TOP + HEIGHT + ROW, label="round")
    parts += legend(names, TOP + HEIGHT + 2 * ROW, width - 10)
    return figure(width, TOP + HEIGHT + 2 * ROW + 14, "each estimator's estimate by round", parts)


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

"""What every benchmark shares: the result shape, statistics, and timing helpers.

A benchmark module exposes ``run(quick: bool) -> BenchResult``. Every figure it reports is a median of
several runs and is put beside a baseline measured in the same run (a peer, or the plain interpreter):
these machines are noisy, so only ratios carry over from one run to another.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Table:
    """One table of RESULTS.md: a title, column names, rows of cells, and notes printed under it."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)


@dataclass
class BenchResult:
    """What one benchmark found: tables for people, ``data`` (JSON-able) for results.json.

    ``summary`` is one sentence for the README-style overview. ``losses`` names each figure where moot
    does worse than its peer or baseline, with the cause: RESULTS.md lists them plainly.
    """

    name: str
    summary: str
    tables: list[Table]
    data: dict[str, Any]
    losses: list[str] = field(default_factory=list)
    skipped: str | None = None  # why the benchmark could not run here (then tables may be empty)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0..100) by nearest rank, as latency reports usually mean it."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return float(ordered[rank - 1])


def ratio(value: float, baseline: float) -> float:
    """``value / baseline``: above 1 means more (slower, bigger) than the baseline."""
    return value / baseline if baseline else float("inf")


def time_runs(function: Callable[[], Any], runs: int) -> list[float]:
    """Wall seconds of ``runs`` calls of ``function``, one figure per call."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return samples


def fmt(value: float, digits: int = 2) -> str:
    """A number for a table cell: thousands separated, ``digits`` after the point."""
    return f"{value:,.{digits}f}"


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}×"

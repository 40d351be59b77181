"""Shared by the reliability suite (a plain module, not collected).

The suite has two sizes. The quick size runs in CI with every ``pytest`` run. The long size is the one the
issue's figures call for (≥100 kills, ≥10,000 fuzz inputs, 10,000 soak debates, 16 processes); run it with

    MOOT_RELIABILITY=long .venv/bin/python -m pytest -m reliability tests/reliability -q

Each long test writes what it measured to ``bench/reliability/NAME.json``; ``python -m bench`` puts those
figures into bench/RESULTS.md.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

LONG = os.environ.get("MOOT_RELIABILITY") == "long"
REPO = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO / "bench" / "reliability"

T = TypeVar("T")


def scale(quick: T, long: T) -> T:
    """The quick figure in CI, the long one under MOOT_RELIABILITY=long."""
    return long if LONG else quick


def record_result(name: str, data: dict[str, Any]) -> None:
    """Keep a long run's figures for RESULTS.md; quick runs leave no file behind."""
    if not LONG:
        return
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    row = {
        "name": name,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": sys.version.split()[0],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "command": "MOOT_RELIABILITY=long .venv/bin/python -m pytest -m reliability tests/reliability -q",
        **data,
    }
    (RESULTS_DIR / f"{name}.json").write_text(json.dumps(row, indent=2) + "\n", encoding="utf-8")

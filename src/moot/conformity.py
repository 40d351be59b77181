"""The conformity of a record on disk: the positions its protocol reads out of it (``Analysis.positions``),
analysed by :mod:`moot.metrics`.

``moot show --json``, ``moot run … --json``, the viewer and signed receipts all report this one JSON object:
``{kind: Conformity.to_json()}``, ``{}`` for a protocol that records no positions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from moot import registry
from moot.detect import detect
from moot.metrics import Conformity, conformity


def record_analyses(protocol: str, target: Path) -> dict[str, Conformity]:
    """The conformity analyses of a record, by what the position is ({} for a protocol without positions)."""
    analysis = registry.get(protocol).analysis
    positions = analysis.load().positions if analysis is not None else None
    if positions is None:
        return {}
    return {found.kind: conformity(found.stated, chairman=found.chairman) for found in positions(target)}


def conformity_json(path: Path) -> dict[str, Any]:
    """The record at ``path`` (a file or a meeting directory) analysed, as JSON."""
    protocol, target, _ = detect(path)
    if protocol is None:
        return {}
    return {what: analysis.to_json() for what, analysis in record_analyses(protocol, target).items()}


def summary_line(what: str, data: dict[str, Any]) -> str:
    """One line for a terminal from an analysis's JSON."""
    line = (
        f"{what}: {data['total_changes']} position change(s), {data['toward_majority']} toward the majority"
        + ("" if data.get("toward_chairman") is None else f", {data['toward_chairman']} toward the chairman")
        + f"; {data['initial_distinct']} distinct position(s) at the start, {data['final_distinct']} at the end"
    )
    return line

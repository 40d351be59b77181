"""The records of a work root: where they are, and one row of facts per record (``moot ls``, the viewer, MCP)."""

from __future__ import annotations

import contextlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from moot import registry
from moot.agents.pricing import attempt_tokens
from moot.core.chain import chain_path
from moot.core.files import first_line
from moot.core.run_state import run_state_path
from moot.detect import check_path, detect
from moot.engine.loop import usage_path
from moot.errors import PathRefused, UserError
from moot.paths import record_place


def record_root(record: Path) -> Path:
    """The work root of a record: the directory holding its protocol's folder (``debates/``, ``.dialogues/``, …),
    else the record's own directory."""
    absolute = Path(os.path.abspath(record))
    folders = registry.folders()
    return next((parent.parent for parent in absolute.parents if parent.name in folders), absolute.parent)


def find_records(root: Path, skipped: list[str] | None = None) -> list[Path]:
    """Every record in ``root``'s protocol folders (files, or directories for a protocol with a marker).

    A folder or a record that is a symbolic link (moot reads and writes no record through one, :mod:`moot.paths`),
    or a folder that cannot be listed, is left out; ``skipped``, when given, gets one sentence for each.
    """
    found: list[Path] = []
    notes: list[str] = [] if skipped is None else skipped
    for plugin in registry.protocols().values():
        directory = root / plugin.folder
        try:
            record_place(root, plugin.folder)
            entries = sorted(directory.iterdir()) if directory.is_dir() else []
        except PathRefused as refusal:
            notes.append(str(refusal))
            continue
        except OSError as exc:
            notes.append(f"cannot list {directory} ({exc.strerror or exc}); check its permissions.")
            continue
        for path in entries:
            if path.name.startswith("."):
                continue
            try:
                record_place(root, path.relative_to(root))
            except PathRefused as refusal:
                notes.append(str(refusal))
                continue
            folder_record = plugin.marker is not None and path.is_dir() and (path / plugin.marker).exists()
            file_record = plugin.title is not None and path.is_file() and path.suffix == ".md"
            if folder_record or file_record:
                found.append(path)
    return found


def read_attempts(record: Path) -> list[dict[str, Any]]:
    """The attempts logged for ``record``, oldest first; a torn last line is skipped."""
    path = usage_path(record)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the attempt log {path}: {exc}; check its permissions.") from exc
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def last_change(path: Path) -> float:
    """When ``path`` last changed (seconds since the epoch), counting what moot keeps beside it (the usage log,
    the run state, the digest chain); for a directory record, its newest file."""
    if path.is_dir():
        try:
            files = [path, *(p for p in path.iterdir() if p.is_file())]
        except OSError:
            files = [path]
    else:
        files = [path, usage_path(path), run_state_path(path), chain_path(path)]
    stamps = [0.0]
    for file in files:
        with contextlib.suppress(OSError):  # absent, or removed while looked at
            stamps.append(file.stat().st_mtime)
    return max(stamps)


def record_topic(protocol: str | None, path: Path) -> str | None:
    """The topic a record states on its first line (``# Title: topic``), or None when it cannot be read."""
    if protocol is None:
        return None
    shown = registry.get(protocol).record.load().documents
    if shown is not None:
        found = shown(path)
        text = found[0][1] if found else ""
    else:
        try:
            with path.open(encoding="utf-8", errors="replace") as file:
                text = file.readline()
        except OSError:
            return None
    first = first_line(text)
    return first.lstrip("#").partition(":")[2].strip() or None


def record_bytes(record: Path) -> int:
    """The bytes a look at ``record`` reads: its file and attempt log, or a meeting's files."""
    files = [p for p in record.iterdir() if p.is_file()] if record.is_dir() else [record, usage_path(record)]
    total = 0
    for file in files:
        try:
            total += file.stat().st_size
        except OSError:
            continue  # absent (no attempt log), or removed meanwhile: the reading itself says so
    return total


def unchecked_text(path: Path, size: int, limit: int) -> str:
    """Why a record past the viewer's bound was shown without its check, and how to check it."""
    return (
        f"{path.name} and its attempt log hold {size / 2**20:.1f} MiB, more than the {limit / 2**20:g} MiB the "
        f"viewer checks; run moot check {path.name} for its verdict."
    )


def record_row(path: Path, *, check_limit: int | None = None) -> dict[str, Any]:
    """One record's facts: protocol, topic, verdict, status, outcome, turns, tokens, last change (UTC) and, for a
    record that cannot be read (or whose attempt log cannot), the problem; never raises for one record's files.

    A record of more than ``check_limit`` bytes (with its attempt log) is not read beyond its protocol and topic:
    its verdict is ``unchecked`` and its problem says how to check it."""
    if check_limit is not None and (size := record_bytes(path)) > check_limit:
        protocol, target, _ = detect(path)
        changed = last_change(target)
        return {
            "path": str(path),
            "protocol": protocol,
            "topic": record_topic(protocol, target),
            "verdict": "unchecked",
            **dict.fromkeys(("status", "outcome", "run_halted", "turns", "tokens")),
            "changed": datetime.fromtimestamp(changed, UTC).isoformat(timespec="seconds") if changed else None,
            "problem": unchecked_text(path, size, check_limit),
        }
    report = check_path(path)
    summary = report.summary
    outcome = summary.outcome if summary is not None else None
    halted = summary.detail.get("run_halted") if summary is not None else None
    try:
        attempts, problem = read_attempts(path), None
    except UserError as unreadable:  # one record's log never hides the others (moot ls, list_debates)
        attempts, problem = [], str(unreadable)
    if problem is None and summary is None and report.errors:
        problem = report.errors[0].message
    tokens = sum(attempt_tokens(row) for row in attempts)
    changed = last_change(path)
    return {
        "path": str(path),
        "protocol": report.protocol,
        "topic": record_topic(report.protocol, path),
        "verdict": report.verdict,
        "status": summary.status if summary is not None else None,
        "outcome": outcome.name if outcome is not None else None,
        "run_halted": halted.get("cause") if isinstance(halted, dict) else None,
        "turns": summary.turns if summary is not None else None,
        "tokens": tokens,
        "changed": datetime.fromtimestamp(changed, UTC).isoformat(timespec="seconds") if changed else None,
        "problem": problem,
    }

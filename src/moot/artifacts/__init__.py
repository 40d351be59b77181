"""The record formats of the four protocols, and the detection that ``moot check`` starts from.

Each format module (``critique``, ``duel``, ``agora``, ``roundtable``) exposes ``check(path) ->
CheckReport``; this module decides which one a path belongs to.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol

from moot.artifacts.base import FILE_RULES, CheckReport, read_text, unreadable
from moot.artifacts.run_state import current_halt

# First line of a file record -> the protocol that wrote it.
TITLE_PREFIXES = {
    "# Dialogue:": "critique",
    "# Socratic Duel:": "duel",
    "# Agora Debate:": "agora",
}


class Format(Protocol):
    def check(self, path: Path) -> CheckReport: ...


def format_module(protocol: str) -> Format:
    module: Format = importlib.import_module(f"moot.artifacts.{protocol}")
    return module


def meeting_directory(path: Path) -> Path | None:
    """The roundtable meeting a path names: the directory itself, or a file inside it."""
    directory = path if path.is_dir() else path.parent
    return directory if (directory / "turn.json").exists() else None


def detect(path: Path) -> tuple[str | None, Path, CheckReport | None]:
    """(protocol, path to check, or a report saying why the path cannot be checked)."""
    if not path.exists() and not path.is_symlink():
        report = unreadable(
            path,
            [FILE_RULES.violation("FILE_UNREADABLE", f"{path} does not exist; check the path.").at(file=str(path))],
        )
        return None, path, report
    meeting = meeting_directory(path)
    if meeting is not None and (path.is_dir() or path.suffix in {".md", ".json"}):
        return "roundtable", meeting, None
    if path.is_dir():
        report = unreadable(
            path,
            [
                FILE_RULES.violation(
                    "NOT_A_MOOT_ARTIFACT",
                    f"{path} is a directory without turn.json; point moot check at a record file or a meeting directory.",
                ).at(file=str(path))
            ],
        )
        return None, path, report
    text, problems = read_text(path)
    if text is None:
        return None, path, unreadable(path, problems)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    for prefix, protocol in TITLE_PREFIXES.items():
        if first.startswith(prefix):
            return protocol, path, None
    report = unreadable(
        path,
        [
            FILE_RULES.violation(
                "NOT_A_MOOT_ARTIFACT",
                f"{path} does not start with a moot title ({', '.join(TITLE_PREFIXES)}) and is not in a meeting directory.",
            ).at(file=str(path), line=1)
        ],
    )
    return None, path, report


def check_path(path: Path) -> CheckReport:
    """Detect the protocol of ``path`` and replay its whole history. Never raises on bad input."""
    protocol, target, report = detect(path)
    if report is not None or protocol is None:
        assert report is not None
        return report
    report = format_module(protocol).check(target)
    summary = report.summary
    if summary is not None and summary.outcome is None:
        # A run moot halted without a protocol outcome is reported beside the state, never as an outcome.
        halted = current_halt(target, summary.turns)
        if halted is not None:
            detail = {**summary.detail, "run_halted": halted}
            report = report.model_copy(update={"summary": summary.model_copy(update={"detail": detail})})
    return report

"""The record formats, and the detection that ``moot check`` starts from.

Each registered protocol (:mod:`moot.registry`) names its record format module, which exposes
``check(path) -> CheckReport``, and says how to recognise its records; this module decides which one a path
belongs to.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from moot import registry
from moot.core.files import FILE_RULES, MAX_ARTIFACT_BYTES, CheckReport, first_line, read_text, unreadable
from moot.core.run_state import current_halt
from moot.core.torn import torn_append
from moot.errors import Violation
from moot.plugin import Protocol

# Files a record directory holds (a roundtable meeting's speeches and turn.json); others are not checked.
DIRECTORY_RECORD_SUFFIXES = frozenset({".md", ".json"})


def record_directory(plugin: Protocol, path: Path) -> Path | None:
    """The directory record of ``plugin`` that ``path`` names (the directory itself, or a file inside it)."""
    if plugin.marker is None:
        return None
    directory = path if path.is_dir() else path.parent
    if not (directory / plugin.marker).exists():
        return None
    return directory if path.is_dir() or path.suffix in DIRECTORY_RECORD_SUFFIXES else None


def holds_file(plugin: Protocol, first_line: str) -> bool:
    """Whether a file whose first non-blank line is ``first_line`` is one of ``plugin``'s records."""
    return plugin.title is not None and first_line.startswith(plugin.title)


def documents(protocol: str, target: Path) -> list[tuple[str, str]]:
    """(title, markdown) pairs to show, in reading order: the protocol's own choice, else the record file."""
    shown = registry.get(protocol).record.load().documents
    if shown is not None:
        return shown(target)
    text, _ = read_text(target)
    return [(target.name, text or "")]


def detect(path: Path) -> tuple[str | None, Path, CheckReport | None]:
    """(protocol, path to check, or a report saying why the path cannot be checked)."""
    if not path.exists() and not path.is_symlink():
        report = unreadable(
            path,
            [FILE_RULES.violation("FILE_UNREADABLE", f"{path} does not exist; check the path.").at(file=str(path))],
        )
        return None, path, report
    plugins = registry.protocols().values()
    for plugin in plugins:
        directory = record_directory(plugin, path)
        if directory is not None:
            return plugin.name, directory, None
    if path.is_dir():
        markers = " or ".join(plugin.marker for plugin in plugins if plugin.marker is not None)
        report = unreadable(
            path,
            [
                FILE_RULES.violation(
                    "NOT_A_MOOT_ARTIFACT",
                    f"{path} is a directory without {markers}; point moot check at a record file or a meeting directory.",
                ).at(file=str(path))
            ],
        )
        return None, path, report
    first, problems = _first_line(path)
    if first is None:
        return None, path, unreadable(path, problems)
    for plugin in plugins:
        if holds_file(plugin, first):
            return plugin.name, path, None
    titles = ", ".join(plugin.title for plugin in plugins if plugin.title is not None)
    report = unreadable(
        path,
        [
            FILE_RULES.violation(
                "NOT_A_MOOT_ARTIFACT",
                f"{path} does not start with a moot title ({titles}) and is not in a meeting directory.",
            ).at(file=str(path), line=1)
        ],
    )
    return None, path, report


# Bytes read from the start of a file to find its title; the rest is read only when the head cannot tell.
HEAD_BYTES = 64 * 1024


def _first_line(path: Path) -> tuple[str | None, list[Violation]]:
    """The first non-blank line of the file at ``path`` (a BOM dropped), or why it cannot be read.

    Read from the file's head when it holds that line whole, in valid UTF-8 without NUL: a record may be 16 MiB,
    and decoding all of it only to find its title costs four times that in memory. Anything else is read whole,
    so that what cannot be read is reported as it always is."""
    try:
        if not path.is_symlink() and path.stat().st_size <= MAX_ARTIFACT_BYTES:
            with path.open("rb") as file:
                head = file.read(HEAD_BYTES)
            text = codecs.getincrementaldecoder("utf-8")().decode(head).removeprefix("\ufeff")
            first = first_line(text)
            whole = len(head) < HEAD_BYTES or text.find("\n", text.find(first)) >= 0
            if first and whole and "\x00" not in text:
                return first, []
    except (OSError, UnicodeDecodeError):
        pass  # read_text says why
    whole_text, problems = read_text(path)
    return (first_line(whole_text) if whole_text is not None else None), problems


def check_path(path: Path) -> CheckReport:
    """Detect the protocol of ``path`` and replay its whole history. Never raises on bad input."""
    protocol, target, report = detect(path)
    if report is not None or protocol is None:
        assert report is not None
        return report
    report = registry.get(protocol).record.load().check(target)
    if torn_append(target, report) is not None:
        report = report.model_copy(update={"repairable": True})  # moot resume sets the cut turn aside
    summary = report.summary
    if summary is not None and summary.outcome is None:
        # A run moot halted without a protocol outcome is reported beside the state, never as an outcome.
        halted = current_halt(target, summary.turns)
        if halted is not None:
            detail = {**summary.detail, "run_halted": halted}
            report = report.model_copy(update={"summary": summary.model_copy(update={"detail": detail})})
    return report

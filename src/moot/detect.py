"""The record formats, and the detection that ``moot check`` starts from.

Each registered protocol (:mod:`moot.registry`) names its record format module, which exposes
``check(path) -> CheckReport``, and says how to recognise its records; this module decides which one a path
belongs to.
"""

from __future__ import annotations

from pathlib import Path

from moot import registry
from moot.core.files import FILE_RULES, CheckReport, read_text, unreadable
from moot.core.run_state import current_halt


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
        directory = plugin.record_directory(path)
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
    text, problems = read_text(path)
    if text is None:
        return None, path, unreadable(path, problems)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    for plugin in plugins:
        if plugin.holds_file(first):
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


def check_path(path: Path) -> CheckReport:
    """Detect the protocol of ``path`` and replay its whole history. Never raises on bad input."""
    protocol, target, report = detect(path)
    if report is not None or protocol is None:
        assert report is not None
        return report
    report = registry.get(protocol).check(target)
    summary = report.summary
    if summary is not None and summary.outcome is None:
        # A run moot halted without a protocol outcome is reported beside the state, never as an outcome.
        halted = current_halt(target, summary.turns)
        if halted is not None:
            detail = {**summary.detail, "run_halted": halted}
            report = report.model_copy(update={"summary": summary.model_copy(update={"detail": detail})})
    return report

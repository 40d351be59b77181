"""Quoted excerpts in a Socratic Duel, checked against the source document and supporting files.

Source evidence may quote the source (``\u0060doc.md\u0060 line 12: "the exact words"``). Each quote is
verified when it is in the source document, at or near the cited line (anywhere when no line is
cited).

A supporting file (code, data, another document) is cited *inside* source evidence, after the
source document's own citation, as ``supporting file \u0060PATH\u0060 line N "excerpt"``: the item still
cites the duel's document as the seed requires, and the supporting excerpt is checked against PATH
(absolute, or relative to the work root: the directory holding ``debates/``). Quotes before the first
``supporting file`` are the source document's; each one after it belongs to the file it follows. moot marks a quote it verified by appending `` (verified at PATH:LINE)`` to the support item:
the seed allows any text beside a source reference, so the mark reads as part of the citation.

- ``moot duel append`` refuses a turn with an unverified quote (``CITATION_UNVERIFIED``) and marks
  the verified ones.
- ``moot check`` reports an unverified quote: an error when the item carries moot's mark (moot
  verified it once, so the source or the record changed), a warning otherwise (the seed asks for no
  verification, so another writer's record is only told). When the source document cannot be read
  (a record from another machine), its quotes are not checked.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from moot.core.files import CheckReport, atomic_write_text
from moot.core.grounding import CitationCheck, citation_violations, verified_share
from moot.errors import Severity, Violation
from moot.protocols.duel.machine import Counterpoint, DuelConfig, DuelTurn, Support, cites_source, quoted_excerpts
from moot.sources.collect import SourceFile, read_source_file
from moot.sources.verify import check_in_file

MARK = " (verified at {where})"
_MARK_START = " (verified at "
SUPPORTING = "supporting file"
_SUPPORTING = re.compile(rf"{SUPPORTING} `([^`]+)`", re.IGNORECASE)
DEBATES_FOLDER = "debates"


def supporting_citation(path: str, line: int, text: str) -> str:
    """How moot writes a supporting file's line into source evidence (see the module docstring)."""
    return f'{SUPPORTING} `{path}` line {line} "{text}"'


def supporting_sidecar(record: Path) -> Path:
    """Where ``moot run duel --source`` keeps the supporting files a resumed duel shows again."""
    return record.with_name(f".{record.name}.sources.json")


def write_supporting(record: Path, paths: Sequence[str]) -> None:
    """Keep the supporting files beside the record, by their paths relative to the work root when inside it."""
    kept = [cited_path(os.path.abspath(p), record) for p in paths]
    atomic_write_text(supporting_sidecar(record), json.dumps({"supporting": kept}, indent=2) + "\n")


def read_supporting(record: Path) -> list[str]:
    """The absolute paths of the supporting files of a duel moot runs ([] without any, or when the sidecar is
    unreadable); a relative one (as moot now writes them) is taken from the work root, whatever the current
    directory."""
    try:
        data = json.loads(supporting_sidecar(record).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    paths = data.get("supporting") if isinstance(data, dict) else None
    return [os.path.join(work_root(record), str(p)) for p in paths] if isinstance(paths, list) else []


def cited_path(path: str, record: Path) -> str:
    """How the record cites ``path``: relative to the work root when it lies inside it (so that a record, and
    what is exported from it, names no directory of the machine it was written on), else as given."""
    if not os.path.isabs(path):
        return path
    root = work_root(record)
    for named in (Path(path), Path(os.path.realpath(path))):
        if named.is_relative_to(root) and named != root:
            return named.relative_to(root).as_posix()
    return path


def work_root(record: Path) -> Path:
    """The directory a relative supporting file is read from: the one holding the record's ``debates/``."""
    record = record.resolve()
    return next((p.parent for p in record.parents if p.name == DEBATES_FOLDER), record.parent)


def _excerpts(text: str, source: SourceFile, record: Path) -> Iterator[tuple[SourceFile | None, str, str, int | None]]:
    """(file or None if unreadable, cited path, excerpt, line) of each quote in one item of source evidence."""
    parts = _SUPPORTING.split(text.split(_MARK_START)[0])
    for excerpt, line in quoted_excerpts(parts[0]):
        yield source, source.path, excerpt, line
    for index in range(1, len(parts), 2):
        path, cited = Path(parts[index]), parts[index]
        found = read_source_file(path if path.is_absolute() else work_root(record) / path, work_root(record))
        for excerpt, line in quoted_excerpts(parts[index + 1]):
            yield found, cited, excerpt, line


def _supports(turn: DuelTurn) -> Iterator[tuple[str, str]]:
    """(where, text) of every support item of the turn."""
    for index, point in enumerate(turn.counterpoints, start=1):
        for number, support in enumerate(point.support, start=1):
            yield f"counterpoint {index} support {number}", support.text
    for number, support in enumerate(turn.novel_support, start=1):
        yield f"the novel argument's support {number}", support.text
    for number, text in enumerate(turn.stance_revision_support, start=1):
        yield f"stance revision support {number}", text


def source_file(config: DuelConfig, record: Path) -> SourceFile | None:
    """The duel's source document, read as the record names it (relative paths from the record's folder)."""
    path = Path(config.source_path)
    if not path.is_absolute():
        path = Path(os.path.normpath(record.parent / path))
    found = read_source_file(path, path.parent)
    return None if found is None else SourceFile(path=config.source_path, absolute=found.absolute, text=found.text)


def cites(source: SourceFile, text: str) -> bool:
    """``text`` names the source: as the protocol reads a citation, or by this host's absolute path."""
    return cites_source(text, source.path) or str(source.absolute) in text


def _check(item: SourceFile | None, path: str, excerpt: str, line: int | None, where: str) -> CitationCheck:
    cited = f"{path}:{line}" if line is not None else path
    if item is None:
        return CitationCheck(
            where=where, cited=cited, excerpt=excerpt, verified=False, reason=f"{path} is not a readable text file"
        )
    return check_in_file(item, excerpt, line, where=where, cited=cited)


def quote_checks(turn: DuelTurn, source: SourceFile, record: Path) -> list[tuple[CitationCheck, bool]]:
    """(check, marked by moot) for each quote in the turn's source evidence, supporting files' included."""
    found = []
    for where, text in _supports(turn):
        if not cites(source, text):
            continue  # not source evidence: a URL, a turn, a principle
        marked = _MARK_START in text
        for item, path, excerpt, line in _excerpts(text, source, record):
            found.append((_check(item, path, excerpt, line, where), marked))
    return found


def refusals(turn: DuelTurn, config: DuelConfig, record: Path) -> list[Violation]:
    """What ``moot duel append`` refuses: every unverified quote, as an error located at the turn.

    The tools have checked that the source is readable when the duel was joined; should it vanish
    since, the quotes cannot be checked and the protocol's own rules decide alone.
    """
    source = source_file(config, record)
    checks = [check for check, _ in quote_checks(turn, source, record)] if source is not None else []
    return [v.at(turn=turn.number) for v in citation_violations(checks)]


def marked(turn: DuelTurn, config: DuelConfig, record: Path) -> DuelTurn:
    """The turn with each verified quote's support item marked with where it was found."""
    source = source_file(config, record)
    if source is None:
        return turn

    def mark(text: str) -> str:
        if _MARK_START in text or not cites(source, text):
            return text
        quotes = list(_excerpts(text, source, record))
        if not quotes:
            return text
        checks = [_check(item, path, excerpt, line, "") for item, path, excerpt, line in quotes]
        if not all(check.verified for check in checks):
            return text
        return text + MARK.format(where=", ".join(str(check.found_at) for check in checks))

    def supports(items: list[Support]) -> list[Support]:
        return [item.model_copy(update={"text": mark(item.text)}) for item in items]

    points = [
        Counterpoint(addresses=p.addresses, claim=p.claim, support=supports(p.support)) for p in turn.counterpoints
    ]
    return turn.model_copy(
        update={
            "counterpoints": points,
            "novel_support": supports(turn.novel_support),
            "stance_revision_support": [mark(text) for text in turn.stance_revision_support],
        }
    )


def with_quote_checks(report: CheckReport, record: Path, config: DuelConfig, turns: list[DuelTurn]) -> CheckReport:
    """``report`` with the duel's unverified quotes added, and the verified share per participant."""
    if report.summary is None:
        return report
    source = source_file(config, record)
    if source is None:
        return report  # the source document is not here (another machine's record): nothing to check against
    found: list[Violation] = []
    per_participant: dict[str, list[CitationCheck]] = {}
    for position, turn in enumerate(turns, start=1):
        for check, by_moot in quote_checks(turn, source, record):
            per_participant.setdefault(turn.participant, []).append(check)
            severity = Severity.ERROR if by_moot else Severity.WARNING
            found.extend(v.at(file=str(record), turn=position) for v in citation_violations([check], severity))
    if not per_participant:
        return report
    detail: dict[str, Any] = {
        **report.summary.detail,
        "grounding": {name: verified_share(checks) for name, checks in per_participant.items()},
    }
    return report.model_copy(
        update={
            "violations": [*report.violations, *found],
            "summary": report.summary.model_copy(update={"detail": detail}),
        }
    )

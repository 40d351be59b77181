"""Quoted excerpts in a Socratic Duel, checked against the source document.

Source evidence may quote the source (``\u0060doc.md\u0060 line 12: "the exact words"``). Each quote is
verified when it is in the source document, at or near the cited line (anywhere when no line is
cited). moot marks a quote it verified by appending `` (verified at PATH:LINE)`` to the support item:
the seed allows any text beside a source reference, so the mark reads as part of the citation.

- ``moot duel append`` refuses a turn with an unverified quote (``CITATION_UNVERIFIED``) and marks
  the verified ones.
- ``moot check`` reports an unverified quote: an error when the item carries moot's mark (moot
  verified it once, so the source or the record changed), a warning otherwise (the seed asks for no
  verification, so another writer's record is only told). When the source document cannot be read
  (a record from another machine), its quotes are not checked.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from moot.artifacts.base import CheckReport
from moot.protocols.base import Severity, Violation
from moot.protocols.duel import Counterpoint, DuelConfig, DuelTurn, Support, cites_source, quoted_excerpts
from moot.protocols.grounding import CitationCheck, citation_violations, verified_share
from moot.sources.collect import SourceFile, read_source_file
from moot.sources.verify import check_in_file

MARK = " (verified at {where})"
_MARK_START = " (verified at "


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


def quote_checks(turn: DuelTurn, source: SourceFile) -> list[tuple[CitationCheck, bool]]:
    """(check, marked by moot) for each quote in the turn's source evidence."""
    found = []
    for where, text in _supports(turn):
        if not cites(source, text):
            continue  # not source evidence: a URL, a turn, a principle
        marked = _MARK_START in text
        for excerpt, line in quoted_excerpts(text.split(_MARK_START)[0]):
            cited = f"{source.path}:{line}" if line is not None else source.path
            found.append((check_in_file(source, excerpt, line, where=where, cited=cited), marked))
    return found


def refusals(turn: DuelTurn, config: DuelConfig, record: Path) -> list[Violation]:
    """What ``moot duel append`` refuses: every unverified quote, as an error located at the turn.

    The tools have checked that the source is readable when the duel was joined; should it vanish
    since, the quotes cannot be checked and the protocol's own rules decide alone.
    """
    source = source_file(config, record)
    checks = [check for check, _ in quote_checks(turn, source)] if source is not None else []
    return [v.at(turn=turn.number) for v in citation_violations(checks)]


def marked(turn: DuelTurn, config: DuelConfig, record: Path) -> DuelTurn:
    """The turn with each verified quote's support item marked with where it was found."""
    source = source_file(config, record)
    if source is None:
        return turn

    def mark(text: str) -> str:
        if _MARK_START in text or not cites(source, text):
            return text
        quotes = quoted_excerpts(text)
        if not quotes:
            return text
        checks = [check_in_file(source, excerpt, line, where="", cited="") for excerpt, line in quotes]
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
        for check, by_moot in quote_checks(turn, source):
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

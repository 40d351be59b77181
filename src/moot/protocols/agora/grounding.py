"""``moot check`` on an Agora record's evidence: is each item in the file it cites?

- A record with a ``- Sources:`` line was written by a grounded ``moot run``: every evidence item
  must verify in those sources, at the place its ``Evidence N: verified at path:line`` mark names
  (else at its own ``source``); a failure is an error.
- A record without one (another writer's, or an ungrounded run): an item whose source names a file
  under the work root (``path`` or ``path:line``) is checked there, and a failure is a warning (the
  seed asks for no verification). Other sources ("GOF", a URL) cannot be checked and are left alone.
- Sources that cannot be read (a record from another machine) give one warning, and nothing is checked.

The share of verified items per participant goes into the summary's ``grounding`` detail.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from moot.core.grounding import RULES, CitationCheck, citation_violations, verified_share
from moot.errors import Severity, UserError, Violation
from moot.protocols.agora import PLUGIN as AGORA
from moot.protocols.agora.machine import AgoraTurn
from moot.sources import SourceSet, check_citation, collect_sources
from moot.sources.collect import MAX_FILES, cited_path, read_source_file
from moot.sources.verify import parse_locator

MARK_PREFIX = "verified at "
POOL_SUFFIX = " (from the evidence pool)"


class TurnPart(Protocol):
    @property
    def turn(self) -> AgoraTurn | None: ...

    @property
    def marks(self) -> dict[int, tuple[int, str]]: ...

    def line_of(self, part: str) -> int: ...

    @property
    def line(self) -> int: ...


def work_root(record: Path) -> Path:
    """The directory the record's sources are relative to: the one holding the Agora folder (``.agora/``)."""
    parent = record.resolve().parent
    return parent.parent if parent.name == AGORA.folder else parent


def mark_for(check: CitationCheck) -> str:
    """The record's mark of a verified item: where it was found."""
    return f"{MARK_PREFIX}{check.found_at}{POOL_SUFFIX if check.from_pool else ''}"


def _marked_location(mark: str | None) -> str | None:
    if mark is None or not mark.startswith(MARK_PREFIX):
        return None
    return mark.removeprefix(MARK_PREFIX).removesuffix(POOL_SUFFIX).strip()


def _foreign_sources(root: Path, turns: Sequence[TurnPart]) -> SourceSet:
    """The files under ``root`` that a foreign record's evidence names, read one by one: each name is looked at
    once, and at most as many files are read as a ``--source`` may hold (a record may name thousands)."""
    sources = SourceSet(root=root, given=())
    tried: set[str] = set()
    for part in turns:
        for item in part.turn.evidence if part.turn is not None else ():
            path, _ = parse_locator(item.source)
            if not path or path in tried or len(sources.files) >= MAX_FILES:
                continue
            tried.add(path)
            if not os.path.lexists(os.path.join(root, path)):  # most sources name no file: one lstat each
                continue
            candidate = Path(path) if Path(path).is_absolute() else root / path
            if not sources.find(cited_path(candidate, root)):
                found = read_source_file(candidate, root)
                if found is not None:
                    sources.files.append(found)
    return sources


def check_evidence(
    record: Path, sources: tuple[str, ...], turns: Sequence[TurnPart]
) -> tuple[list[Violation], dict[str, Any]]:
    """(violations located at each item's turn, the grounding detail per role)."""
    root = work_root(record)
    grounded = bool(sources)
    severity = Severity.ERROR if grounded else Severity.WARNING
    found: list[Violation] = []
    try:
        files = collect_sources([root / path for path in sources], root) if grounded else _foreign_sources(root, turns)
    except UserError as exc:  # a record from another machine: say so once, check nothing
        message = f"the record's sources cannot be read ({exc}), so its evidence is not checked; restore them."
        return [RULES.violation("CITATION_UNVERIFIED", message).model_copy(update={"severity": Severity.WARNING})], {}
    per_role: dict[str, list[CitationCheck]] = {}
    for position, part in enumerate(turns, start=1):
        turn = part.turn
        if turn is None:
            continue
        for number, item in enumerate(turn.evidence, start=1):
            where = f"evidence item {number}"
            mark = part.marks.get(number)
            location = _marked_location(mark[1] if mark else None) or item.source
            if not grounded and files.find(parse_locator(location)[0]) is None:
                continue  # not a file citation: nothing to check it against
            check = check_citation(files, location, item.content, where=where)
            per_role.setdefault(turn.role, []).append(check)
            line = mark[0] if mark else part.line_of("evidence")
            found.extend(
                v.at(file=str(record), line=line, turn=position) for v in citation_violations([check], severity)
            )
    detail = {role: verified_share(checks) for role, checks in per_role.items()}
    return found, detail

"""The sources of one run, as drivers use them: passages to show, evidence to check, lines to offer.

Built from ``--source`` paths (relative to the work root in the record), lazily: a driver that never
retrieves or checks reads no file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from moot.core.grounding import CitationCheck
from moot.sources import Passage, SourceIndex, SourceSet, check_citation, collect_sources
from moot.sources.collect import cited_path
from moot.sources.verify import normalise

PASSAGES_PER_REQUEST = 4
_NUMBERED_LINE = re.compile(r"^(?P<where>.+?:\d+): (?P<text>.*)$")
_MIN_OFFERED_CHARS = 12  # a line shorter than this ("}", "else:") is no fact to offer


class EvidenceItem(Protocol):
    @property
    def source(self) -> str: ...

    @property
    def content(self) -> str: ...


class Grounding:
    """The files of ``--source`` under ``root``, their index, and checks of cited evidence."""

    def __init__(self, given: Sequence[str], root: Path) -> None:
        self.given = tuple(given)
        self.root = root

    @cached_property
    def sources(self) -> SourceSet:
        paths = [self.root / path for path in self.given]
        if all(not Path(path).is_absolute() for path in self.given):
            return collect_sources(paths, self.root)
        # A record names its sources relative to its work root, which they never leave; only a dry run's record,
        # started in a throwaway root, names them absolute, as moot run checked them against the real work root.
        return collect_sources(paths, self.root, within=Path(os.path.commonpath(paths)))

    @cached_property
    def index(self) -> SourceIndex:
        return SourceIndex(self.sources)

    def passages(self, query: str, limit: int = PASSAGES_PER_REQUEST) -> list[Passage]:
        """The best passages for ``query``; when none matches, the sources' first passages."""
        return self.index.search(query, limit) or self.index.first(limit)

    def check_evidence(self, items: Sequence[EvidenceItem], pool: Sequence[EvidenceItem] = ()) -> list[CitationCheck]:
        """Each item verified in the file it cites, or else found in ``pool`` (whose items were verified)."""
        checks = []
        for number, item in enumerate(items, start=1):
            where = f"evidence item {number}"
            check = check_citation(self.sources, item.source, item.content, where=where)
            if not check.verified:
                pooled = pool_match(item, pool)
                if pooled is not None:
                    found = check_citation(self.sources, pooled.source, item.content, where=where)
                    if found.verified:
                        check = found.model_copy(update={"cited": item.source, "from_pool": True})
            checks.append(check)
        return checks


def source_passages(paths: Sequence[str | Path], root: Path, query: str, limit: int = 2 * PASSAGES_PER_REQUEST) -> str:
    """The passages of ``paths`` that best match ``query``, as a context block for a participant's prompt."""
    grounding = Grounding(tuple(cited_path(Path(path), root) for path in paths), root)
    shown = "\n".join(passage.render() for passage in grounding.passages(query, limit))
    return f"Source passages (cite a line as path:line, quoting its text):\n{shown}"


def pool_match(item: EvidenceItem, pool: Sequence[EvidenceItem]) -> EvidenceItem | None:
    """The pool item ``item`` repeats: the same content, or a part of it (whitespace and case aside)."""
    content = normalise(item.content)
    if not content:
        return None
    return next((p for p in pool if content in normalise(p.content)), None)


def numbered_lines(text: str) -> list[tuple[str, str]]:
    """(``path:line``, text) of each ``path:line: text`` line in a rendered passage."""
    found = []
    for line in text.splitlines():
        match = _NUMBERED_LINE.match(line)
        if match is not None:
            found.append((match.group("where"), match.group("text").strip()))
    return found


def offered_items(lines: Sequence[tuple[str, str]], content_chars: int, limit: int) -> list[dict[str, Any]]:
    """JSON Schema alternatives, one per source line: its ``path:line`` and its text (cut at a word).

    A grammar-constrained model picks evidence from these, so what it cites is in the file by
    construction; a cut line is still a verbatim part of the file.
    """
    offered: list[dict[str, Any]] = []
    seen: set[str] = set()
    for where, text in lines:
        content = cut_at_word(text, content_chars)
        if len(content) < _MIN_OFFERED_CHARS or '"' in content or "\\" in content or content in seen:
            continue
        seen.add(content)
        offered.append({"source": where, "content": content})
        if len(offered) >= limit:
            break
    return offered


def cut_at_word(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut if len(cut) >= limit // 2 else text[:limit]

"""Full-text retrieval over the sources: SQLite FTS5 (bm25), in memory, rebuilt per run.

The files are cut into passages of :data:`PASSAGE_LINES` lines, stemmed (porter: "retries" finds
"retry"). A query keeps its words of three letters or more, and any of them may match (``OR``); bm25
ranks the passages. Each passage is shown line by line as ``path:line: text``, so whoever reads it
can cite a line exactly.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from moot.sources.collect import SourceSet

PASSAGE_LINES = 6
_WORD = re.compile(r"\w{3,}")
_STOPWORDS = frozenset(
    """
    the and for are but not you all any can had her was one our out has him his how its may new now old
    see two way who did get let put say she too use that with have this will your from they been were
    said each which their what there would make like into than them then these some could other more
    about should against argue when where does only also must
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


@dataclass(frozen=True)
class Passage:
    path: str
    line: int  # first line, 1-based
    lines: tuple[str, ...]

    @property
    def locator(self) -> str:
        return f"{self.path}:{self.line}"

    def numbered(self) -> list[tuple[str, str]]:
        """(``path:line``, text) of each non-blank line."""
        return [(f"{self.path}:{self.line + i}", text.strip()) for i, text in enumerate(self.lines) if text.strip()]

    def render(self) -> str:
        return "\n".join(f"{where}: {text}" for where, text in self.numbered())


def query_terms(text: str) -> list[str]:
    """The words of ``text`` worth searching for, lower case, once each, in order."""
    terms: list[str] = []
    for word in _WORD.findall(text.casefold()):
        if word not in _STOPWORDS and word not in terms:
            terms.append(word)
    return terms


class SourceIndex:
    """The passages of a :class:`SourceSet` in an FTS5 table."""

    def __init__(self, sources: SourceSet) -> None:
        self._db = sqlite3.connect(":memory:")
        self._db.execute(
            "CREATE VIRTUAL TABLE passage USING fts5(body, path UNINDEXED, line UNINDEXED, tokenize='porter unicode61')"
        )
        rows = []
        for item in sources.files:
            lines = item.lines
            for start in range(0, len(lines), PASSAGE_LINES):
                chunk = lines[start : start + PASSAGE_LINES]
                if any(line.strip() for line in chunk):
                    rows.append(("\n".join(chunk), item.path, start + 1))
        self._db.executemany("INSERT INTO passage (body, path, line) VALUES (?, ?, ?)", rows)

    def search(self, query: str, limit: int = 5) -> list[Passage]:
        """The ``limit`` passages that best match ``query``, best first (none when it has no words)."""
        terms = query_terms(query)
        if not terms:
            return []
        match = " OR ".join(f'"{term}"' for term in terms)
        rows = self._db.execute(
            "SELECT body, path, line FROM passage WHERE passage MATCH ? ORDER BY bm25(passage) LIMIT ?",
            (match, limit),
        ).fetchall()
        return [Passage(path=path, line=int(line), lines=tuple(body.split("\n"))) for body, path, line in rows]

    def first(self, limit: int = 5) -> list[Passage]:
        """The first ``limit`` passages, in file order."""
        rows = self._db.execute("SELECT body, path, line FROM passage ORDER BY rowid LIMIT ?", (limit,)).fetchall()
        return [Passage(path=path, line=int(line), lines=tuple(body.split("\n"))) for body, path, line in rows]

    def close(self) -> None:
        self._db.close()

"""A record's text as the viewer shows it: sections (the header, each turn, each file of a meeting), a page at a
time, with each violation placed at its line or turn.

A page holds about :data:`PAGE_CHARS` characters of the record and a line shows at most :data:`LINE_CHARS`, so a
page costs the same for a record of 16 MiB as for one of 16 KiB: the text is walked once to find where the pages
start, and only the page shown becomes lines. A violation on another page is linked to that page.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from moot.errors import Violation

PAGE_CHARS = 200_000
LINE_CHARS = 10_000


@dataclass
class Line:
    number: int
    text: str
    violations: list[Violation] = field(default_factory=list)
    more: int = 0  # characters of the line past LINE_CHARS, not shown


@dataclass
class Section:
    """A part of the transcript: a turn (or the header, or one file of a meeting) with its violations."""

    title: str
    lines: list[Line]
    turn: bool = False
    violations: list[Violation] = field(default_factory=list)  # located at the section, not at a line
    continued: bool = False  # it began on an earlier page
    state: bool = False  # the protocol's state file (a folder record's marker), not prose


@dataclass
class Window:
    """The page shown: its number (1-based) of ``count``, and its first and last line numbers (of ``total``)."""

    number: int
    count: int
    first: int
    last: int
    total: int


def _spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of ``text``, without its line break (a ``\\r`` before it is dropped too)."""
    start, size = 0, len(text)
    while start < size:
        end = text.find("\n", start)
        end = size if end < 0 else end
        yield start, (end - 1 if end > start and text[end - 1] == "\r" else end)
        start = end + 1


@dataclass
class Transcript:
    """The sections of one page of ``documents`` and where every other page, line and turn is."""

    sections: dict[str, list[Section]]  # per document name, this page's part
    window: Window
    page_starts: list[tuple[int, int]]  # (document, line index) where each page starts
    turn_starts: list[int]  # line index of each turn heading (a one-file record)
    names: list[str]
    line_counts: list[int]

    def page_of(self, document: int, line_index: int) -> int:
        return bisect.bisect_right(self.page_starts, (document, line_index))

    def place(self, violations: Sequence[Violation], single: bool) -> tuple[list[Violation], dict[int, int]]:
        """Attach each violation on this page to its line or section. Returns the violations of no line, turn or
        file (shown on every page) and, for those on another page, that page (by ``id``)."""
        unplaced: list[Violation] = []
        elsewhere: dict[int, int] = {}
        lines = {
            (name, line.number): line for name, sections in self.sections.items() for s in sections for line in s.lines
        }
        for violation in violations:
            found = self._where(violation, single)
            if found is None:
                unplaced.append(violation)
                continue
            document, line_index, section = found
            page = self.page_of(document, line_index)
            if page != self.window.number:
                elsewhere[id(violation)] = page
            elif section is None:
                lines[(self.names[document], line_index + 1)].violations.append(violation)
            else:
                section.violations.append(violation)
        return unplaced, elsewhere

    def _where(self, violation: Violation, single: bool) -> tuple[int, int, Section | None] | None:
        """(document, line index, the section it belongs to when it names no line) of a violation, or None."""
        name = Path(violation.file).name if violation.file else None
        # In a one-file record, a violation names that file or none; one naming another file (the digest chain
        # beside it) has no line here.
        document = 0 if single and name is None else self.names.index(name) if name in self.names else None
        if document is None:
            return None
        if violation.line is not None and 0 < violation.line <= self.line_counts[document]:
            return document, violation.line - 1, None
        if single and violation.turn is not None and 0 < violation.turn <= len(self.turn_starts):
            start = self.turn_starts[violation.turn - 1]
            return document, start, self._section_at(document, start)
        if not single:  # a file of a meeting: the violation belongs to its section, where the file starts
            return document, 0, self._section_at(document, 0)
        return None

    def _section_at(self, document: int, line_index: int) -> Section | None:
        for section in self.sections.get(self.names[document], []):
            if section.lines and section.lines[0].number == line_index + 1 and not section.continued:
                return section
        return None


def read_latin1(path: Path) -> str:
    """A file's bytes as text of one character per byte, for a record too large to decode whole (a 16 MiB record
    decoded takes up to 64 MiB while it is decoded): :func:`cut` with ``latin1`` decodes only the lines shown."""
    return path.read_bytes().decode("latin-1")


def cut(
    documents: Sequence[tuple[str, str]],
    single: bool,
    turn_heading: str | None,
    page: int | None,
    *,
    latin1: bool = False,
) -> Transcript:
    """Page ``page`` of ``documents`` (``None``: everything on one page), each one-file record cut at its ``## ``
    headings into the header, the turns and the closing sections; a meeting's files are a section each.

    With ``latin1`` the documents are UTF-8 read by :func:`read_latin1`: lines and headings are found alike (they
    are ASCII), and only the page's lines are decoded; the widths are then counted in bytes."""
    page_starts: list[tuple[int, int]] = [(0, 0)]
    turn_starts: list[int] = []
    line_counts: list[int] = []
    shown = 0
    for document, (_, text) in enumerate(documents):
        count = 0
        for start, end in _spans(text):
            width = min(end - start, LINE_CHARS) + 1
            if page is not None and shown and shown + width > PAGE_CHARS:
                page_starts.append((document, count))
                shown = 0
            shown += width
            if (
                single
                and turn_heading
                and count
                and text.startswith("## ", start, end)
                and text.startswith(turn_heading, start, end)
            ):
                turn_starts.append(count)
            count += 1
        line_counts.append(count)
    number = min(max(page or 1, 1), len(page_starts))
    begin = page_starts[number - 1]
    stop = page_starts[number] if number < len(page_starts) else (len(documents), 0)
    sections = {
        name: _sections(name, text, document, begin, stop, turn_heading if single else None, single, latin1)
        for document, (name, text) in enumerate(documents)
        if begin[0] <= document <= stop[0]
    }
    total = sum(line_counts)
    before = sum(line_counts[: begin[0]]) + begin[1]
    after = sum(line_counts[: stop[0]]) + stop[1] if stop[0] < len(documents) else total
    window = Window(number, len(page_starts), before + 1, after, total)
    return Transcript(sections, window, page_starts, turn_starts, [name for name, _ in documents], line_counts)


def _sections(
    name: str,
    text: str,
    document: int,
    begin: tuple[int, int],
    stop: tuple[int, int],
    heading: str | None,
    single: bool,
    latin1: bool,
) -> list[Section]:
    """The sections of document ``name`` that hold lines of the page from ``begin`` to ``stop`` (exclusive)."""

    def shown(start: int, end: int) -> str:
        piece = text[start:end]
        return piece.encode("latin-1").decode("utf-8", "replace") if latin1 else piece

    first = begin[1] if document == begin[0] else 0
    last = stop[1] if document == stop[0] else None  # None: to the end
    title = "Header" if single else name
    turn = not single
    found: list[Section] = []
    current: Section | None = None
    for index, (start, end) in enumerate(_spans(text)):
        if last is not None and index >= last:
            break
        opens = single and text.startswith("## ", start, end) and index > 0
        if opens:
            title = shown(start + 3, end).strip()
            turn = heading is not None and text.startswith(heading, start, end)
        if index < first:
            continue
        if current is None or opens:
            current = Section(title, [], turn=turn, continued=not opens and index > 0)
            found.append(current)
        more = max(0, end - start - LINE_CHARS)
        current.lines.append(Line(index + 1, shown(start, end - more), more=more))
    return found

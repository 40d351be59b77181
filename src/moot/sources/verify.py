"""Checking a citation against the file it names: is the excerpt there, at or near the cited line?

Both sides are normalised the same way: case folded and every run of whitespace made one space (so a
quote that spans a line break matches). Surrounding quote marks and a leading or trailing ellipsis are
not part of the excerpt. Without a line number the whole file is searched.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from moot.core.grounding import NEAR_LINES, CitationCheck
from moot.sources.collect import SourceFile, SourceSet

# path:12, path:12-14, path:L12, path#L12, path line 12, path lines 12-14
_LOCATOR = re.compile(r"^(?P<path>.+?)(?::L?|#L|\s+lines?\s+)(?P<line>\d{1,9})(?:-\d{1,9})?$", re.IGNORECASE)
_MIN_EXCERPT_CHARS = 3
_URL = re.compile(r"^https?://", re.IGNORECASE)


def normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def clean_excerpt(text: str) -> str:
    """The excerpt without surrounding quote marks or ellipses."""
    stripped = text.strip()
    for _ in range(3):
        stripped = stripped.strip().strip("\"'“”‘’«»`").strip()
        stripped = stripped.removeprefix("...").removesuffix("...").strip("…").strip()
    return stripped


def parse_locator(source: str) -> tuple[str, int | None]:
    """(path, line or None) of a citation such as ``src/app.py:12``."""
    text = source.strip().strip("`").strip()
    match = _LOCATOR.match(text)
    if match is None:
        return text, None
    return match.group("path").strip().strip("`"), int(match.group("line"))


def find_excerpt(lines: Sequence[str], excerpt: str, line: int | None) -> int | None:
    """The 1-based line where ``excerpt`` starts, searching near ``line`` (or everywhere), else None."""
    wanted = normalise(clean_excerpt(excerpt))
    if len(wanted) < _MIN_EXCERPT_CHARS:
        return None
    first, last = (0, len(lines)) if line is None else (max(0, line - 1 - NEAR_LINES), line + NEAR_LINES)
    starts: list[int] = []
    pieces: list[str] = []
    offset = 0
    for text in lines[first:last]:
        piece = normalise(text)
        starts.append(offset)
        pieces.append(piece)
        offset += len(piece) + 1
    at = " ".join(pieces).find(wanted)
    if at < 0:
        return None
    return first + bisect.bisect_right(starts, at)


def check_in_file(item: SourceFile, excerpt: str, line: int | None, *, where: str, cited: str) -> CitationCheck:
    found = find_excerpt(item.lines, excerpt, line)
    if found is not None:
        return CitationCheck(where=where, cited=cited, excerpt=excerpt, verified=True, found_at=f"{item.path}:{found}")
    if line is not None and line > len(item.lines):
        reason = f"{item.path} has only {len(item.lines)} lines"
    elif line is not None:
        reason = f"the text is not in {item.path} within {NEAR_LINES} lines of line {line}"
    else:
        reason = f"the text is not in {item.path}"
    return CitationCheck(where=where, cited=cited, excerpt=excerpt, verified=False, reason=reason)


def check_citation(sources: SourceSet, cited: str, excerpt: str, *, where: str) -> CitationCheck:
    """Verify ``excerpt`` against the source file ``cited`` names (``path:line`` or ``path``)."""
    path, line = parse_locator(cited)
    item = sources.find(path)
    if item is None:
        grounded = False
        reason = "it names no file of the sources"
        if _URL.match(path):
            reason = "a URL cannot be checked against the sources"
        return CitationCheck(
            where=where, cited=cited, excerpt=excerpt, verified=False, reason=reason, grounded=grounded
        )
    return check_in_file(item, excerpt, line, where=where, cited=cited)

"""What makes two hosts' joins meet in one debate: the source document, identified without absolute paths.

A source inside a git repository is identified by its path relative to the repository root (``path:docs/a.md``);
one outside any repository but inside the work root, by its path relative to the work root; any other by
the SHA-256 of its text (``sha256:…``). The record names the source by its path relative to the record's
own folder (``../docs/a.md``), so that every host writes the same bytes and the link works on each of
them; only a source outside both keeps its absolute path. The creator's text is stored with the debate,
so that a host whose copy differs is refused with the first line that differs.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from moot.tools.errors import shown

_SHOWN_CHARS = 80


@dataclass(frozen=True)
class SourceIdentity:
    key: str
    """What joins meet on: ``path:<relative path>`` or ``sha256:<digest>``."""
    record_path: str
    """The record's Source Path: relative to the record's folder, else absolute."""
    digest: str
    text: str


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def repository_root(path: Path) -> Path | None:
    """The nearest folder above ``path`` that holds ``.git`` (a directory, or a worktree's file)."""
    for folder in path.parents:
        if (folder / ".git").exists():
            return folder
    return None


def identify(source: Path, root: Path, area: str, text: str) -> SourceIdentity:
    """The identity of ``source`` (a real path) for a debate whose record lives in ``root/area``."""
    digest = text_digest(text)
    base = repository_root(source) or (root if source.is_relative_to(root) else None)
    if base is None:
        return SourceIdentity(f"sha256:{digest}", str(source), digest, text)
    key = f"path:{source.relative_to(base).as_posix()}"
    return SourceIdentity(key, Path(os.path.relpath(source, root / area)).as_posix(), digest, text)


def local_copy(record_path: str, root: Path, area: str) -> Path:
    """This host's file for the record's Source Path (relative paths are from the record's folder)."""
    given = Path(record_path)
    return Path(os.path.normpath(given if given.is_absolute() else root / area / given))


def first_difference(ours: str, theirs: str) -> str:
    """Where two texts first differ, for a message: ``line 12 (yours: '…', the debate's: '…')``."""
    mine, other = ours.splitlines(), theirs.splitlines()
    for number, (a, b) in enumerate(zip(mine, other, strict=False), start=1):
        if a != b:
            return f"line {number} (yours: {shown(a[:_SHOWN_CHARS])!r}, the debate's: {shown(b[:_SHOWN_CHARS])!r})"
    if len(mine) != len(other):
        return f"length (yours has {len(mine)} lines, the debate's has {len(other)})"
    return "line endings or the final newline"

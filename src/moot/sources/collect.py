"""Which files a ``--source`` names: text files, .gitignore respected, within bounds, the rest reported.

- A file is taken as given (a binary or oversized one is still skipped, and said so).
- A directory inside a git repository lists its files with ``git ls-files`` (tracked and untracked,
  without what git ignores: every .gitignore, .git/info/exclude and the global excludes file).
- A directory outside git is walked; the .gitignore files in it are read with ``pathspec`` (git's own
  pattern rules: nested files, deeper ones overriding, ``!`` negation, an ignored directory not entered).
- Every given path must lie inside the work root (:mod:`moot.paths`: a relative one from the current
  directory, a link inside the root only to a place inside it); a file listed in a given directory that is a
  link out of the root is skipped, and said so.
- Files are cited by their path relative to the work root (``/``-separated).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from moot.errors import PathRefused, UserError
from moot.paths import inside_root, real_root

if TYPE_CHECKING:
    import pathspec  # imported where a .gitignore is read: most callers never need it

MAX_FILES = 2000
MAX_FILE_BYTES = 512 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
_BINARY_PROBE = 8192  # a NUL byte in the first 8 KiB makes a file binary, as git decides
_GIT_TIMEOUT_S = 30


@dataclass(frozen=True)
class SourceFile:
    path: str  # as cited: relative to the work root, or absolute
    absolute: Path
    text: str

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str  # "binary", "larger than 512 KiB", …


@dataclass
class SourceSet:
    """The readable text files of the given sources, and what was left out and why."""

    root: Path
    given: tuple[str, ...]  # the sources as named in the record
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # (how many files it covers, exact names, path tails): a record's every citation is looked up, so a lookup
    # must not walk every file
    _index: tuple[int, dict[str, SourceFile], dict[str, list[SourceFile]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def find(self, cited: str) -> SourceFile | None:
        """The source file a citation names: its exact path, else the one file whose path ends with it."""
        name = cited.strip().strip("`").replace("\\", "/").removeprefix("./")
        if not name:
            return None
        exact, tails = self._lookup()
        found = exact.get(name)
        if found is not None:
            return found
        ending = tails.get(name, [])
        return ending[0] if len(ending) == 1 else None

    def _lookup(self) -> tuple[dict[str, SourceFile], dict[str, list[SourceFile]]]:
        """Each file by its path and absolute path (the first wins), and by every tail of its path after a '/'."""
        if self._index is None or self._index[0] != len(self.files):
            exact: dict[str, SourceFile] = {}
            tails: dict[str, list[SourceFile]] = {}
            for item in self.files:
                exact.setdefault(item.path, item)
                exact.setdefault(str(item.absolute), item)
                for at, char in enumerate(item.path):
                    if char == "/":
                        tails.setdefault(item.path[at + 1 :], []).append(item)
            self._index = (len(self.files), exact, tails)
        return self._index[1], self._index[2]

    def skipped_note(self) -> str | None:
        """What was left out and why, in one phrase, or None."""
        if not self.skipped:
            return None
        by_reason: dict[str, list[str]] = {}
        for item in self.skipped:
            by_reason.setdefault(item.reason, []).append(item.path)
        parts = []
        for reason, paths in by_reason.items():
            shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            parts.append(f"{len(paths)} {reason} ({shown})")
        return f"skipped {len(self.skipped)} file(s): " + "; ".join(parts)


def cited_path(path: Path, root: Path) -> str:
    """How a file is cited: relative to ``root`` when inside it, else absolute; always with ``/``."""
    absolute = path.resolve()
    try:
        return absolute.relative_to(root.resolve()).as_posix()
    except ValueError:
        return absolute.as_posix()


def collect_sources(paths: Sequence[str | Path], root: Path, *, within: Path | None = None) -> SourceSet:
    """Read the text files of ``paths`` (files or directories), cited relative to ``root``; raises UserError for
    a missing path or one outside ``within`` (default: the work root ``root``)."""
    bound = root if within is None else within
    given_paths = [inside_root(bound, p, what="the source") for p in paths]
    sources = SourceSet(root=root, given=tuple(cited_path(p, root) for p in given_paths))
    seen: set[Path] = set()
    total = 0
    for given, path in zip(paths, given_paths, strict=True):
        if not path.exists():
            raise UserError(f"the source {given} does not exist; check the path given to --source.")
        candidates = [path] if path.is_file() else list(_directory_files(path))
        for candidate in candidates:
            try:
                absolute = inside_root(bound, candidate, what="the source")
            except PathRefused:
                shown = Path(os.path.relpath(candidate, real_root(root))).as_posix()
                sources.skipped.append(Skipped(shown, "a symbolic link out of the work root"))
                continue
            if absolute in seen:
                continue
            seen.add(absolute)
            name = cited_path(absolute, root)
            if len(sources.files) >= MAX_FILES:
                sources.skipped.append(Skipped(name, f"beyond the first {MAX_FILES} files"))
                continue
            reason, text = _read_text(absolute)
            if reason is None and total + len(text.encode("utf-8")) > MAX_TOTAL_BYTES:
                reason = f"over the total of {MAX_TOTAL_BYTES // (1024 * 1024)} MiB"
            if reason is not None:
                sources.skipped.append(Skipped(name, reason))
                continue
            total += len(text.encode("utf-8"))
            sources.files.append(SourceFile(path=name, absolute=absolute, text=text))
    if not sources.files:
        note = sources.skipped_note() or "they hold no files"
        raise UserError(f"no readable text file in the sources ({note}); give --source text files or directories.")
    return sources


def read_source_file(path: Path, root: Path) -> SourceFile | None:
    """One text file within the bounds, or None (missing, binary, too large)."""
    if not path.is_file():
        return None
    reason, text = _read_text(path.resolve())
    return SourceFile(path=cited_path(path, root), absolute=path.resolve(), text=text) if reason is None else None


def _read_text(path: Path) -> tuple[str | None, str]:
    """(why the file is skipped, or None; its text)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return f"larger than {MAX_FILE_BYTES // 1024} KiB", ""
        data = path.read_bytes()
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})", ""
    if b"\0" in data[:_BINARY_PROBE]:
        return "binary", ""
    try:
        return None, data.decode("utf-8")
    except UnicodeDecodeError:
        return "binary", ""  # not UTF-8 text: nothing a quote could be checked against


def _directory_files(directory: Path) -> Iterator[Path]:
    listed = _git_files(directory)
    if listed is not None:
        yield from listed
    else:
        yield from _walk(directory, [])


def _git_files(directory: Path) -> list[Path] | None:
    """The files git lists under ``directory`` (tracked and untracked, not ignored), or None outside git."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        inside = subprocess.run(
            [git, "-C", str(directory), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
        )
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
        listed = subprocess.run(
            [git, "-C", str(directory), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    names = sorted(n for n in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if n)
    return [directory / name for name in names if (directory / name).is_file()]


Specs = list[tuple[Path, "pathspec.GitIgnoreSpec"]]


def _ignored(path: Path, is_dir: bool, specs: Specs) -> bool:
    """git's decision: the deepest .gitignore with a matching pattern decides, its last match wins."""
    for base, spec in reversed(specs):
        relative = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        result = spec.check_file(relative).include
        if result is not None:
            return result
    return False


def _walk(directory: Path, specs: Specs) -> Iterator[Path]:
    ignore_file = directory / ".gitignore"
    if ignore_file.is_file():
        import pathspec

        try:
            lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        specs = [*specs, (directory, pathspec.GitIgnoreSpec.from_lines(lines))]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.name == ".git" or (entry.is_symlink() and entry.is_dir()):
            continue  # git's own data; a linked directory could loop
        is_dir = entry.is_dir()
        if _ignored(path, is_dir, specs):
            continue
        if is_dir:
            yield from _walk(path, specs)
        elif entry.is_file():
            yield path

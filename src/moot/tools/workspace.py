"""The work root every tool acts in: its ledger, its clock, and the only paths a tool may write.

Names that arrive from outside (topics, meeting names, roles, dialogue file names) never choose a path on
their own: each writable path is ``<root>/<area>/<name>``, built here, with absolute paths, ``..`` and
symbolic links anywhere below the root refused; a file an agent names for moot to read (a duel's source) must
lie inside the root. Both go through the one path rule, :mod:`moot.paths`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from moot.core.ledger_place import DATABASE_ENV
from moot.errors import BadInput, PathRefused
from moot.ledger import Clock, Ledger, open_ledger
from moot.paths import CLIENT_FIX, inside_root, record_place
from moot.tools.errors import translated

if TYPE_CHECKING:
    from moot.tools.seats import Keyring


@contextmanager
def refused_paths() -> Iterator[None]:
    """The path rule's refusals as the tools' own (exit 2): ``FILE_SYMLINK`` at a link, else ``TOOLS_UNSAFE_NAME``."""
    try:
        yield
    except PathRefused as refusal:
        rule = "FILE_SYMLINK" if refusal.link is not None else "TOOLS_UNSAFE_NAME"
        raise BadInput(str(refusal)[:1].upper() + str(refusal)[1:], rule=rule) from None


def _system_clock() -> datetime:
    return datetime.now(UTC)


@dataclass
class Workspace:
    """An open work root. Use as a context manager; it closes the ledger.

    ``confined``: a file named for moot to read must lie inside the root. Only the command line opens a
    workspace without it, for the seed's ``join --target``, which names any readable Markdown file of the user
    who runs the command (rp1 keeps its work root at ``<project>/.rp1/work`` and debates the project's
    documents); records are kept inside the root either way.
    """

    root: Path
    ledger: Ledger
    clock: Clock = field(default=_system_clock)
    keyring: Keyring | None = None
    """Where the caller's participant secrets are kept (see :mod:`moot.tools.seats`); ``None``: pass them."""
    confined: bool = True

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def now(self) -> str:
        """The current time as the records write it: ``2026-04-25T10:42:00Z``."""
        return self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def area(self, name: str) -> Path:
        """``<root>/<name>`` for one of the areas moot writes to; refused when it is a symbolic link."""
        with refused_paths():
            return record_place(self.root, name)

    def inside(self, area: str, relative: str | os.PathLike[str]) -> Path:
        """``<root>/<area>/…`` for a path given relative to the root (or absolute, but inside the area)."""
        base = self.root / area
        given = Path(relative)
        candidate = given if given.is_absolute() else self.root / given
        try:
            parts = candidate.relative_to(self.root).parts
        except ValueError:
            parts = ()
        if not parts or parts[0] != area or len(parts) < 2 or ".." in parts or any(p in {"", "."} for p in parts):
            bare = not given.is_absolute() and len(given.parts) == 1 and given.name not in {area, "..", "."}
            fix = (
                f"{area}/{given.name}" if bare else f"a file under {area}/ of the work root"
            )  # paths are root-relative
            raise BadInput(
                f"{os.fspath(relative)!r} is not a path inside {base}; pass {fix}.", rule="TOOLS_UNSAFE_NAME"
            )
        with refused_paths():
            record_place(self.root, Path(*parts))
        return candidate

    def source(self, given: str | os.PathLike[str], what: str) -> Path:
        """The real path of a file an agent names for moot to read (a duel's source), relative to the root;
        refused unless it lies inside the root (when ``confined``)."""
        with refused_paths():
            if self.confined:
                return inside_root(self.root, given, what=what, base=self.root, fix=CLIENT_FIX)
            return inside_root("/", given, what=what, base=self.root)

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


def open_workspace(
    root: str | os.PathLike[str] | None = None,
    *,
    database_url: str | None = None,
    clock: Clock | None = None,
    confined: bool = True,
) -> Workspace:
    """Open the work root ``root`` (default: the current directory) and its ledger.

    The ledger is ``database_url``, else ``$MOOT_DATABASE_URL``, else ``<root>/.moot/moot.db``; ``confined``
    is the workspace's (see :class:`Workspace`).
    """
    where = Path(root) if root is not None else Path.cwd()
    if not where.is_dir():
        raise BadInput(f"The work root {where} is not a directory; pass --root with an existing directory.")
    resolved = where.resolve()
    target = database_url or os.environ.get(DATABASE_ENV) or str(resolved)
    with translated():
        ledger = open_ledger(target, clock=clock)
    return Workspace(root=resolved, ledger=ledger, clock=clock or _system_clock, confined=confined)

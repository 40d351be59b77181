"""The work root every tool acts in: its ledger, its clock, and the only paths a tool may write.

Names that arrive from outside (topics, meeting names, roles, dialogue file names) never choose a path on
their own: each writable path is ``<root>/<area>/<name>``, built here, with absolute paths, ``..`` and
symbolic links anywhere below the root refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from moot.core.ledger_place import DATABASE_ENV
from moot.ledger import Clock, Ledger, open_ledger
from moot.tools.errors import BadInput, Refused, translated

if TYPE_CHECKING:
    from moot.tools.seats import Keyring


def _system_clock() -> datetime:
    return datetime.now(UTC)


@dataclass
class Workspace:
    """An open work root. Use as a context manager; it closes the ledger."""

    root: Path
    ledger: Ledger
    clock: Clock = field(default=_system_clock)
    keyring: Keyring | None = None
    """Where the caller's participant secrets are kept (see :mod:`moot.tools.seats`); ``None``: pass them."""

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
        path = self.root / name
        if path.is_symlink():
            raise Refused(
                f"{path} is a symbolic link; moot writes only to real directories under the work root, so "
                "replace it with a directory.",
                rule="FILE_SYMLINK",
            )
        return path

    def inside(self, area: str, relative: str | os.PathLike[str]) -> Path:
        """``<root>/<area>/…`` for a path given relative to the root (or absolute, but inside the area)."""
        base = self.area(area)
        given = Path(relative)
        candidate = given if given.is_absolute() else self.root / given
        try:
            parts = candidate.relative_to(self.root).parts
        except ValueError:
            parts = ()
        if not parts or parts[0] != area or len(parts) < 2 or ".." in parts or any(p in {"", "."} for p in parts):
            raise BadInput(
                f"{os.fspath(relative)!r} is not a path inside {base}; pass a file under {area}/ of the work root.",
                rule="TOOLS_UNSAFE_NAME",
            )
        current = self.root
        for part in parts:
            current = current / part
            if current.is_symlink():
                raise Refused(
                    f"{current} is a symbolic link; moot never writes a record through a link, so replace it "
                    "with the real file.",
                    rule="FILE_SYMLINK",
                )
        return candidate

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


def open_workspace(
    root: str | os.PathLike[str] | None = None, *, database_url: str | None = None, clock: Clock | None = None
) -> Workspace:
    """Open the work root ``root`` (default: the current directory) and its ledger.

    The ledger is ``database_url``, else ``$MOOT_DATABASE_URL``, else ``<root>/.moot/moot.db``.
    """
    where = Path(root) if root is not None else Path.cwd()
    if not where.is_dir():
        raise BadInput(f"The work root {where} is not a directory; pass --root with an existing directory.")
    resolved = where.resolve()
    target = database_url or os.environ.get(DATABASE_ENV) or str(resolved)
    with translated():
        ledger = open_ledger(target, clock=clock)
    return Workspace(root=resolved, ledger=ledger, clock=clock or _system_clock)

"""``open_ledger``: pick the backend from what the caller has (a PostgreSQL URL, a work root, a file)."""

from __future__ import annotations

import os
from pathlib import Path

from moot.core.ledger_place import DEFAULT_DB
from moot.errors import InvalidInputError, LedgerUnavailableError
from moot.ledger.base import Ledger
from moot.ledger.models import Clock
from moot.ledger.sqlite import SqliteLedger

_SQLITE_SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3"})


def ledger_path(work_root: str | os.PathLike[str]) -> Path:
    return Path(work_root) / DEFAULT_DB


def open_ledger(target: str | os.PathLike[str], *, clock: Clock | None = None) -> Ledger:
    """Open (creating and migrating as needed) the ledger at ``target``.

    - ``postgresql://…`` or ``postgres://…``: PostgreSQL (needs psycopg);
    - a path ending in ``.db``, ``.sqlite`` or ``.sqlite3``: that SQLite file;
    - any other path: a work root, whose ledger is ``<root>/.moot/moot.db``.
    """
    text = os.fspath(target)
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if scheme not in {"postgresql", "postgres"}:
            raise InvalidInputError(
                f"Ledger URLs with scheme {scheme!r} are not supported; use a postgresql:// URL or a work-root path."
            )
        try:
            from moot.ledger.postgres import PostgresLedger
        except ModuleNotFoundError as exc:
            if exc.name is None or not exc.name.startswith("psycopg"):
                raise
            raise LedgerUnavailableError(
                "A PostgreSQL ledger needs psycopg; install it with pip install 'psycopg[binary]'."
            ) from exc
        return PostgresLedger(text, clock=clock)
    path = Path(text)
    return SqliteLedger(path if path.suffix in _SQLITE_SUFFIXES else ledger_path(path), clock=clock)

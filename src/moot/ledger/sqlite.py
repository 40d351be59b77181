"""The default ledger: one SQLite file (``<work root>/.moot/moot.db``), safe across processes.

- WAL journal: readers never block the writer, and the writer never blocks readers.
- ``BEGIN IMMEDIATE`` for every transaction that writes: the write lock is taken before anything is read,
  so a lease check and the write it guards cannot interleave with another process, and a transaction
  never has to upgrade a read lock (the case in which SQLite gives up with SQLITE_BUSY at once).
- busy timeout (``sqlite3.connect(timeout=…)`` is ``sqlite3_busy_timeout``): a writer waits its turn.
- ``synchronous=FULL``: a committed lease or fencing number survives power loss, so a fencing number is
  never handed out twice.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from moot.errors import LedgerUnavailableError
from moot.ledger.migrations import Dialect
from moot.ledger.models import Clock
from moot.ledger.sql import SqlLedger
from moot.ledger.sqltx import Cursor, Params, Tx

DEFAULT_BUSY_TIMEOUT_SECONDS = 30.0


class SqliteLedger(SqlLedger):
    dialect: ClassVar[Dialect] = "sqlite"
    _FOR_UPDATE: ClassVar[str] = ""  # BEGIN IMMEDIATE already makes this the only writer
    _SKIP_LOCKED: ClassVar[str] = ""
    _TABLE_EXISTS: ClassVar[str] = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock | None = None,
        busy_timeout_seconds: float = DEFAULT_BUSY_TIMEOUT_SECONDS,
    ) -> None:
        super().__init__(clock)
        self.path = Path(path)
        self._busy_timeout = busy_timeout_seconds
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: the module opens no transactions of its own; _begin opens them explicitly.
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout_seconds, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise LedgerUnavailableError(
                f"Cannot open the ledger {self.path} ({exc}); check that its directory is writable."
            ) from exc
        try:
            mode = self._enable_wal()
            if mode is None or str(mode[0]).lower() != "wal":
                raise LedgerUnavailableError(
                    f"The ledger {self.path} cannot use write-ahead logging; put it on a local file system."
                )
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.Error as exc:
            self._conn.close()
            raise self._unavailable(exc) from exc
        except BaseException:
            self._conn.close()
            raise

    def _enable_wal(self) -> tuple[object, ...] | None:
        """Switch to WAL, waiting out other processes that are creating the same new file.

        Changing the journal mode can fail with SQLITE_BUSY at once, without SQLite's busy handler
        waiting, when another process holds a lock on a brand-new database; so wait here, up to the
        busy timeout.
        """
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                row: tuple[object, ...] | None = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
                return row
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    def _unavailable(self, exc: sqlite3.Error) -> LedgerUnavailableError:
        if "locked" in str(exc) or "busy" in str(exc):
            return LedgerUnavailableError(
                f"The ledger {self.path} stayed locked by another process for {self._busy_timeout:g} s; retry, or "
                "stop the process that holds it."
            )
        return LedgerUnavailableError(f"The ledger {self.path} failed ({exc}); check the file and its directory.")

    def _execute(self, sql: str, params: Params) -> Cursor:
        return self._conn.execute(sql, tuple(params))

    @contextmanager
    def _begin(self, write: bool) -> Iterator[Tx]:
        try:
            self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")
        except sqlite3.OperationalError as exc:
            raise self._unavailable(exc) from exc
        try:
            yield Tx(self._execute)
        except sqlite3.IntegrityError:
            self._rollback()
            raise
        except sqlite3.DatabaseError as exc:
            self._rollback()
            raise self._unavailable(exc) from exc
        except BaseException:
            self._rollback()
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise self._unavailable(exc) from exc

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _disconnect(self) -> None:
        self._conn.close()

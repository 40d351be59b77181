"""The PostgreSQL ledger (psycopg 3), for ``postgresql://…`` URLs (the CLI reads ``MOOT_DATABASE_URL``).

Concurrency: READ COMMITTED with a row lock, not SERIALIZABLE. Every lease-sensitive write starts with
``SELECT … FROM debates WHERE id = … FOR UPDATE``; the debate row holds the fencing counter, so locking it
serialises exactly the transactions that conflict (those on the same debate), waits instead of failing,
and needs no retry loop. After the lock, each statement reads the latest committed lease. SERIALIZABLE
would make every contending claim abort with 40001 and be retried, which under the contention test
means most transactions do their work twice.

Two writes are not keyed by a debate row and take a transaction-scoped advisory lock instead: migrations
(so that concurrent first opens do not race on CREATE TABLE) and event appends (so that event ids become
visible in id order: with a bare identity column a follower reading ``after_id=N`` could see N+1 committed
before N and skip N forever).

Timestamps are the ledger clock's ISO-8601 text (the same in both backends); event data is JSONB.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from moot.ledger.errors import LedgerUnavailableError
from moot.ledger.migrations import Dialect
from moot.ledger.models import Clock
from moot.ledger.sql import SqlLedger
from moot.ledger.sqltx import Cursor, Params, Tx

# pg_advisory_xact_lock keys: 'moot' in ASCII, then the purpose
_ADVISORY_KEYS = {"migrations": 0x6D6F6F74_0001, "events": 0x6D6F6F74_0002}


def describe_url(url: str) -> str:
    """``user@host:port/dbname`` without the password, for messages."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "an unparsable URL"
    return (
        f"{parts.get('user', '')}@{parts.get('host', 'localhost')}:{parts.get('port', 5432)}/{parts.get('dbname', '')}"
    )


class PostgresLedger(SqlLedger):
    dialect: ClassVar[Dialect] = "postgres"
    _FOR_UPDATE: ClassVar[str] = " FOR UPDATE"
    _TABLE_EXISTS: ClassVar[str] = (
        "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
    )

    def __init__(self, url: str, *, clock: Clock | None = None, connect_timeout_seconds: int = 10) -> None:
        super().__init__(clock)
        self._where = describe_url(url)
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout_seconds)
        except psycopg.Error as exc:
            raise self._unavailable(exc) from exc
        try:
            self._migrate()
        except BaseException:
            self._conn.close()
            raise

    def _unavailable(self, exc: psycopg.Error) -> LedgerUnavailableError:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return LedgerUnavailableError(
            f"The PostgreSQL ledger at {self._where} failed ({reason}); check MOOT_DATABASE_URL and that the server "
            "is running."
        )

    def _execute(self, sql: str, params: Params) -> Cursor:
        return self._conn.execute(sql, tuple(params))

    @contextmanager
    def _begin(self, write: bool) -> Iterator[Tx]:
        try:
            with self._conn.transaction():
                if not write:  # one consistent snapshot for multi-statement reads such as status()
                    self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield Tx(self._execute, format_placeholders=True)
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise self._unavailable(exc) from exc

    def _serialize(self, tx: Tx, purpose: str) -> None:
        tx.one("SELECT pg_advisory_xact_lock(?)", (_ADVISORY_KEYS[purpose],))

    def _disconnect(self) -> None:
        self._conn.close()

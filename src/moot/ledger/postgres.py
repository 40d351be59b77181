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

Lease calls are one round trip each: a claim, a refresh and a release are each a single statement, sent
outside any explicit transaction (so no BEGIN and COMMIT), that locks the debate row, applies the fencing
check in the WHERE clause of its conditional upsert or UPDATE … RETURNING, and writes the audit row in a CTE
of the same statement. Because every lease change locks the debate row first, the conditional write sees the
lease as the previous writer committed it. When such a call is refused, a second look (the shared
transaction code) finds the reason for the message; closing a debate keeps the shared transaction too.

Timestamps are the ledger clock's ISO-8601 text (the same in both backends); event data is JSONB.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import ClassVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from moot.errors import LedgerUnavailableError
from moot.ledger.migrations import Dialect
from moot.ledger.models import Clock, DebateState, Lease, Refusal, to_iso
from moot.ledger.rows import StoredLease
from moot.ledger.sql import ClaimView, SqlLedger, new_secret, token_sha256
from moot.ledger.sqltx import Cursor, Params, Row, Tx

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


# Like the shared code, a claim that the statement's snapshot already shows refused (a live lease) takes no
# lock, so that pollers never queue in front of the holder's writes. Otherwise the lock on the debate row
# orders the claim after every earlier lease change of the debate; the upsert's WHERE then judges the
# latest lease row (expired or released) and the fencing number comes from the latest debate row.
_CLAIM = """
WITH snap AS (SELECT id, status, outcome FROM debates WHERE id = ?),
live AS (SELECT holder_id, expires_at FROM leases WHERE debate_id = ? AND released_at IS NULL AND expires_at > ?),
d AS (SELECT id, fencing, status FROM debates WHERE id = ? AND NOT EXISTS (SELECT 1 FROM live) FOR UPDATE),
member AS (SELECT id FROM participants WHERE debate_id = ? AND id = ? AND secret_sha256 = ?),
n AS (SELECT COUNT(*) AS count FROM participants WHERE debate_id = ?),
granted AS (
    INSERT INTO leases AS l (debate_id, holder_id, token_sha256, fencing, acquired_at, expires_at, released_at)
    SELECT d.id, member.id, ?, d.fencing + 1, ?, ?, NULL FROM d, member, n
    WHERE d.status <> 'closed' AND (n.count >= 2 OR ?)
    ON CONFLICT (debate_id) DO UPDATE SET holder_id = excluded.holder_id, token_sha256 = excluded.token_sha256,
        fencing = excluded.fencing, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at,
        released_at = NULL
    WHERE l.released_at IS NOT NULL OR l.expires_at <= ?
    RETURNING l.debate_id, l.fencing
),
bumped AS (UPDATE debates SET fencing = granted.fencing FROM granted WHERE debates.id = granted.debate_id RETURNING 1)
SELECT snap.status, snap.outcome, n.count, EXISTS (SELECT 1 FROM member), (SELECT fencing FROM granted),
    (SELECT COUNT(*) FROM bumped), (SELECT holder_id FROM live), (SELECT expires_at FROM live)
FROM snap CROSS JOIN n
"""

# One statement for a refresh (action 'refresh', new expiry) or a release (action 'release', released_at):
# the holder, its secret, the token and the expiry are checked on the latest lease row, and the audit row names
# the expiry the lease had before this write.
_HELD = """
WITH d AS (SELECT id FROM debates WHERE id = ? AND status <> 'closed' FOR UPDATE),
before AS (SELECT l.debate_id, l.expires_at FROM leases l JOIN d ON l.debate_id = d.id),
held AS (
    UPDATE leases l SET expires_at = COALESCE(?, l.expires_at), released_at = ? FROM d
    WHERE l.debate_id = d.id AND l.released_at IS NULL AND l.holder_id = ? AND l.token_sha256 = ?
        AND l.expires_at > ?
        AND EXISTS (SELECT 1 FROM participants p WHERE p.id = l.holder_id AND p.secret_sha256 = ?)
    RETURNING l.debate_id, l.holder_id, l.fencing, l.expires_at
),
audit AS (
    INSERT INTO lease_writes (debate_id, fencing, holder_id, action, written_at, lease_expires_at)
    SELECT held.debate_id, held.fencing, held.holder_id, ?, ?, COALESCE(before.expires_at, held.expires_at)
    FROM held LEFT JOIN before USING (debate_id)
    RETURNING 1
)
SELECT held.fencing, (SELECT COUNT(*) FROM participants WHERE debate_id = held.debate_id), (SELECT COUNT(*) FROM audit)
FROM held
"""


class PostgresLedger(SqlLedger):
    dialect: ClassVar[Dialect] = "postgres"
    _FOR_UPDATE: ClassVar[str] = " FOR UPDATE"
    _SKIP_LOCKED: ClassVar[str] = " FOR UPDATE SKIP LOCKED"
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

    def _statement(self, sql: str, params: Params) -> Row | None:
        """One statement in its own implicit transaction: one round trip."""
        with self._exclusive():
            try:
                return Tx(self._execute, format_placeholders=True).one(sql, params)
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                raise self._unavailable(exc) from exc

    def _claim(
        self, debate_id: str, participant_id: str, secret: str, ttl: timedelta, for_timeout: bool, retry: int
    ) -> Lease | Refusal:
        token = new_secret()
        now = self._now()
        expires_at = to_iso(now + ttl)
        row = self._statement(
            _CLAIM,
            (
                debate_id,
                debate_id,
                to_iso(now),
                debate_id,
                debate_id,
                participant_id,
                token_sha256(secret),
                debate_id,
                token_sha256(token),
                to_iso(now),
                expires_at,
                for_timeout,
                to_iso(now),
            ),
        )
        if row is not None and row[4] is not None:
            return Lease(debate_id, participant_id, token, expires_at, int(row[4]), int(row[2]))
        if row is not None and row[0] != DebateState.CLOSED.value and row[3]:
            held = None if row[6] is None else StoredLease(str(row[6]), "", 0, "", str(row[7]))
            view = ClaimView(debate_id, participant_id, int(row[2]), 0, held, now)
            refusal = self._refusal(view, for_timeout, retry)
            if refusal is not None:
                return refusal
        # unknown debate or participant, a wrong secret, a closed debate, or a lease changed while this claim
        # waited: the shared code says which, or decides again
        return super()._claim(debate_id, participant_id, secret, ttl, for_timeout, retry)

    def _held_write(
        self, debate_id: str, participant_id: str, lease_token: str, secret: str, action: str, expires_at: str | None
    ) -> Row | None:
        now = to_iso(self._now())
        return self._statement(
            _HELD,
            (
                debate_id,
                expires_at,
                now if expires_at is None else None,
                participant_id,
                token_sha256(lease_token),
                now,
                token_sha256(secret),
                action,
                now,
            ),
        )

    @staticmethod
    def _texts(*values: object) -> bool:
        return all(isinstance(value, str) for value in values)

    def _refresh(self, debate_id: str, participant_id: str, lease_token: str, secret: str, ttl: timedelta) -> Lease:
        if not self._texts(participant_id, lease_token, secret):
            return super()._refresh(debate_id, participant_id, lease_token, secret, ttl)
        expires_at = to_iso(self._now() + ttl)
        row = self._held_write(debate_id, participant_id, lease_token, secret, "refresh", expires_at)
        if row is None:  # refused: the shared code names the reason
            return super()._refresh(debate_id, participant_id, lease_token, secret, ttl)
        return Lease(debate_id, participant_id, lease_token, expires_at, int(row[0]), int(row[1]))

    def _release(self, debate_id: str, participant_id: str, lease_token: str, secret: str) -> None:
        if not self._texts(participant_id, lease_token, secret):
            super()._release(debate_id, participant_id, lease_token, secret)
            return
        if self._held_write(debate_id, participant_id, lease_token, secret, "release", None) is None:
            super()._release(debate_id, participant_id, lease_token, secret)

    def _serialize(self, tx: Tx, purpose: str) -> None:
        tx.one("SELECT pg_advisory_xact_lock(?)", (_ADVISORY_KEYS[purpose],))

    def _disconnect(self) -> None:
        self._conn.close()

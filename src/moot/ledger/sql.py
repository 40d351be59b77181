"""The ledger's logic, written once over a ``Tx`` (a transaction) for both SQL backends.

How a backend makes write transactions safe is its own business (SQLite: ``BEGIN IMMEDIATE``, one writer
at a time; PostgreSQL: ``SELECT … FOR UPDATE`` on the debate row, spelled by ``_FOR_UPDATE``). Every write
locks the debate row (or the database) *before* reading the clock and the lease, so the expiry check and
the write see the same moment and the same lease.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import threading
import uuid
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, ClassVar

from moot.errors import (
    ConflictError,
    DebateClosedError,
    DebateFullError,
    InvalidInputError,
    LeaseError,
    LedgerUnavailableError,
    NotFoundError,
    SeatError,
    SourceMismatchError,
)
from moot.ledger import batches
from moot.ledger.base import LeaseGuard, Ledger
from moot.ledger.batches import BatchClaim, BatchProgress
from moot.ledger.migrations import LATEST_VERSION, Dialect, apply_migrations, current_version
from moot.ledger.models import (
    DEFAULT_RETRY_AFTER_SECONDS,
    DEFAULT_TTL_SECONDS,
    MIN_PARTICIPANTS,
    Clock,
    Conclusion,
    Debate,
    DebateRecord,
    DebateState,
    DebateStatus,
    Event,
    JoinResult,
    Lease,
    LeaseAction,
    LeaseView,
    LeaseWrite,
    Participant,
    Refusal,
    Released,
    TurnDigest,
    from_iso,
    to_iso,
    utc_now,
)
from moot.ledger.rows import (
    SELECT_CONCLUSION,
    SELECT_DEBATE,
    SELECT_EVENT,
    SELECT_LEASE,
    SELECT_LEASE_WRITE,
    SELECT_OPENING_AND_CONCLUSION,
    SELECT_PARTICIPANT,
    SELECT_TURN,
    StoredLease,
    conclusion_from,
    debate_from,
    event_from,
    lease_write_from,
    participant_from,
    stored_lease_from,
    turn_from,
)
from moot.ledger.sqltx import Tx
from moot.ledger.validation import (
    encoded_event_data,
    optional_text,
    outcome_name,
    positive_int,
    require_text,
    sha256_hex,
    topic_slug_of,
    ttl_delta,
)


def _same(left: str, right: str) -> bool:
    """Constant-time comparison of ids and token digests (bytes, so that any text is accepted)."""
    return secrets.compare_digest(left.encode("utf-8"), right.encode("utf-8"))


def token_sha256(token: str) -> str:
    """Only a digest of a lease token or a participant secret is stored: whoever can read the database still
    cannot act as the holder."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_secret() -> str:
    """A participant secret or a lease token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class _Joiner:
    """Who asks for a seat: the name it is known by, what it runs, and the secret it presents (if any)."""

    name: str
    harness: str
    model: str
    run_id: str
    secret: str | None


# A released lease keeps its row (``released_at`` set): a claim replaces the row, never inserts beside it.
_UPSERT_LEASE = (
    "INSERT INTO leases (debate_id, holder_id, token_sha256, fencing, acquired_at, expires_at, released_at)"
    " VALUES (?, ?, ?, ?, ?, ?, NULL) ON CONFLICT (debate_id) DO UPDATE SET holder_id = excluded.holder_id,"
    " token_sha256 = excluded.token_sha256, fencing = excluded.fencing, acquired_at = excluded.acquired_at,"
    " expires_at = excluded.expires_at, released_at = NULL"
)


@dataclass(frozen=True)
class ClaimView:
    """What a claim is decided on."""

    debate_id: str
    participant_id: str
    participant_count: int
    fencing: int
    lease: StoredLease | None
    now: datetime


@dataclass(frozen=True)
class _Held:
    """A lease verified inside the current transaction."""

    debate: Debate
    participant_id: str
    fencing: int
    expires_at: str
    now: datetime


class SqlLedger(Ledger):
    dialect: ClassVar[Dialect]
    _FOR_UPDATE: ClassVar[str]
    _SKIP_LOCKED: ClassVar[str]  # appended to the select of a batch line to take, past rows other hosts are taking
    _TABLE_EXISTS: ClassVar[str]  # one parameter: the table name

    def __init__(self, clock: Clock | None) -> None:
        self._clock: Clock = clock or utc_now
        self._lock = threading.RLock()
        self._in_transaction = False
        self._closed = False
        self._version = 0

    # backend seams ---------------------------------------------------------------------------------------

    @abstractmethod
    def _begin(self, write: bool) -> AbstractContextManager[Tx]:
        """A raw transaction: committed when the block ends, rolled back on an exception."""

    @abstractmethod
    def _disconnect(self) -> None: ...

    def _serialize(self, tx: Tx, purpose: str) -> None:
        """Take a transaction-wide lock for ``purpose`` ('migrations', 'events') where the backend needs one."""

    # plumbing ----------------------------------------------------------------------------------------------

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """This connection, for one call (a transaction, or a single statement)."""
        with self._lock:
            if self._closed:
                raise LedgerUnavailableError("This ledger is closed; open a new one with open_ledger().")
            if self._in_transaction:
                raise InvalidInputError(
                    "A ledger call was made inside a guarded_write block; use the guard's own methods there."
                )
            self._in_transaction = True
            try:
                yield
            finally:
                self._in_transaction = False

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Tx]:
        with self._exclusive(), self._begin(write) as tx:
            yield tx

    def _now(self) -> datetime:
        moment = self._clock()
        to_iso(moment)  # refuses naive datetimes
        return moment

    def _migrate(self) -> None:
        # Look first without the write lock: a current schema (the usual case) must not wait for writers.
        with self._transaction(write=False) as tx:
            version = current_version(tx) if tx.one(self._TABLE_EXISTS, ("schema_version",)) else 0
        if version != LATEST_VERSION:
            with self._transaction(write=True) as tx:
                self._serialize(tx, "migrations")
                version = apply_migrations(tx, self.dialect, to_iso(self._now()))
        self._version = version

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._disconnect()

    @property
    def schema_version(self) -> int:
        return self._version

    # row access --------------------------------------------------------------------------------------------

    def _get_debate(self, tx: Tx, debate_id: str, *, lock: bool) -> tuple[Debate, int]:
        row = tx.one(SELECT_DEBATE + " WHERE id = ?" + (self._FOR_UPDATE if lock else ""), (debate_id,))
        if row is None:
            raise NotFoundError(f"No debate with id {debate_id!r} exists; use the duel id that join returned.")
        return debate_from(row)

    @staticmethod
    def _participants(tx: Tx, debate_id: str) -> list[Participant]:
        return [
            participant_from(row)
            for row in tx.all(SELECT_PARTICIPANT + " WHERE debate_id = ? ORDER BY seat", (debate_id,))
        ]

    @staticmethod
    def _member(participants: list[Participant], debate_id: str, participant_id: str) -> Participant:
        found = [p for p in participants if _same(p.id, participant_id)]
        if not found:
            raise NotFoundError(
                f"Participant {participant_id!r} has not joined debate {debate_id}; join it first and use the "
                "participant id join returned."
            )
        return found[0]

    @staticmethod
    def _lease(tx: Tx, debate_id: str) -> StoredLease | None:
        row = tx.one(SELECT_LEASE, (debate_id,))
        return None if row is None else stored_lease_from(row)

    @staticmethod
    def _turns(tx: Tx, debate_id: str) -> list[TurnDigest]:
        return [turn_from(row) for row in tx.all(SELECT_TURN + " WHERE debate_id = ? ORDER BY turn", (debate_id,))]

    @staticmethod
    def _turn_count(tx: Tx, debate_id: str) -> int:
        # turns are contiguous from 1 (record_turn enforces it), so the highest is the count: one index probe
        row = tx.one("SELECT MAX(turn) FROM turns WHERE debate_id = ?", (debate_id,))
        return int(row[0]) if row and row[0] is not None else 0

    @staticmethod
    def _participant_count(tx: Tx, debate_id: str) -> int:
        row = tx.one("SELECT COUNT(*) FROM participants WHERE debate_id = ?", (debate_id,))
        return int(row[0]) if row else 0

    # debates and participants ----------------------------------------------------------------------------

    def _free_artifact_path(self, tx: Tx, artifact_dir: str, slug: str, taken: Callable[[str], bool] | None) -> str:
        """``artifact_dir/YYYY-MM-DD-<slug>.md`` (the local date), with ``-2``, ``-3``, … only on a clash with
        another debate's path or (``taken``) a file already there."""
        stem = os.path.join(artifact_dir, f"{self._now().astimezone().date().isoformat()}-{slug}")
        used = {
            str(row[0]) for row in tx.all("SELECT artifact_path FROM debates WHERE artifact_path LIKE ?", (f"{stem}%",))
        }
        candidate, number = f"{stem}.md", 1
        while candidate in used or (taken is not None and taken(candidate)):
            number += 1
            candidate = f"{stem}-{number}.md"
        return candidate

    def join(
        self,
        *,
        source_path: str | os.PathLike[str],
        topic: str,
        topic_slug: str,
        participant_name: str,
        harness: str,
        model: str,
        run_id: str,
        artifact_dir: str | os.PathLike[str],
        protocol: str = "socratic-duel",
        seats: int = 2,
        artifact_taken: Callable[[str], bool] | None = None,
        source_key: str | None = None,
        source_digest: str | None = None,
        source_text: str | None = None,
        opening: str | None = None,
        participant_secret: str | None = None,
    ) -> JoinResult:
        joiner = self._joiner(participant_name, harness, model, run_id, participant_secret)
        for name, value in (("topic", topic), ("protocol", protocol)):
            require_text(name, value)
        slug = topic_slug_of(topic_slug)
        positive_int("seats", seats, minimum=MIN_PARTICIPANTS)
        if source_key is None:
            source = key = os.path.realpath(os.fspath(source_path))
        else:
            source, key = os.fspath(source_path), require_text("source_key", source_key)
        new_id = uuid.uuid4().hex
        with self._transaction(write=True) as tx:
            artifact = self._free_artifact_path(tx, os.fspath(artifact_dir), slug, artifact_taken)
            tx.run(
                "INSERT INTO debates (id, protocol, source_path, source_key, source_digest, source_text, opening,"
                " topic, topic_slug, artifact_path, status, seats, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (protocol, source_key, topic_slug) WHERE status <> 'closed' DO NOTHING",
                (
                    new_id,
                    protocol,
                    source,
                    key,
                    source_digest,
                    source_text,
                    opening,
                    topic,
                    slug,
                    artifact,
                    DebateState.WAITING.value,
                    seats,
                    to_iso(self._now()),
                ),
            )
            row = tx.one(
                SELECT_DEBATE
                + " WHERE protocol = ? AND source_key = ? AND topic_slug = ? AND status <> 'closed'"
                + self._FOR_UPDATE,
                (protocol, key, slug),
            )
            if row is None:  # pragma: no cover - the insert above or a concurrent one guarantees a row
                raise LedgerUnavailableError("The ledger lost the debate it just created; retry the join.")
            debate, _ = debate_from(row)
            if source_digest is not None and debate.source_digest not in (None, source_digest):
                raise SourceMismatchError(debate.id, debate.source_digest)
            return self._seat(tx, debate, debate.id == new_id, joiner)

    def join_debate(
        self,
        debate_id: str,
        *,
        participant_name: str,
        harness: str,
        model: str,
        run_id: str,
        participant_secret: str | None = None,
    ) -> JoinResult:
        joiner = self._joiner(participant_name, harness, model, run_id, participant_secret)
        with self._transaction(write=True) as tx:
            debate, _ = self._get_debate(tx, debate_id, lock=True)
            if debate.status is DebateState.CLOSED:
                raise DebateClosedError(
                    f"Debate {debate_id} is closed with outcome {debate.outcome}; start a new debate to continue."
                )
            return self._seat(tx, debate, False, joiner)

    @staticmethod
    def _joiner(participant_name: str, harness: str, model: str, run_id: str, secret: str | None) -> _Joiner:
        for name, value in (
            ("participant_name", participant_name),
            ("harness", harness),
            ("model", model),
            ("run_id", run_id),
        ):
            require_text(name, value)
        optional_text("participant_secret", secret)
        return _Joiner(participant_name, harness, model, run_id, secret)

    def _seat(self, tx: Tx, debate: Debate, created: bool, joiner: _Joiner) -> JoinResult:
        """The participant ``joiner.name`` of the locked ``debate``: its existing seat (with its secret), or the
        next free one (with a new secret)."""
        participants = self._participants(tx, debate.id)
        for existing in participants:
            if existing.name == joiner.name:
                secret = self._reseat(tx, debate, existing, joiner.secret)
                return JoinResult(debate, existing, len(participants), created=created, rejoined=True, secret=secret)
        if len(participants) >= debate.seats:
            names = ", ".join(p.name for p in participants)
            raise DebateFullError(
                f"Debate {debate.id} on {debate.topic_slug!r} already has its {debate.seats} participants "
                f"({names}); rejoin with one of those names or wait until it closes."
            )
        participant = Participant(
            id=str(uuid.uuid4()),
            debate_id=debate.id,
            seat=len(participants) + 1,
            name=joiner.name,
            harness=joiner.harness,
            model=joiner.model,
            run_id=joiner.run_id,
            joined_at=to_iso(self._now()),
        )
        secret = new_secret()
        tx.run(
            "INSERT INTO participants (id, debate_id, seat, name, harness, model, run_id, joined_at, secret_sha256)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                participant.id,
                participant.debate_id,
                participant.seat,
                participant.name,
                participant.harness,
                participant.model,
                participant.run_id,
                participant.joined_at,
                token_sha256(secret),
            ),
        )
        count = participant.seat
        status = DebateState.DEBATING if count >= MIN_PARTICIPANTS else DebateState.WAITING
        if status is not debate.status:
            tx.run("UPDATE debates SET status = ? WHERE id = ?", (status.value, debate.id))
            debate = replace(debate, status=status)
        return JoinResult(debate, participant, count, created=created, rejoined=False, secret=secret)

    @staticmethod
    def _stored_secret(tx: Tx, debate_id: str, participant_id: str) -> tuple[bool, str | None]:
        """(whether the participant exists, the SHA-256 of its secret: ``None`` for an older moot's seat)."""
        row = tx.one(
            "SELECT secret_sha256 FROM participants WHERE debate_id = ? AND id = ?", (debate_id, participant_id)
        )
        return (row is not None, None if row is None or row[0] is None else str(row[0]))

    def _reseat(self, tx: Tx, debate: Debate, existing: Participant, given: str | None) -> str | None:
        """A rejoin: refused without the seat's secret; a seat an older moot gave out without one gets one now
        (returned, as for a new seat)."""
        _, stored = self._stored_secret(tx, debate.id, existing.id)
        if stored is None:
            secret = new_secret()
            tx.run("UPDATE participants SET secret_sha256 = ? WHERE id = ?", (token_sha256(secret), existing.id))
            return secret
        if given is None or not _same(stored, token_sha256(given)):
            raise SeatError(
                f"The name {existing.name!r} already holds a seat in debate {debate.id}; rejoin with the participant "
                "secret its first join returned, or join under another name.",
                debate_id=debate.id,
                participant_id=existing.id,
            )
        return None

    def _check_secret(self, tx: Tx, debate_id: str, participant_id: str, secret: object) -> None:
        """Refuse to act as ``participant_id`` without its secret (a participant that never joined is left to the
        caller's own check, which names it)."""
        exists, stored = self._stored_secret(tx, debate_id, participant_id)
        if not exists:
            return
        if stored is None:
            raise SeatError(
                f"Participant {participant_id!r} joined debate {debate_id} before seats had secrets; join again under "
                "its name to get its secret, then retry with it.",
                debate_id=debate_id,
                participant_id=participant_id,
            )
        if not isinstance(secret, str) or not _same(stored, token_sha256(secret)):
            raise SeatError(
                f"That is not the participant secret of {participant_id!r} in debate {debate_id}; pass the secret "
                "its join returned.",
                debate_id=debate_id,
                participant_id=participant_id,
            )

    def get_debate(self, debate_id: str) -> Debate:
        with self._transaction(write=False) as tx:
            return self._get_debate(tx, debate_id, lock=False)[0]

    def find_debate(
        self,
        source_path: str | os.PathLike[str],
        topic_slug: str,
        *,
        protocol: str = "socratic-duel",
        source_key: str | None = None,
        closed: bool = False,
    ) -> Debate | None:
        key = os.path.realpath(os.fspath(source_path)) if source_key is None else source_key
        which = " ORDER BY created_at DESC, id LIMIT 1" if closed else " AND status <> 'closed'"
        with self._transaction(write=False) as tx:
            row = tx.one(
                SELECT_DEBATE + " WHERE protocol = ? AND source_key = ? AND topic_slug = ?" + which,
                (protocol, key, topic_slug),
            )
        return None if row is None else debate_from(row)[0]

    def source_text(self, debate_id: str) -> str | None:
        with self._transaction(write=False) as tx:
            self._get_debate(tx, debate_id, lock=False)
            row = tx.one("SELECT source_text FROM debates WHERE id = ?", (debate_id,))
        return None if row is None or row[0] is None else str(row[0])

    def record(self, debate_id: str) -> DebateRecord:
        with self._transaction(write=False) as tx:
            debate, _ = self._get_debate(tx, debate_id, lock=False)
            return self._record(tx, debate)

    def _record(self, tx: Tx, debate: Debate) -> DebateRecord:
        row = tx.one(SELECT_OPENING_AND_CONCLUSION, (debate.id,))
        opening = None if row is None or row[0] is None else str(row[0])
        conclusion = None if row is None or row[1] is None else conclusion_from(row[1:])
        return DebateRecord(
            debate, tuple(self._participants(tx, debate.id)), tuple(self._turns(tx, debate.id)), conclusion, opening
        )

    @staticmethod
    def _open(tx: Tx, held: _Held, opening: str, *, replace: bool = False) -> None:
        if not isinstance(opening, str):
            raise InvalidInputError("A record's opening files must be JSON text; pass them as a string.")
        unless_held = "" if replace else " AND opening IS NULL"
        tx.run("UPDATE debates SET opening = ? WHERE id = ?" + unless_held, (opening, held.debate.id))

    def status(self, debate_id: str) -> DebateStatus:
        with self._transaction(write=False) as tx:
            debate, fencing = self._get_debate(tx, debate_id, lock=False)
            participants = self._participants(tx, debate_id)
            lease = self._lease(tx, debate_id)
            turn_count = self._turn_count(tx, debate_id)
        view = None
        if lease is not None:
            expired = self._now() >= from_iso(lease.expires_at)
            view = LeaseView(lease.holder_id, lease.expires_at, lease.fencing, expired)
        return DebateStatus(debate, tuple(participants), view, turn_count, fencing)

    # leases ------------------------------------------------------------------------------------------------

    def claim(
        self,
        debate_id: str,
        participant_id: str,
        *,
        participant_secret: str,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        for_timeout: bool = False,
        retry_after_seconds: int = DEFAULT_RETRY_AFTER_SECONDS,
    ) -> Lease | Refusal:
        require_text("participant_id", participant_id)
        require_text("participant_secret", participant_secret)
        ttl = ttl_delta(ttl_seconds)
        retry = positive_int("retry_after_seconds", retry_after_seconds)
        return self._claim(debate_id, participant_id, participant_secret, ttl, for_timeout, retry)

    def _claim(
        self, debate_id: str, participant_id: str, secret: str, ttl: timedelta, for_timeout: bool, retry: int
    ) -> Lease | Refusal:
        # Most claims under contention are refused: decide those from a snapshot, without the write lock,
        # so that pollers never queue in front of the holder's writes. A grant is re-decided under the lock.
        with self._transaction(write=False) as tx:
            view = self._claim_view(tx, debate_id, participant_id, secret, lock=False)
            refusal = self._refusal(view, for_timeout, retry)
        if refusal is not None:
            return refusal
        with self._transaction(write=True) as tx:
            view = self._claim_view(tx, debate_id, participant_id, secret, lock=True)
            refusal = self._refusal(view, for_timeout, retry)
            if refusal is not None:
                return refusal
            fencing = view.fencing + 1
            token = new_secret()
            expires_at = to_iso(view.now + ttl)
            tx.run("UPDATE debates SET fencing = ? WHERE id = ?", (fencing, debate_id))
            tx.run(
                _UPSERT_LEASE,
                (debate_id, view.participant_id, token_sha256(token), fencing, to_iso(view.now), expires_at),
            )
            return Lease(debate_id, view.participant_id, token, expires_at, fencing, view.participant_count)

    def _claim_view(self, tx: Tx, debate_id: str, participant_id: str, secret: str, *, lock: bool) -> ClaimView:
        debate, fencing = self._get_debate(tx, debate_id, lock=lock)
        now = self._now()
        if debate.status is DebateState.CLOSED:
            raise DebateClosedError(
                f"Debate {debate_id} is closed with outcome {debate.outcome}; start a new debate to continue."
            )
        participants = self._participants(tx, debate_id)
        me = self._member(participants, debate_id, participant_id)
        self._check_secret(tx, debate_id, me.id, secret)
        return ClaimView(debate_id, me.id, len(participants), fencing, self._lease(tx, debate_id), now)

    @staticmethod
    def _refusal(view: ClaimView, for_timeout: bool, retry: int) -> Refusal | None:
        lease = view.lease
        if lease is not None and view.now < from_iso(lease.expires_at):
            remaining = math.ceil((from_iso(lease.expires_at) - view.now).total_seconds())
            mine = lease.holder_id == view.participant_id  # only the lease's expiry ends a lost token's lock
            return Refusal(
                view.debate_id,
                "lease_held",
                lease.holder_id,
                lease.expires_at,
                max(1, remaining if mine else min(retry, remaining)),
                view.participant_count,
                claimed_by_holder=mine,
            )
        if view.participant_count < MIN_PARTICIPANTS and not for_timeout:
            return Refusal(view.debate_id, "waiting_for_participant", None, None, retry, view.participant_count)
        return None

    def _check_lease(
        self, tx: Tx, debate_id: str, participant_id: str, lease_token: str, secret: str, fencing_token: int | None
    ) -> _Held:
        """The fencing check (and the holder's secret): run first in every transaction that writes under a lease."""
        if not isinstance(participant_id, str) or not isinstance(lease_token, str):
            raise LeaseError("Pass the participant id and lease token as the strings that join and claim returned.")
        debate, last_fencing = self._get_debate(tx, debate_id, lock=True)
        now = self._now()
        if debate.status is DebateState.CLOSED:
            raise LeaseError(
                f"Debate {debate_id} is closed with outcome {debate.outcome}, so no lease can write to it; "
                "start a new debate to continue."
            )
        self._check_secret(tx, debate_id, participant_id, secret)
        lease = self._lease(tx, debate_id)
        if lease is None:
            raise LeaseError(f"Debate {debate_id} has no active lease; claim the lock before writing.")
        if not (_same(lease.holder_id, participant_id) and _same(lease.token_sha256, token_sha256(lease_token))):
            raise LeaseError(
                f"That token is not the current lease of participant {participant_id!r} on debate {debate_id} "
                "(a peer may have taken it over after it expired); claim the lock again before writing."
            )
        if fencing_token is not None and fencing_token != last_fencing:
            raise LeaseError(
                f"Fencing number {fencing_token} is stale for debate {debate_id} (the current lease has "
                f"{last_fencing}); claim the lock again and write with the fencing number it returns."
            )
        if now >= from_iso(lease.expires_at):
            raise LeaseError(
                f"The lease on debate {debate_id} expired at {lease.expires_at}; claim the lock again before writing."
            )
        return _Held(debate, lease.holder_id, lease.fencing, lease.expires_at, now)

    @staticmethod
    def _audit(tx: Tx, held: _Held, action: LeaseAction) -> None:
        tx.run(
            "INSERT INTO lease_writes (debate_id, fencing, holder_id, action, written_at, lease_expires_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (held.debate.id, held.fencing, held.participant_id, action, to_iso(held.now), held.expires_at),
        )

    def refresh(
        self,
        debate_id: str,
        participant_id: str,
        lease_token: str,
        *,
        participant_secret: str,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
    ) -> Lease:
        return self._refresh(debate_id, participant_id, lease_token, participant_secret, ttl_delta(ttl_seconds))

    def _refresh(self, debate_id: str, participant_id: str, lease_token: str, secret: str, ttl: timedelta) -> Lease:
        with self._transaction(write=True) as tx:
            held = self._check_lease(tx, debate_id, participant_id, lease_token, secret, None)
            expires_at = to_iso(held.now + ttl)
            self._audit(tx, held, "refresh")
            tx.run("UPDATE leases SET expires_at = ? WHERE debate_id = ?", (expires_at, debate_id))
            count = self._participant_count(tx, debate_id)
        return Lease(debate_id, held.participant_id, lease_token, expires_at, held.fencing, count)

    def release(
        self,
        debate_id: str,
        participant_id: str,
        lease_token: str,
        *,
        participant_secret: str,
        close: bool = False,
        outcome: str | None = None,
        reason: str = "",
        summary: str = "",
    ) -> Released:
        if close and outcome is None:
            raise InvalidInputError("Closing a debate needs its outcome; pass outcome, e.g. DISSENT.")
        if not close and outcome is not None:
            raise InvalidInputError("An outcome is stored only when closing; pass close=True with it.")
        if not close:
            self._release(debate_id, participant_id, lease_token, participant_secret)
            return Released(debate_id, False, None)
        with self._transaction(write=True) as tx:
            held = self._check_lease(tx, debate_id, participant_id, lease_token, participant_secret, None)
            if outcome is not None:
                self._conclude(tx, held, outcome, reason, summary)
                tx.run(
                    "UPDATE debates SET status = ?, outcome = ?, closed_at = ? WHERE id = ?",
                    (DebateState.CLOSED.value, outcome, to_iso(held.now), debate_id),
                )
            tx.run("UPDATE leases SET released_at = ? WHERE debate_id = ?", (to_iso(held.now), debate_id))
            self._audit(tx, held, "close")
        return Released(debate_id, close, outcome)

    def _release(self, debate_id: str, participant_id: str, lease_token: str, secret: str) -> None:
        with self._transaction(write=True) as tx:
            held = self._check_lease(tx, debate_id, participant_id, lease_token, secret, None)
            tx.run("UPDATE leases SET released_at = ? WHERE debate_id = ?", (to_iso(held.now), debate_id))
            self._audit(tx, held, "release")

    @contextmanager
    def _guarded(
        self, debate_id: str, participant_id: str, lease_token: str, secret: str, fencing_token: int
    ) -> Iterator[LeaseGuard]:
        if isinstance(fencing_token, bool) or not isinstance(fencing_token, int):
            raise InvalidInputError("fencing_token must be the integer that claim returned; pass it unchanged.")
        with self._transaction(write=True) as tx:
            held = self._check_lease(tx, debate_id, participant_id, lease_token, secret, fencing_token)
            guard = _Guard(self, tx, held)
            try:
                yield guard
            finally:
                guard.end()

    def guarded_write(
        self, debate_id: str, participant_id: str, lease_token: str, fencing_token: int, *, participant_secret: str
    ) -> AbstractContextManager[LeaseGuard]:
        return self._guarded(debate_id, participant_id, lease_token, participant_secret, fencing_token)

    def _conclude(
        self, tx: Tx, held: _Held, outcome: str, reason: str, summary: str, body: str | None = None
    ) -> Conclusion:
        outcome = outcome_name(outcome)
        if not isinstance(reason, str) or not isinstance(summary, str) or not isinstance(body, str | None):
            raise InvalidInputError("reason and summary must be strings; pass text or leave them out.")
        row = tx.one(SELECT_CONCLUSION, (held.debate.id,))
        if row is not None:
            existing = conclusion_from(row)
            if existing.outcome != outcome:
                raise ConflictError(
                    f"Debate {held.debate.id} already concluded with {existing.outcome}; an outcome cannot change, "
                    f"so close with {existing.outcome}."
                )
            if existing.body is None and body is not None:
                tx.run("UPDATE conclusions SET body = ? WHERE debate_id = ?", (body, held.debate.id))
                existing = replace(existing, body=body)
            return existing
        conclusion = Conclusion(
            held.debate.id, outcome, reason, summary, held.participant_id, held.fencing, to_iso(held.now), body
        )
        tx.run(
            "INSERT INTO conclusions (debate_id, outcome, reason, summary, participant_id, fencing, recorded_at,"
            " body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                conclusion.debate_id,
                conclusion.outcome,
                conclusion.reason,
                conclusion.summary,
                conclusion.participant_id,
                conclusion.fencing_token,
                conclusion.recorded_at,
                conclusion.body,
            ),
        )
        self._audit(tx, held, "conclusion")
        return conclusion

    def _record_turn(
        self,
        tx: Tx,
        held: _Held,
        turn: int,
        digest: str,
        chain: str,
        body: str | None = None,
        files: str | None = None,
    ) -> TurnDigest:
        positive_int("turn", turn)
        sha256_hex("digest", digest)
        sha256_hex("chain", chain)
        if body is not None and (
            not isinstance(body, str) or hashlib.sha256(body.encode("utf-8")).hexdigest() != digest
        ):
            raise InvalidInputError(f"The text of turn {turn} does not match its digest; pass the turn's exact text.")
        if not isinstance(files, str | None):
            raise InvalidInputError(f"The files of turn {turn} must be JSON text; pass them as a string.")
        debate_id = held.debate.id
        row = tx.one(SELECT_TURN + " WHERE debate_id = ? AND turn = ?", (debate_id, turn))
        count = self._turn_count(tx, debate_id)
        if row is not None:
            existing = turn_from(row)
            if existing.digest == digest and existing.chain == chain:
                if existing.body is None and body is not None:  # an older moot's row gets its text
                    tx.run("UPDATE turns SET body = ? WHERE debate_id = ? AND turn = ?", (body, debate_id, turn))
                    existing = replace(existing, body=body)
                if existing.files is None and files is not None:
                    tx.run("UPDATE turns SET files = ? WHERE debate_id = ? AND turn = ?", (files, debate_id, turn))
                    existing = replace(existing, files=files)
                return existing
            raise ConflictError(
                f"Turn {turn} of debate {debate_id} is already recorded with a different digest; accepted turns "
                f"cannot change, so re-read the record and append turn {count + 1} instead."
            )
        if turn != count + 1:
            raise InvalidInputError(
                f"Turn {turn} cannot be recorded because debate {debate_id} has {count} turn(s); record turn "
                f"{count + 1} next."
            )
        recorded = TurnDigest(
            debate_id, turn, digest, chain, held.participant_id, held.fencing, to_iso(held.now), body, files
        )
        tx.run(
            "INSERT INTO turns (debate_id, turn, digest, chain, participant_id, fencing, recorded_at, body, files)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                debate_id,
                turn,
                digest,
                chain,
                recorded.participant_id,
                recorded.fencing_token,
                recorded.recorded_at,
                body,
                files,
            ),
        )
        self._audit(tx, held, "turn")
        return recorded

    # records -----------------------------------------------------------------------------------------------

    def turns(self, debate_id: str) -> list[TurnDigest]:
        with self._transaction(write=False) as tx:
            self._get_debate(tx, debate_id, lock=False)
            return self._turns(tx, debate_id)

    def conclusion(self, debate_id: str) -> Conclusion | None:
        with self._transaction(write=False) as tx:
            self._get_debate(tx, debate_id, lock=False)
            row = tx.one(SELECT_CONCLUSION, (debate_id,))
        return None if row is None else conclusion_from(row)

    def lease_writes(self, debate_id: str) -> list[LeaseWrite]:
        with self._transaction(write=False) as tx:
            rows = tx.all(SELECT_LEASE_WRITE, (debate_id,))
        return [lease_write_from(row) for row in rows]

    # events ------------------------------------------------------------------------------------------------

    def append_event(
        self,
        *,
        workflow: str,
        type: str,
        run_id: str,
        step: str,
        data: dict[str, Any],
        unit: str | None = None,
        harness: str | None = None,
        close_run: bool = False,
    ) -> Event:
        for name, value in (("workflow", workflow), ("run_id", run_id), ("step", step)):
            require_text(name, value)
        optional_text("unit", unit)
        optional_text("harness", harness)
        encoded = encoded_event_data(type, data, bool(close_run))
        with self._transaction(write=True) as tx:
            # ids must become visible in id order, or a follower reading after_id=N could miss N-1
            self._serialize(tx, "events")
            closed = tx.one(
                "SELECT id FROM events WHERE run_id = ? AND close_run = ? ORDER BY id LIMIT 1", (run_id, True)
            )
            if closed is not None:
                raise ConflictError(f"Run {run_id!r} was closed by event {closed[0]}; emit with a new run id.")
            created_at = to_iso(self._now())
            row = tx.one(
                "INSERT INTO events (workflow, type, run_id, step, unit, harness, data, close_run, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (workflow, type, run_id, step, unit, harness, encoded, bool(close_run), created_at),
            )
        if row is None:  # pragma: no cover - RETURNING always yields the row
            raise LedgerUnavailableError("The ledger did not return the new event's id; retry.")
        return Event(
            int(row[0]), workflow, type, run_id, step, unit, harness, json.loads(encoded), bool(close_run), created_at
        )

    def read_events(
        self, *, run_id: str | None = None, after_id: int | None = None, limit: int | None = None
    ) -> list[Event]:
        params: list[object] = [0 if after_id is None else positive_int("after_id", after_id, minimum=0)]
        sql = SELECT_EVENT + " WHERE id > ?"
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        sql += " ORDER BY id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(positive_int("limit", limit))
        with self._transaction(write=False) as tx:
            return [event_from(row) for row in tx.all(sql, params)]

    # shared batches ----------------------------------------------------------------------------------------

    def open_batch(self, batch_id: str, name: str, lines: Sequence[int]) -> None:
        with self._transaction(write=True) as tx:
            batches.open_batch(tx, batch_id, name, lines, to_iso(self._now()))

    def claim_batch_line(self, batch_id: str, host: str, lease: timedelta) -> BatchClaim | None:
        with self._transaction(write=True) as tx:
            now = self._now()
            return batches.claim_line(tx, batch_id, host, to_iso(now), to_iso(now + lease), self._SKIP_LOCKED)

    def heartbeat_batch(self, batch_id: str, host: str, lease: timedelta) -> int:
        with self._transaction(write=True) as tx:
            now = self._now()
            return batches.heartbeat(tx, batch_id, host, to_iso(now), to_iso(now + lease))

    def finish_batch_line(self, batch_id: str, host: str, claim: BatchClaim, result: str) -> bool:
        with self._transaction(write=True) as tx:
            return batches.finish_line(tx, batch_id, host, claim, result, to_iso(self._now()))

    def batch_progress(self, batch_id: str) -> BatchProgress:
        with self._transaction(write=False) as tx:
            return batches.progress(tx, batch_id)


class _Guard(LeaseGuard):
    def __init__(self, ledger: SqlLedger, tx: Tx, held: _Held) -> None:
        self._ledger = ledger
        self._tx: Tx | None = tx
        self._held = held

    def end(self) -> None:
        self._tx = None

    def _open_tx(self) -> Tx:
        if self._tx is None:
            raise InvalidInputError("This lease guard's transaction has ended; open a new guarded_write block.")
        return self._tx

    @property
    def lease(self) -> LeaseView:
        return LeaseView(self._held.participant_id, self._held.expires_at, self._held.fencing, expired=False)

    def turns(self) -> list[TurnDigest]:
        return self._ledger._turns(self._open_tx(), self._held.debate.id)

    def turn_count(self) -> int:
        return self._ledger._turn_count(self._open_tx(), self._held.debate.id)

    def record(self) -> DebateRecord:
        return self._ledger._record(self._open_tx(), self._held.debate)

    def record_turn(
        self, turn: int, digest: str, chain: str, *, body: str | None = None, files: str | None = None
    ) -> TurnDigest:
        return self._ledger._record_turn(self._open_tx(), self._held, turn, digest, chain, body, files)

    def open_record(self, opening: str) -> None:
        self._ledger._open(self._open_tx(), self._held, opening)

    def reopen_record(self, opening: str) -> None:
        self._ledger._open(self._open_tx(), self._held, opening, replace=True)

    def conclude(self, outcome: str, *, reason: str = "", summary: str = "", body: str | None = None) -> Conclusion:
        return self._ledger._conclude(self._open_tx(), self._held, outcome, reason, summary, body)

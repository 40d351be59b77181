"""The ledger interface: durable coordination state shared by everyone taking part in a deliberation.

A lease is a hint; safety comes from the fencing check. Every write that needs the lease (a turn digest, a
conclusion, refresh, release) re-checks holder, token, fencing number and expiry *in the same transaction*
as the write, so a participant whose lease expired and was taken over can no longer change anything, however
late its write arrives. Each acquisition gets the next fencing number of the debate; the number lives in
the debate row, so it keeps increasing after leases are released.

Lease rules (the rp1 ``socratic-duel`` lock commands):

- ``claim`` grants a lease when no unexpired lease exists and at least two participants joined; with fewer
  it refuses with ``waiting_for_participant`` (a duel waits for its peer) unless ``for_timeout`` is set,
  which is for the bounded-wait timeout path. An unexpired lease is never taken, not even by its own holder
  (who refreshes with its token instead): participant ids are shown in status, so only the token may
  prove ownership. An expired lease can be taken over by anyone who joined.
- ``refresh`` and ``release`` need the token of an unexpired lease; ``release(close=True)`` also stores the
  outcome and closes the debate. A released or expired token never becomes valid again.
- The store keeps only a SHA-256 of each token, and nothing but ``claim``/``refresh`` returns one.

Seat rules: participant ids are public, so each seat has a secret. The join that seats a participant returns
it once (``JoinResult.secret``) and the store keeps only its SHA-256. Rejoining under a taken name needs it
(``SeatError`` otherwise), and so do ``claim`` and every write under the lease (``refresh``, ``release``,
``guarded_write``), checked in the same transaction. A seat an older moot gave out without a secret is given
one by the next rejoin under its name, and cannot claim or write until then.

Time comes from the injected clock (default: the system clock, UTC). Expiry is judged by the clock of the
process that writes; the fencing check keeps the ledger itself safe whatever the clocks say, but clients
sharing a PostgreSQL ledger from several machines should keep their clocks in sync.

A ``Ledger`` holds one connection; calls from several threads are serialised by a lock. A ledger call made
inside a ``guarded_write`` block is refused (use the guard). Use it as a context manager.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from types import TracebackType
from typing import Any, Self

from moot.ledger.batches import BatchClaim, BatchProgress
from moot.ledger.models import (
    DEFAULT_RETRY_AFTER_SECONDS,
    DEFAULT_TTL_SECONDS,
    Conclusion,
    Debate,
    DebateRecord,
    DebateStatus,
    Event,
    JoinResult,
    Lease,
    LeaseView,
    LeaseWrite,
    Refusal,
    Released,
    TurnDigest,
)


class LeaseGuard(ABC):
    """The writes allowed while ``Ledger.guarded_write`` holds a verified lease, all in its one transaction."""

    @property
    @abstractmethod
    def lease(self) -> LeaseView:
        """The lease this transaction verified."""

    @abstractmethod
    def turns(self) -> list[TurnDigest]:
        """The accepted-turn digests recorded so far, in turn order."""

    @abstractmethod
    def turn_count(self) -> int:
        """How many turn digests are recorded; the next turn is this plus one."""

    @abstractmethod
    def record(self) -> DebateRecord:
        """The debate as this transaction sees it: participants, turns (with their text) and conclusion."""

    @abstractmethod
    def record_turn(
        self, turn: int, digest: str, chain: str, *, body: str | None = None, files: str | None = None
    ) -> TurnDigest:
        """Record accepted turn ``turn`` (the next one): its digest and, when given, its exact text ``body``
        (whose SHA-256 must be ``digest``) and, for a record kept as several files, ``files`` (see
        ``TurnDigest.files``); the same digest again is a no-op that only fills in a missing body or files."""

    @abstractmethod
    def open_record(self, opening: str) -> None:
        """Store the record's opening files (JSON ``{name: text}``) unless the debate already has them."""

    @abstractmethod
    def reopen_record(self, opening: str) -> None:
        """Replace the record's opening files (JSON ``{name: text}``), e.g. a header whose round limit was raised."""

    @abstractmethod
    def conclude(self, outcome: str, *, reason: str = "", summary: str = "", body: str | None = None) -> Conclusion:
        """Record the terminal outcome (and ``body``, the conclusion as the record writes it); the same outcome
        again is a no-op, a different one is refused."""


class Ledger(ABC):
    """Durable coordination state: debates, participants, leases with fencing, turn digests, events."""

    # lifecycle -----------------------------------------------------------------------------------------

    @abstractmethod
    def close(self) -> None:
        """Close the connection; later calls raise ``LedgerUnavailableError``. Closing twice is harmless."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    @abstractmethod
    def schema_version(self) -> int:
        """The version of the applied schema migrations."""

    # debates and participants ----------------------------------------------------------------------------

    @abstractmethod
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
        """Join the active debate of ``protocol`` on (source identity, topic slug), creating it if there is none.

        The source identity is ``source_key`` when given (``source_path`` is then stored as given, for the
        record), else the real path of ``source_path``. ``source_digest`` and ``source_text`` are stored when
        the debate is created, so that a later join can tell whether its copy of the source is the same;
        ``opening`` too (a record kept as several files: JSON ``{name: text}`` of its files before any turn).

        The same name joining again with ``participant_secret`` gets its existing participant back (without it,
        ``SeatError``); a new name gets a new seat and its secret (``JoinResult.secret``), or ``DebateFullError``
        when the debate is full. ``artifact_dir``, ``seats`` and ``artifact_taken`` are used only when
        the debate is created: its artifact path is ``artifact_dir/YYYY-MM-DD-<topic_slug>.md`` (the local
        date), with a suffix ``-2``, ``-3``, … only when another debate has that path or ``artifact_taken``
        says a file is already there.
        """

    @abstractmethod
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
        """Join the open debate ``debate_id`` by its id (same seat rules as ``join``)."""

    @abstractmethod
    def get_debate(self, debate_id: str) -> Debate: ...

    @abstractmethod
    def find_debate(
        self,
        source_path: str | os.PathLike[str],
        topic_slug: str,
        *,
        protocol: str = "socratic-duel",
        source_key: str | None = None,
        closed: bool = False,
    ) -> Debate | None:
        """The debate of ``protocol`` on (``source_key``, else the real source path; topic slug) not closed;
        with ``closed``, the latest one whether closed or not."""

    @abstractmethod
    def source_text(self, debate_id: str) -> str | None:
        """The source document's text as the debate's creator read it (``None`` when not stored)."""

    @abstractmethod
    def record(self, debate_id: str) -> DebateRecord:
        """Debate, participants, turns with their text, and conclusion, from one snapshot."""

    @abstractmethod
    def status(self, debate_id: str) -> DebateStatus:
        """Debate, participants and lease holder; never a lease token."""

    # leases ------------------------------------------------------------------------------------------------

    @abstractmethod
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
        """Acquire the debate's lease with the next fencing number, or say why not and when to retry (a wrong
        ``participant_secret`` raises ``SeatError``)."""

    @abstractmethod
    def refresh(
        self,
        debate_id: str,
        participant_id: str,
        lease_token: str,
        *,
        participant_secret: str,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
    ) -> Lease:
        """Extend an unexpired lease to ``now + ttl``; same token and fencing number."""

    @abstractmethod
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
        """Give the lease back; with ``close`` also record ``outcome`` and close the debate."""

    @abstractmethod
    def guarded_write(
        self, debate_id: str, participant_id: str, lease_token: str, fencing_token: int, *, participant_secret: str
    ) -> AbstractContextManager[LeaseGuard]:
        """A transaction that first verifies the holder's secret (else ``SeatError``) and the lease (holder,
        token, fencing number, expiry), else raises ``LeaseError``; the guard's writes commit together when the block ends and roll back on an exception."""

    # records -----------------------------------------------------------------------------------------------

    @abstractmethod
    def turns(self, debate_id: str) -> list[TurnDigest]: ...

    @abstractmethod
    def conclusion(self, debate_id: str) -> Conclusion | None: ...

    @abstractmethod
    def lease_writes(self, debate_id: str) -> list[LeaseWrite]:
        """The audit log of committed writes made under a lease, in commit order."""

    # events ------------------------------------------------------------------------------------------------

    @abstractmethod
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
        """Validate and append one workflow event; a run that was closed accepts no more events."""

    @abstractmethod
    def read_events(
        self, *, run_id: str | None = None, after_id: int | None = None, limit: int | None = None
    ) -> list[Event]:
        """Events in id order, optionally of one run and only those after ``after_id`` (for followers)."""

    # shared batches (moot.ledger.batches: what each call does and why it is safe) ------------------------------

    @abstractmethod
    def open_batch(self, batch_id: str, name: str, lines: Sequence[int]) -> None:
        """Create the batch ``batch_id`` with these line numbers, waiting, unless it exists already."""

    @abstractmethod
    def claim_batch_line(self, batch_id: str, host: str, lease: timedelta) -> BatchClaim | None:
        """Take the next line that waits or whose lease ran out, for ``lease``; None when none is free."""

    @abstractmethod
    def heartbeat_batch(self, batch_id: str, host: str, lease: timedelta) -> int:
        """Extend to ``lease`` from now every line ``host`` still holds; how many it holds."""

    @abstractmethod
    def finish_batch_line(self, batch_id: str, host: str, claim: BatchClaim, result: str) -> bool:
        """Mark the claimed line done with its JSON row; False when its lease ran out and another host took it."""

    @abstractmethod
    def batch_progress(self, batch_id: str) -> BatchProgress:
        """How many of the batch's lines are done, running and waiting, across every host."""

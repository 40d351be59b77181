"""The records the ledger hands out: frozen dataclasses, JSON-ready through ``dataclasses.asdict``.

Times are ISO-8601 UTC strings of fixed width (``2026-04-25T10:00:00.000000Z``), stored that way in both
backends, so that they compare as text and round-trip exactly. No record except ``Lease`` — which only the
participant that claimed or refreshed it receives — ever carries a lease token, and none but the
``JoinResult`` of the join that seated a participant carries its secret.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

Clock = Callable[[], datetime]
"""Returns the current time as an aware datetime; injected so that expiry is testable without sleeping."""

DEFAULT_TTL_SECONDS = 15 * 60
DEFAULT_RETRY_AFTER_SECONDS = 30
MIN_PARTICIPANTS = 2
"""A debate needs a peer: an ordinary claim waits until this many participants joined."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("the ledger clock must return timezone-aware datetimes")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_iso(text: str) -> datetime:
    return datetime.fromisoformat(text)


class DebateState(StrEnum):
    WAITING = "waiting_for_participant"
    DEBATING = "debating"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Debate:
    id: str
    protocol: str
    source_path: str
    topic: str
    topic_slug: str
    artifact_path: str
    status: DebateState
    outcome: str | None
    seats: int
    created_at: str
    closed_at: str | None
    source_key: str = ""
    """What makes two joins meet: a path relative to the repository root, or ``sha256:<digest>`` of the
    content (a ledger from an older moot: the real path)."""
    source_digest: str | None = None
    """SHA-256 of the source's text when the debate was created (``None``: an older moot created it)."""


@dataclass(frozen=True, slots=True)
class Participant:
    id: str
    debate_id: str
    seat: int
    name: str
    harness: str
    model: str
    run_id: str
    joined_at: str


@dataclass(frozen=True, slots=True)
class JoinResult:
    debate: Debate
    participant: Participant
    participant_count: int
    created: bool
    """This join created the debate."""
    rejoined: bool
    """The name had joined before; the existing participant is returned unchanged."""
    secret: str | None = field(default=None, repr=False)
    """The participant's secret, only from the join that seated it (a new seat, or a seat an older moot gave out
    without one): the credential for rejoining, claiming and every write under the lease. Only its SHA-256 is
    stored, so it is never shown again."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A granted lease. The token is the credential for refresh, release and guarded writes."""

    debate_id: str
    participant_id: str
    lease_token: str = field(repr=False)
    lease_expires_at: str
    fencing_token: int
    participant_count: int


RefusalReason = Literal["lease_held", "waiting_for_participant"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A claim that cannot be granted now; retry after ``retry_after_seconds``."""

    debate_id: str
    reason: RefusalReason
    holder_participant_id: str | None
    lease_expires_at: str | None
    retry_after_seconds: int
    participant_count: int
    claimed_by_holder: bool = False
    """The claimer already holds the lease: it lost its token, or forgot that it holds the lock."""

    @property
    def message(self) -> str:
        if self.reason == "lease_held" and self.claimed_by_holder:
            return (
                f"You (participant {self.holder_participant_id}) already hold the lock of debate {self.debate_id} "
                f"until {self.lease_expires_at}; use the lease token claim-lock printed, or if it is lost, claim "
                f"again after {self.retry_after_seconds} s, when the lease expires and the lost token stops working."
            )
        if self.reason == "lease_held":
            return (
                f"The lock of debate {self.debate_id} is held by participant {self.holder_participant_id} until "
                f"{self.lease_expires_at}; wait about {self.retry_after_seconds} s and claim again."
            )
        return (
            f"Debate {self.debate_id} has {self.participant_count} participant(s) and needs a peer; wait about "
            f"{self.retry_after_seconds} s for one to join, or claim again with --for-timeout (for_timeout over "
            "MCP) once the bounded wait is over."
        )


@dataclass(frozen=True, slots=True)
class LeaseView:
    """What anyone may see of a lease: never its token."""

    holder_participant_id: str
    lease_expires_at: str
    fencing_token: int
    expired: bool


@dataclass(frozen=True, slots=True)
class DebateStatus:
    debate: Debate
    participants: tuple[Participant, ...]
    lease: LeaseView | None
    """The current lease; ``None`` when released. An expired lease is shown (``expired=True``) until taken over."""
    turn_count: int
    last_fencing_token: int
    """The fencing number of the most recent acquisition (0 before the first)."""

    @property
    def participant_count(self) -> int:
        return len(self.participants)


@dataclass(frozen=True, slots=True)
class Released:
    debate_id: str
    closed: bool
    outcome: str | None


@dataclass(frozen=True, slots=True)
class TurnDigest:
    debate_id: str
    turn: int
    digest: str
    chain: str
    participant_id: str
    fencing_token: int
    recorded_at: str
    body: str | None = None
    """The turn's exact text as the record holds it (``None``: recorded by an older moot, digest only)."""
    files: str | None = None
    """For a record kept as several files: JSON ``{"file": name, "also": {name: text}}``, the file that holds
    ``body`` and the other files this turn rewrote (``None`` for a one-file record)."""


@dataclass(frozen=True, slots=True)
class Conclusion:
    debate_id: str
    outcome: str
    reason: str
    summary: str
    participant_id: str
    fencing_token: int
    recorded_at: str
    body: str | None = None
    """The conclusion exactly as the record writes it (``None``: none stored)."""


@dataclass(frozen=True, slots=True)
class DebateRecord:
    """Everything a host needs to write a debate's record: one consistent snapshot of the ledger."""

    debate: Debate
    participants: tuple[Participant, ...]
    turns: tuple[TurnDigest, ...]
    conclusion: Conclusion | None
    opening: str | None = None
    """For a record kept as several files: JSON ``{name: text}`` of its files before the first turn."""


LeaseAction = Literal["turn", "conclusion", "refresh", "release", "close"]


@dataclass(frozen=True, slots=True)
class LeaseWrite:
    """One committed write made under a lease, recorded in the same transaction (the fencing audit log)."""

    id: int
    debate_id: str
    fencing_token: int
    holder_participant_id: str
    action: LeaseAction
    written_at: str
    lease_expires_at: str


EVENT_TYPES = frozenset(
    {
        # the agent-facing workflow events (rp1 ``agent-tools emit``)
        "status_change",
        "artifact_registered",
        "btw_update",
        # the engine's own
        "turn_accepted",
        "turn_rejected",
        "outcome",
    }
)
RUN_STATUSES = frozenset({"running", "waiting", "completed", "failed"})


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    """Strictly increasing in commit order, so ``read_events(after_id=last_seen)`` never skips one."""
    workflow: str
    type: str
    run_id: str
    step: str
    unit: str | None
    harness: str | None
    data: dict[str, Any]
    close_run: bool
    created_at: str

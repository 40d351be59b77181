"""moot's ledger: durable coordination state — debates, participants, leases with fencing, accepted-turn
digests, conclusions and workflow events — on SQLite (default, ``<work root>/.moot/moot.db``) or PostgreSQL.

    with open_ledger(work_root_or_url) as ledger:
        joined = ledger.join(source_path=..., topic=..., topic_slug=..., participant_name=..., harness=...,
                             model=..., run_id=..., artifact_dir=...)
        secret = joined.secret          # returned once; keep it to rejoin, claim and write
        lease = ledger.claim(joined.debate.id, joined.participant.id, participant_secret=secret)
        if isinstance(lease, Lease):
            with ledger.guarded_write(lease.debate_id, lease.participant_id, lease.lease_token,
                                      lease.fencing_token, participant_secret=secret) as guard:
                guard.record_turn(1, digest, chain)
            ledger.release(lease.debate_id, lease.participant_id, lease.lease_token, participant_secret=secret)

See ``moot.ledger.base`` for the lease and seat rules; its errors are defined in ``moot.errors``.
"""

from moot.core.ledger_place import DEFAULT_DB
from moot.errors import (
    ConflictError,
    DebateClosedError,
    DebateFullError,
    InvalidInputError,
    LeaseError,
    LedgerError,
    LedgerUnavailableError,
    NotFoundError,
    SeatError,
    SourceMismatchError,
)
from moot.ledger.base import LeaseGuard, Ledger
from moot.ledger.factory import ledger_path, open_ledger
from moot.ledger.migrations import LATEST_VERSION
from moot.ledger.models import (
    DEFAULT_RETRY_AFTER_SECONDS,
    DEFAULT_TTL_SECONDS,
    EVENT_TYPES,
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
    LeaseView,
    LeaseWrite,
    Participant,
    Refusal,
    Released,
    TurnDigest,
)

__all__ = [
    "DEFAULT_DB",
    "DEFAULT_RETRY_AFTER_SECONDS",
    "DEFAULT_TTL_SECONDS",
    "EVENT_TYPES",
    "LATEST_VERSION",
    "MIN_PARTICIPANTS",
    "Clock",
    "Conclusion",
    "ConflictError",
    "Debate",
    "DebateClosedError",
    "DebateFullError",
    "DebateRecord",
    "DebateState",
    "DebateStatus",
    "Event",
    "InvalidInputError",
    "JoinResult",
    "Lease",
    "LeaseError",
    "LeaseGuard",
    "LeaseView",
    "LeaseWrite",
    "Ledger",
    "LedgerError",
    "LedgerUnavailableError",
    "NotFoundError",
    "Participant",
    "Refusal",
    "Released",
    "SeatError",
    "SourceMismatchError",
    "TurnDigest",
    "ledger_path",
    "open_ledger",
]

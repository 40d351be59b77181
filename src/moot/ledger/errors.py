"""The ledger's errors; every message is one sentence that names the fix.

    MootError
    ├── UserError
    │   └── LedgerError              a refusal the caller can act on
    │       ├── LeaseError           a write that needs the lease was refused (token, fencing number, expiry)
    │       ├── SeatError            a seat was rejoined, claimed or written to without its participant secret
    │       ├── NotFoundError        unknown debate or participant
    │       ├── DebateFullError      a third participant tried to join a duel
    │       ├── DebateClosedError    the debate already has its outcome
    │       ├── ConflictError        a different value for something already accepted (turn digest, outcome)
    │       │   └── SourceMismatchError  a join's copy of the source differs from the debate's
    │       └── InvalidInputError    a malformed argument (event type, event data, ttl, outcome …)
    └── LedgerUnavailableError       the store cannot be opened, is locked too long, or is newer than this moot

A claim that cannot be granted *now* is not an error: ``Ledger.claim`` returns a ``Refusal``.
"""

from __future__ import annotations

from moot.errors import MootError, UserError


class LedgerError(UserError):
    """A ledger refusal the caller can act on."""


class LeaseError(LedgerError):
    """A write that needs the lease was refused: wrong token, stale fencing number, or expired lease."""


class SeatError(LedgerError):
    """A participant's seat was rejoined, claimed or written to without the secret its join returned."""

    def __init__(self, message: str, *, debate_id: str, participant_id: str) -> None:
        super().__init__(message)
        self.debate_id = debate_id
        self.participant_id = participant_id


class NotFoundError(LedgerError):
    """The debate or participant does not exist."""


class DebateFullError(LedgerError):
    """The debate already has all its participants."""


class DebateClosedError(LedgerError):
    """The debate is closed; nothing more can be claimed or written."""


class ConflictError(LedgerError):
    """An accepted value (turn digest, outcome) would change."""


class SourceMismatchError(ConflictError):
    """A join's copy of the source document differs from the one the debate was created with."""

    def __init__(self, debate_id: str, digest: str) -> None:
        super().__init__(
            f"Debate {debate_id} was started on a different version of this source (SHA-256 {digest[:12]}…); "
            "use the same version of the source document."
        )
        self.debate_id = debate_id
        self.digest = digest


class InvalidInputError(LedgerError):
    """An argument is malformed."""


class LedgerUnavailableError(MootError):
    """The store cannot be used: unreachable, locked for too long, or migrated by a newer moot."""

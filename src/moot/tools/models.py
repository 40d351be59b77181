"""What the agent tools return: frozen pydantic models, printed as JSON by the CLI and returned by MCP.

No model here carries a lease token except :class:`LockGranted`, which only ``claim`` and ``refresh``
return to the participant that holds the lease.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from moot.ledger import DebateStatus, Event, LeaseView
from moot.ledger import Participant as LedgerParticipant

NextStep = Literal["waiting_for_participant", "debating", "closing", "completed", "invalidated"]

# A result model's validator is built when a call first returns one, not when the module loads: an agent's
# every-turn command returns one kind of result and should not pay for the others.
_FROZEN = ConfigDict(frozen=True, defer_build=True)


class ParticipantView(BaseModel):
    model_config = _FROZEN

    participant_id: str
    name: str
    harness: str
    model_id: str
    seat: int
    joined_at: str

    @classmethod
    def of(cls, participant: LedgerParticipant) -> ParticipantView:
        return cls(
            participant_id=participant.id,
            name=participant.name,
            harness=participant.harness,
            model_id=participant.model,
            seat=participant.seat,
            joined_at=participant.joined_at,
        )


class LockView(BaseModel):
    """Who holds a lock and until when; never its token."""

    model_config = _FROZEN

    holder_participant_id: str
    lease_expires_at: str
    fencing_token: int
    expired: bool

    @classmethod
    def of(cls, lease: LeaseView | None) -> LockView | None:
        if lease is None:
            return None
        return cls(
            holder_participant_id=lease.holder_participant_id,
            lease_expires_at=lease.lease_expires_at,
            fencing_token=lease.fencing_token,
            expired=lease.expired,
        )


def participants_of(status: DebateStatus) -> list[ParticipantView]:
    return [ParticipantView.of(p) for p in status.participants]


class LockGranted(BaseModel):
    """A granted lease: the token is the credential for every write until it expires or is released."""

    model_config = _FROZEN

    acquired: bool = True
    duel_id: str
    participant_id: str
    lease_token: str
    lease_expires_at: str
    fencing_token: int
    participant_count: int
    next_step: NextStep


class Released(BaseModel):
    model_config = _FROZEN

    released: bool = True
    duel_id: str
    closed: bool
    outcome: str | None
    debate_path: str
    next_step: NextStep


class EventView(BaseModel):
    model_config = _FROZEN

    id: int
    workflow: str
    type: str
    run_id: str
    step: str
    unit: str | None
    harness: str | None
    data: dict[str, Any]
    close_run: bool
    created_at: str

    @classmethod
    def of(cls, event: Event) -> EventView:
        return cls(
            id=event.id,
            workflow=event.workflow,
            type=event.type,
            run_id=event.run_id,
            step=event.step,
            unit=event.unit,
            harness=event.harness,
            data=event.data,
            close_run=event.close_run,
            created_at=event.created_at,
        )


class EventList(BaseModel):
    model_config = _FROZEN

    events: list[EventView]
    last_id: int | None

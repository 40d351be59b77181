"""The ledger's SELECT statements and the decoding of their rows into records (shared by both backends)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from moot.errors import LedgerUnavailableError
from moot.ledger.models import Conclusion, Debate, DebateState, Event, LeaseWrite, Participant, TurnDigest
from moot.ledger.sqltx import Row

SELECT_DEBATE = (
    "SELECT id, protocol, source_path, topic, topic_slug, artifact_path, status, outcome, seats, created_at,"
    " closed_at, fencing, source_key, source_digest FROM debates"
)
SELECT_PARTICIPANT = "SELECT id, debate_id, seat, name, harness, model, run_id, joined_at FROM participants"
SELECT_LEASE = (
    "SELECT holder_id, token_sha256, fencing, acquired_at, expires_at FROM leases"
    " WHERE debate_id = ? AND released_at IS NULL"
)
SELECT_TURN = "SELECT debate_id, turn, digest, chain, participant_id, fencing, recorded_at, body, files FROM turns"
SELECT_CONCLUSION = (
    "SELECT debate_id, outcome, reason, summary, participant_id, fencing, recorded_at, body FROM conclusions"
    " WHERE debate_id = ?"
)
# A debate's opening files and its conclusion (if any), in one round trip: what a record is written from.
SELECT_OPENING_AND_CONCLUSION = (
    "SELECT d.opening, c.debate_id, c.outcome, c.reason, c.summary, c.participant_id, c.fencing, c.recorded_at,"
    " c.body FROM debates d LEFT JOIN conclusions c ON c.debate_id = d.id WHERE d.id = ?"
)
SELECT_LEASE_WRITE = (
    "SELECT id, debate_id, fencing, holder_id, action, written_at, lease_expires_at FROM lease_writes"
    " WHERE debate_id = ? ORDER BY id"
)
SELECT_EVENT = "SELECT id, workflow, type, run_id, step, unit, harness, data, close_run, created_at FROM events"


def decode_json(value: object) -> dict[str, Any]:
    decoded = json.loads(value) if isinstance(value, str | bytes) else value  # JSONB arrives decoded
    if not isinstance(decoded, dict):
        raise LedgerUnavailableError("An event in the ledger holds data that is not a JSON object; repair the row.")
    return decoded


def debate_from(row: Row) -> tuple[Debate, int]:
    debate = Debate(
        id=row[0],
        protocol=row[1],
        source_path=row[2],
        topic=row[3],
        topic_slug=row[4],
        artifact_path=row[5],
        status=DebateState(row[6]),
        outcome=row[7],
        seats=int(row[8]),
        created_at=row[9],
        closed_at=row[10],
        source_key=row[12],
        source_digest=row[13],
    )
    return debate, int(row[11])


def participant_from(row: Row) -> Participant:
    return Participant(
        id=row[0],
        debate_id=row[1],
        seat=int(row[2]),
        name=row[3],
        harness=row[4],
        model=row[5],
        run_id=row[6],
        joined_at=row[7],
    )


def turn_from(row: Row) -> TurnDigest:
    return TurnDigest(
        debate_id=row[0],
        turn=int(row[1]),
        digest=row[2],
        chain=row[3],
        participant_id=row[4],
        fencing_token=int(row[5]),
        recorded_at=row[6],
        body=row[7],
        files=row[8],
    )


def conclusion_from(row: Row) -> Conclusion:
    return Conclusion(
        debate_id=row[0],
        outcome=row[1],
        reason=row[2],
        summary=row[3],
        participant_id=row[4],
        fencing_token=int(row[5]),
        recorded_at=row[6],
        body=row[7],
    )


def event_from(row: Row) -> Event:
    return Event(
        id=int(row[0]),
        workflow=row[1],
        type=row[2],
        run_id=row[3],
        step=row[4],
        unit=row[5],
        harness=row[6],
        data=decode_json(row[7]),
        close_run=bool(row[8]),
        created_at=row[9],
    )


@dataclass(frozen=True)
class StoredLease:
    holder_id: str
    token_sha256: str
    fencing: int
    acquired_at: str
    expires_at: str


def lease_write_from(row: Row) -> LeaseWrite:
    return LeaseWrite(int(row[0]), row[1], int(row[2]), row[3], row[4], row[5], row[6])


def stored_lease_from(row: Row) -> StoredLease:
    return StoredLease(row[0], row[1], int(row[2]), row[3], row[4])

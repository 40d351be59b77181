"""Conformance: seats with secrets — a participant id is public, so rejoining, claiming and every write under
the lease need the secret the seat's join returned once (both backends)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from ledger_helpers import Duel, Store, granted, join, raw_transaction, secret_of

from moot.errors import SeatError
from moot.ledger import DebateState, Lease, Ledger
from moot.ledger.migrations import apply_migrations


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_new_seat_gets_a_secret_once_and_a_rejoin_under_its_name_needs_it(ledger: Ledger, tmp_path: Path) -> None:
    alice = join(ledger, tmp_path, "alice")
    assert alice.secret is not None and len(alice.secret) >= 40
    assert alice.secret not in repr(alice)

    for wrong in (None, "guess", secret_of(join(ledger, tmp_path, "bob").participant.id)):
        with pytest.raises(SeatError, match=r"already holds a seat in debate .*; rejoin with the participant secret"):
            join(ledger, tmp_path, "alice", secret=wrong)

    again = join(ledger, tmp_path, "alice", secret=alice.secret)
    assert again.rejoined and again.participant == alice.participant and again.secret is None
    assert ledger.status(alice.debate.id).participant_count == 2


def test_a_participant_id_read_from_status_cannot_claim_without_its_secret(ledger: Ledger, duel: Duel) -> None:
    public = ledger.status(duel.debate_id).participants[0].id  # alice's id, as anyone sees it

    with pytest.raises(SeatError, match="not the participant secret"):
        ledger.claim(duel.debate_id, public, participant_secret=secret_of(duel.bob))
    assert ledger.status(duel.debate_id).lease is None

    lease = granted(ledger.claim(duel.debate_id, public, participant_secret=secret_of(duel.alice)))
    assert lease.participant_id == duel.alice


def test_a_leaked_lease_token_writes_nothing_without_the_holders_secret(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    stolen = (duel.debate_id, duel.alice, lease.lease_token)  # e.g. read from the process list
    wrong = secret_of(duel.bob)

    with (
        pytest.raises(SeatError, match="not the participant secret"),
        ledger.guarded_write(*stolen, lease.fencing_token, participant_secret=wrong) as guard,
    ):
        guard.record_turn(1, digest("forged"), digest("chain"))
    with pytest.raises(SeatError):
        ledger.refresh(*stolen, participant_secret=wrong)
    with pytest.raises(SeatError):
        ledger.release(*stolen, participant_secret=wrong)
    with pytest.raises(SeatError):
        ledger.release(*stolen, participant_secret=wrong, close=True, outcome="DISSENT")

    status = ledger.status(duel.debate_id)
    assert status.turn_count == 0 and status.debate.status is not DebateState.CLOSED
    assert status.lease is not None and status.lease.lease_expires_at == lease.lease_expires_at
    assert [w.action for w in ledger.lease_writes(duel.debate_id)] == []
    with ledger.guarded_write(*stolen, lease.fencing_token, participant_secret=secret_of(duel.alice)) as guard:
        guard.record_turn(1, digest("one"), digest("chain"))
    assert ledger.turns(duel.debate_id)[0].participant_id == duel.alice


def test_the_store_keeps_only_a_digest_of_each_secret(store: Store, ledger: Ledger, duel: Duel) -> None:
    with raw_transaction(store) as tx:
        rows = tx.all("SELECT id, secret_sha256 FROM participants ORDER BY seat")

    secrets = [secret_of(duel.alice), secret_of(duel.bob)]
    assert [(row[0], row[1]) for row in rows] == [
        (duel.alice, digest(secrets[0])),
        (duel.bob, digest(secrets[1])),
    ]
    assert not any(secret in repr(rows) for secret in secrets)


def test_a_seat_an_older_moot_gave_out_is_taken_by_the_next_rejoin(store: Store, tmp_path: Path) -> None:
    dialect = "sqlite" if store.backend == "sqlite" else "postgres"
    with raw_transaction(store) as tx:
        assert apply_migrations(tx, dialect, "t", target=4) == 4
        tx.run(
            "INSERT INTO debates (id, protocol, source_path, source_key, topic, topic_slug, artifact_path, status,"
            " seats, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("old", "socratic-duel", "a.md", "a.md", "A", "a", "debates/a.md", "debating", 2, "2026-01-01T00:00:00Z"),
        )
        for seat, name in ((1, "alice"), (2, "bob")):
            tx.run(
                "INSERT INTO participants (id, debate_id, seat, name, harness, model, run_id, joined_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (f"p{seat}", "old", seat, name, "codex", "m", "r", "2026-01-01T00:00:00Z"),
            )
    ledger = store.open()

    with pytest.raises(SeatError, match="before seats had secrets; join again under its name"):
        ledger.claim("old", "p1", participant_secret="anything")

    def rejoin(secret: str | None = None) -> str | None:
        again = ledger.join_debate(
            "old", participant_name="alice", harness="codex", model="m", run_id="r", participant_secret=secret
        )
        assert again.rejoined and again.participant.id == "p1"
        return again.secret

    taken = rejoin()
    assert taken is not None
    with pytest.raises(SeatError):
        rejoin()  # taken now: the next one needs the secret
    assert rejoin(taken) is None
    assert isinstance(ledger.claim("old", "p1", participant_secret=taken), Lease)

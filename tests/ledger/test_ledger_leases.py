"""Conformance: leases with fencing — claim, refresh, release, takeover (both backends, injected clock)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

import pytest
from ledger_helpers import Duel, FakeClock, Store, granted, join, raw_transaction, secret_of

from moot.errors import ConflictError, DebateClosedError, InvalidInputError, LeaseError
from moot.ledger import DEFAULT_TTL_SECONDS, DebateState, Ledger, Refusal
from moot.ledger.models import to_iso


def test_an_ordinary_claim_waits_for_the_peer(ledger: Ledger, tmp_path: Path) -> None:
    alice = join(ledger, tmp_path, "alice")

    refusal = ledger.claim(alice.debate.id, alice.participant.id, participant_secret=secret_of(alice.participant.id))

    assert isinstance(refusal, Refusal)
    assert refusal.reason == "waiting_for_participant"
    assert refusal.holder_participant_id is None
    assert refusal.retry_after_seconds == 30
    assert refusal.participant_count == 1
    assert "needs a peer" in refusal.message
    assert ledger.status(alice.debate.id).lease is None


def test_a_timeout_claim_takes_the_lease_without_a_peer(ledger: Ledger, tmp_path: Path, clock: FakeClock) -> None:
    alice = join(ledger, tmp_path, "alice")

    lease = granted(
        ledger.claim(
            alice.debate.id, alice.participant.id, for_timeout=True, participant_secret=secret_of(alice.participant.id)
        )
    )

    assert lease.participant_count == 1
    assert lease.fencing_token == 1
    assert lease.lease_expires_at == to_iso(clock.now + timedelta(seconds=DEFAULT_TTL_SECONDS))


def test_a_timeout_claim_still_refuses_while_the_peer_holds_an_unexpired_lease(
    ledger: Ledger, duel: Duel, clock: FakeClock
) -> None:
    held = granted(ledger.claim(duel.debate_id, duel.bob, participant_secret=secret_of(duel.bob)))
    clock.advance(DEFAULT_TTL_SECONDS - 1)

    refusal = ledger.claim(duel.debate_id, duel.alice, for_timeout=True, participant_secret=secret_of(duel.alice))

    assert isinstance(refusal, Refusal)
    assert refusal.reason == "lease_held"
    assert refusal.holder_participant_id == duel.bob
    assert refusal.lease_expires_at == held.lease_expires_at
    assert refusal.retry_after_seconds == 1  # never longer than the lease has left
    assert held.lease_token not in json.dumps(asdict(refusal))


def test_a_claim_grants_an_unguessable_token_an_expiry_and_a_fencing_number(
    ledger: Ledger, duel: Duel, clock: FakeClock
) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, ttl_seconds=60, participant_secret=secret_of(duel.alice)))

    assert lease.participant_id == duel.alice
    assert lease.fencing_token == 1
    assert len(lease.lease_token) >= 40
    assert lease.lease_expires_at == to_iso(clock.now + timedelta(seconds=60))
    assert lease.lease_token not in repr(lease)


def test_the_retry_hint_defaults_to_30_seconds(ledger: Ledger, duel: Duel) -> None:
    granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    refusal = ledger.claim(duel.debate_id, duel.bob, participant_secret=secret_of(duel.bob))

    assert isinstance(refusal, Refusal) and refusal.retry_after_seconds == 30
    assert "held by participant" in refusal.message


def test_even_the_holder_cannot_reclaim_an_unexpired_lease(ledger: Ledger, duel: Duel) -> None:
    granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    refusal = ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice))

    assert isinstance(refusal, Refusal)
    assert refusal.reason == "lease_held" and refusal.holder_participant_id == duel.alice


def test_an_expired_lease_is_taken_over_with_a_higher_fencing_number(
    ledger: Ledger, duel: Duel, clock: FakeClock
) -> None:
    old = granted(ledger.claim(duel.debate_id, duel.alice, ttl_seconds=60, participant_secret=secret_of(duel.alice)))
    clock.advance(60)

    new = granted(ledger.claim(duel.debate_id, duel.bob, participant_secret=secret_of(duel.bob)))

    assert new.fencing_token == old.fencing_token + 1
    assert new.lease_token != old.lease_token
    view = ledger.status(duel.debate_id).lease
    assert view is not None and view.holder_participant_id == duel.bob
    with pytest.raises(LeaseError, match=r"may have taken it over after it expired\); claim the lock again"):
        ledger.refresh(duel.debate_id, duel.alice, old.lease_token, participant_secret=secret_of(duel.alice))
    with pytest.raises(LeaseError):
        ledger.release(duel.debate_id, duel.alice, old.lease_token, participant_secret=secret_of(duel.alice))
    with (
        pytest.raises(LeaseError),
        ledger.guarded_write(
            duel.debate_id, duel.alice, old.lease_token, old.fencing_token, participant_secret=secret_of(duel.alice)
        ) as guard,
    ):
        guard.record_turn(1, "a" * 64, "b" * 64)
    assert ledger.turns(duel.debate_id) == []


def test_fencing_numbers_keep_increasing_across_releases(ledger: Ledger, duel: Duel) -> None:
    numbers = []
    for participant in (duel.alice, duel.bob, duel.alice):
        lease = granted(ledger.claim(duel.debate_id, participant, participant_secret=secret_of(participant)))
        numbers.append(lease.fencing_token)
        ledger.release(duel.debate_id, participant, lease.lease_token, participant_secret=secret_of(participant))

    assert numbers == [1, 2, 3]
    status = ledger.status(duel.debate_id)
    assert status.lease is None and status.last_fencing_token == 3


def test_fencing_numbers_are_per_debate(ledger: Ledger, tmp_path: Path) -> None:
    caching = join(ledger, tmp_path, "alice")
    naming = join(ledger, tmp_path, "alice", slug="naming")

    first = granted(
        ledger.claim(
            caching.debate.id,
            caching.participant.id,
            for_timeout=True,
            participant_secret=secret_of(caching.participant.id),
        )
    )
    second = granted(
        ledger.claim(
            naming.debate.id,
            naming.participant.id,
            for_timeout=True,
            participant_secret=secret_of(naming.participant.id),
        )
    )

    assert first.fencing_token == second.fencing_token == 1


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), float("inf"), 8 * 24 * 3600, True])
def test_a_bad_ttl_is_refused(ledger: Ledger, duel: Duel, ttl: float) -> None:
    with pytest.raises(InvalidInputError, match="ttl_seconds must be"):
        ledger.claim(duel.debate_id, duel.alice, ttl_seconds=ttl, participant_secret=secret_of(duel.alice))


def test_refresh_extends_the_lease_from_now(ledger: Ledger, duel: Duel, clock: FakeClock) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, ttl_seconds=60, participant_secret=secret_of(duel.alice)))
    clock.advance(50)

    refreshed = ledger.refresh(
        duel.debate_id, duel.alice, lease.lease_token, ttl_seconds=60, participant_secret=secret_of(duel.alice)
    )
    clock.advance(50)  # past the original expiry

    assert refreshed.lease_expires_at == to_iso(clock.now + timedelta(seconds=10))
    assert (refreshed.lease_token, refreshed.fencing_token) == (lease.lease_token, lease.fencing_token)
    with ledger.guarded_write(
        duel.debate_id, duel.alice, lease.lease_token, lease.fencing_token, participant_secret=secret_of(duel.alice)
    ) as guard:
        guard.record_turn(1, "a" * 64, "b" * 64)
    assert isinstance(ledger.claim(duel.debate_id, duel.bob, participant_secret=secret_of(duel.bob)), Refusal)


def test_refresh_needs_the_token_of_an_unexpired_lease(ledger: Ledger, duel: Duel, clock: FakeClock) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, ttl_seconds=60, participant_secret=secret_of(duel.alice)))

    with pytest.raises(LeaseError, match="not the current lease"):
        ledger.refresh(duel.debate_id, duel.alice, "guess", participant_secret=secret_of(duel.alice))
    clock.advance(60)
    with pytest.raises(LeaseError, match=r"expired at .*; claim the lock again"):
        ledger.refresh(duel.debate_id, duel.alice, lease.lease_token, participant_secret=secret_of(duel.alice))


def test_release_frees_the_lease_for_the_peer(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    released = ledger.release(duel.debate_id, duel.alice, lease.lease_token, participant_secret=secret_of(duel.alice))

    assert not released.closed and released.outcome is None
    assert ledger.status(duel.debate_id).lease is None
    assert granted(ledger.claim(duel.debate_id, duel.bob, participant_secret=secret_of(duel.bob))).fencing_token == 2
    with pytest.raises(LeaseError):  # a released token stays dead
        ledger.refresh(duel.debate_id, duel.alice, lease.lease_token, participant_secret=secret_of(duel.alice))


def test_nobody_releases_another_participants_lease(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    with pytest.raises(LeaseError):
        ledger.release(duel.debate_id, duel.bob, lease.lease_token, participant_secret=secret_of(duel.bob))
    with pytest.raises(LeaseError):
        ledger.release(
            duel.debate_id, duel.alice, lease.lease_token[:-1] + "x", participant_secret=secret_of(duel.alice)
        )

    view = ledger.status(duel.debate_id).lease
    assert view is not None and view.holder_participant_id == duel.alice


def test_closing_stores_the_outcome_and_ends_the_debate(ledger: Ledger, duel: Duel, clock: FakeClock) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    released = ledger.release(
        duel.debate_id,
        duel.alice,
        lease.lease_token,
        close=True,
        outcome="DISSENT",
        reason="blocking items",
        participant_secret=secret_of(duel.alice),
    )

    assert released.closed and released.outcome == "DISSENT"
    debate = ledger.get_debate(duel.debate_id)
    assert debate.status is DebateState.CLOSED
    assert (debate.outcome, debate.closed_at) == ("DISSENT", to_iso(clock.now))
    conclusion = ledger.conclusion(duel.debate_id)
    assert conclusion is not None
    assert (conclusion.outcome, conclusion.reason, conclusion.participant_id) == (
        "DISSENT",
        "blocking items",
        duel.alice,
    )
    assert ledger.status(duel.debate_id).lease is None
    with pytest.raises(DebateClosedError, match="closed with outcome DISSENT; start a new debate"):
        ledger.claim(duel.debate_id, duel.bob, participant_secret=secret_of(duel.bob))


def test_closing_needs_the_token_and_an_outcome(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    with pytest.raises(LeaseError):
        ledger.release(
            duel.debate_id,
            duel.alice,
            "not-the-token",
            close=True,
            outcome="DISSENT",
            participant_secret=secret_of(duel.alice),
        )
    with pytest.raises(InvalidInputError, match="needs its outcome"):
        ledger.release(
            duel.debate_id, duel.alice, lease.lease_token, close=True, participant_secret=secret_of(duel.alice)
        )
    with pytest.raises(InvalidInputError, match="pass close=True"):
        ledger.release(
            duel.debate_id, duel.alice, lease.lease_token, outcome="DISSENT", participant_secret=secret_of(duel.alice)
        )
    with pytest.raises(InvalidInputError, match="UPPER_SNAKE"):
        ledger.release(
            duel.debate_id,
            duel.alice,
            lease.lease_token,
            close=True,
            outcome="dissent",
            participant_secret=secret_of(duel.alice),
        )

    assert ledger.get_debate(duel.debate_id).status is DebateState.DEBATING
    assert ledger.conclusion(duel.debate_id) is None


def test_closing_with_another_outcome_than_the_recorded_conclusion_is_refused(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    with ledger.guarded_write(
        duel.debate_id, duel.alice, lease.lease_token, lease.fencing_token, participant_secret=secret_of(duel.alice)
    ) as guard:
        guard.conclude("MAX_TURNS", summary="six turns")

    with pytest.raises(ConflictError, match="already concluded with MAX_TURNS; an outcome cannot change"):
        ledger.release(
            duel.debate_id,
            duel.alice,
            lease.lease_token,
            close=True,
            outcome="DISSENT",
            participant_secret=secret_of(duel.alice),
        )

    ledger.release(
        duel.debate_id,
        duel.alice,
        lease.lease_token,
        close=True,
        outcome="MAX_TURNS",
        participant_secret=secret_of(duel.alice),
    )
    assert ledger.get_debate(duel.debate_id).outcome == "MAX_TURNS"


def test_status_never_reveals_a_token(store: Store, ledger: Ledger, duel: Duel, clock: FakeClock) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    other = store.open(clock)  # another connection, as another process would have

    status = other.status(duel.debate_id)

    assert status.lease is not None
    assert (status.lease.holder_participant_id, status.lease.fencing_token) == (duel.alice, 1)
    assert not status.lease.expired
    assert lease.lease_token not in json.dumps(asdict(status)) + repr(status)


def test_the_store_keeps_only_a_digest_of_the_token(store: Store, ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    with raw_transaction(store) as tx:
        rows = tx.all("SELECT * FROM leases")

    assert len(rows) == 1
    assert lease.lease_token not in repr(rows)


def test_status_marks_an_expired_lease_until_it_is_taken_over(ledger: Ledger, duel: Duel, clock: FakeClock) -> None:
    granted(ledger.claim(duel.debate_id, duel.alice, ttl_seconds=5, participant_secret=secret_of(duel.alice)))
    clock.advance(5)

    view = ledger.status(duel.debate_id).lease

    assert view is not None and view.expired

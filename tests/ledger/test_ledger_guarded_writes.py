"""Conformance: writes under a lease — the fencing check, turn digests, conclusions, the audit log."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta

import pytest
from ledger_helpers import Duel, FakeClock, granted, secret_of

from moot.errors import ConflictError, InvalidInputError, LeaseError
from moot.ledger import Lease, Ledger
from moot.ledger.models import from_iso


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def record(ledger: Ledger, lease: Lease, turn: int, text: str) -> None:
    with ledger.guarded_write(
        lease.debate_id,
        lease.participant_id,
        lease.lease_token,
        lease.fencing_token,
        participant_secret=secret_of(lease.participant_id),
    ) as guard:
        guard.record_turn(turn, digest(text), digest(f"chain-{text}"))


def test_a_guarded_write_records_the_turn_with_its_writer_and_fencing_number(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    with ledger.guarded_write(
        duel.debate_id, duel.alice, lease.lease_token, lease.fencing_token, participant_secret=secret_of(duel.alice)
    ) as guard:
        assert guard.lease.fencing_token == lease.fencing_token
        recorded = guard.record_turn(1, digest("one"), digest("chain-one"))
        assert guard.turns() == [recorded]

    (turn,) = ledger.turns(duel.debate_id)
    assert (turn.turn, turn.digest, turn.participant_id, turn.fencing_token) == (1, digest("one"), duel.alice, 1)
    assert ledger.status(duel.debate_id).turn_count == 1


Credentials = tuple[str, str, int]


def wrong_token(duel: Duel, lease: Lease, clock: FakeClock) -> Credentials:
    return duel.alice, lease.lease_token + "x", lease.fencing_token


def other_participant(duel: Duel, lease: Lease, clock: FakeClock) -> Credentials:
    return duel.bob, lease.lease_token, lease.fencing_token


def stale_fencing(duel: Duel, lease: Lease, clock: FakeClock) -> Credentials:
    return duel.alice, lease.lease_token, lease.fencing_token - 1


def future_fencing(duel: Duel, lease: Lease, clock: FakeClock) -> Credentials:
    return duel.alice, lease.lease_token, lease.fencing_token + 1


def expired(duel: Duel, lease: Lease, clock: FakeClock) -> Credentials:
    clock.advance(60)
    return duel.alice, lease.lease_token, lease.fencing_token


@pytest.mark.parametrize(
    ("credentials", "message"),
    [
        (wrong_token, "not the current lease"),
        (other_participant, "not the current lease"),
        (stale_fencing, "Fencing number 0 is stale .* claim the lock again"),
        (future_fencing, "Fencing number 2 is stale"),
        (expired, "expired at .*; claim the lock again"),
    ],
)
def test_a_guarded_write_is_refused_unless_token_fencing_and_expiry_all_match(
    ledger: Ledger,
    duel: Duel,
    clock: FakeClock,
    credentials: Callable[[Duel, Lease, FakeClock], Credentials],
    message: str,
) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, ttl_seconds=60, participant_secret=secret_of(duel.alice)))
    participant, token, fencing = credentials(duel, lease, clock)

    with (
        pytest.raises(LeaseError, match=message),
        ledger.guarded_write(
            duel.debate_id, participant, token, fencing, participant_secret=secret_of(participant)
        ) as g,
    ):
        g.record_turn(1, digest("one"), digest("chain-one"))

    assert ledger.turns(duel.debate_id) == []
    assert ledger.lease_writes(duel.debate_id) == []


def test_the_lease_is_valid_until_just_before_its_expiry(ledger: Ledger, duel: Duel, clock: FakeClock) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, ttl_seconds=60, participant_secret=secret_of(duel.alice)))
    clock.now = from_iso(lease.lease_expires_at) - timedelta(microseconds=1)
    record(ledger, lease, 1, "one")

    clock.now = from_iso(lease.lease_expires_at)
    with pytest.raises(LeaseError, match="expired"):
        record(ledger, lease, 2, "two")

    assert [t.turn for t in ledger.turns(duel.debate_id)] == [1]


def test_a_released_lease_cannot_write(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    ledger.release(duel.debate_id, duel.alice, lease.lease_token, participant_secret=secret_of(duel.alice))

    with pytest.raises(LeaseError, match="has no active lease; claim the lock"):
        record(ledger, lease, 1, "one")


def test_a_closed_debate_accepts_no_writes(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    ledger.release(
        duel.debate_id,
        duel.alice,
        lease.lease_token,
        close=True,
        outcome="DISSENT",
        participant_secret=secret_of(duel.alice),
    )

    with pytest.raises(LeaseError, match="is closed with outcome DISSENT"):
        record(ledger, lease, 1, "one")


def test_a_failing_block_writes_nothing(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    with (
        pytest.raises(RuntimeError),
        ledger.guarded_write(
            duel.debate_id, duel.alice, lease.lease_token, lease.fencing_token, participant_secret=secret_of(duel.alice)
        ) as guard,
    ):
        guard.record_turn(1, digest("one"), digest("chain-one"))
        raise RuntimeError("the artifact write failed")

    assert ledger.turns(duel.debate_id) == []
    assert ledger.lease_writes(duel.debate_id) == []


def test_the_guard_is_dead_after_its_block(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    with ledger.guarded_write(
        duel.debate_id, duel.alice, lease.lease_token, lease.fencing_token, participant_secret=secret_of(duel.alice)
    ) as guard:
        pass

    with pytest.raises(InvalidInputError, match="transaction has ended"):
        guard.record_turn(1, digest("one"), digest("chain-one"))


def test_calling_the_ledger_inside_a_guarded_block_is_refused_not_deadlocked(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    with (
        pytest.raises(InvalidInputError, match="use the guard's own methods"),
        ledger.guarded_write(
            duel.debate_id, duel.alice, lease.lease_token, lease.fencing_token, participant_secret=secret_of(duel.alice)
        ),
    ):
        ledger.status(duel.debate_id)

    assert ledger.status(duel.debate_id).lease is not None  # the ledger is usable afterwards


def test_recording_the_same_turn_digest_again_is_a_no_op(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    record(ledger, lease, 1, "one")

    record(ledger, lease, 1, "one")

    assert len(ledger.turns(duel.debate_id)) == 1
    assert [w.action for w in ledger.lease_writes(duel.debate_id)] == ["turn"]


def test_a_different_digest_for_a_recorded_turn_is_refused(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    record(ledger, lease, 1, "one")

    with pytest.raises(ConflictError, match=r"Turn 1 .* already recorded with a different digest.*append turn 2"):
        record(ledger, lease, 1, "rewritten")

    assert ledger.turns(duel.debate_id)[0].digest == digest("one")


def test_turns_are_recorded_in_order_without_gaps(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    with pytest.raises(InvalidInputError, match="has 0 turn\\(s\\); record turn 1 next"):
        record(ledger, lease, 2, "two")
    with (
        pytest.raises(InvalidInputError, match="64 lowercase hex digits"),
        ledger.guarded_write(
            duel.debate_id, duel.alice, lease.lease_token, lease.fencing_token, participant_secret=secret_of(duel.alice)
        ) as guard,
    ):
        guard.record_turn(1, "not-a-digest", digest("x"))


def test_turns_written_by_successive_holders_carry_their_fencing_numbers(
    ledger: Ledger, duel: Duel, clock: FakeClock
) -> None:
    first = granted(ledger.claim(duel.debate_id, duel.alice, ttl_seconds=60, participant_secret=secret_of(duel.alice)))
    record(ledger, first, 1, "one")
    clock.advance(61)  # alice stalls past her lease; bob takes over
    second = granted(ledger.claim(duel.debate_id, duel.bob, participant_secret=secret_of(duel.bob)))
    record(ledger, second, 2, "two")

    with pytest.raises(LeaseError):  # alice wakes up and tries to write turn 3
        record(ledger, first, 3, "three")

    assert [(t.turn, t.participant_id, t.fencing_token) for t in ledger.turns(duel.debate_id)] == [
        (1, duel.alice, 1),
        (2, duel.bob, 2),
    ]


def test_every_write_under_a_lease_is_in_the_audit_log(ledger: Ledger, duel: Duel, clock: FakeClock) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))
    record(ledger, lease, 1, "one")
    clock.advance(10)
    ledger.refresh(duel.debate_id, duel.alice, lease.lease_token, participant_secret=secret_of(duel.alice))
    ledger.release(duel.debate_id, duel.alice, lease.lease_token, participant_secret=secret_of(duel.alice))
    nxt = granted(ledger.claim(duel.debate_id, duel.bob, participant_secret=secret_of(duel.bob)))
    ledger.release(
        duel.debate_id, duel.bob, nxt.lease_token, close=True, outcome="DISSENT", participant_secret=secret_of(duel.bob)
    )

    log = ledger.lease_writes(duel.debate_id)

    assert [(w.action, w.holder_participant_id, w.fencing_token) for w in log] == [
        ("turn", duel.alice, 1),
        ("refresh", duel.alice, 1),
        ("release", duel.alice, 1),
        ("conclusion", duel.bob, 2),
        ("close", duel.bob, 2),
    ]
    assert all(w.written_at < w.lease_expires_at for w in log)
    assert [w.id for w in log] == sorted(w.id for w in log)


def test_a_fencing_number_must_be_an_integer(ledger: Ledger, duel: Duel) -> None:
    lease = granted(ledger.claim(duel.debate_id, duel.alice, participant_secret=secret_of(duel.alice)))

    with pytest.raises(InvalidInputError, match="fencing_token must be the integer"):
        ledger.guarded_write(
            duel.debate_id, duel.alice, lease.lease_token, "1", participant_secret=secret_of(duel.alice)
        ).__enter__()  # type: ignore[arg-type]

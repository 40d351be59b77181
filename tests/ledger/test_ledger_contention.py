"""Contention with real processes (spawn) on both backends: fencing keeps every lease write safe.

8 processes × 500 lease operations with 100 ms leases, releases, stalls past expiry and takeovers. Every
successful write under a lease lands in the ledger's audit log in the same transaction; afterwards no two
holders may overlap and the fencing numbers of successive acquisitions must strictly increase.
"""

from __future__ import annotations

import time

import pytest
from ledger_helpers import Store, join, secret_of
from ledger_stress import (
    OPERATIONS,
    PROCESSES,
    contention_problems,
    follow_while_appending,
    lease_history_problems,
    run_contention,
    run_openers,
    takeovers,
)

from moot.ledger import LATEST_VERSION, LeaseWrite, Ledger


def test_contending_processes_never_overlap_and_fencing_strictly_increases(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = store.open()
    joined = [join(ledger, store.root, f"p{i}", seats=PROCESSES) for i in range(PROCESSES)]
    debate_id = joined[0].debate.id

    started = time.perf_counter()
    reports = run_contention(
        store.target,
        debate_id,
        [(j.participant.id, secret_of(j.participant.id)) for j in joined],
        operations=OPERATIONS,
    )
    elapsed = time.perf_counter() - started

    status = ledger.status(debate_id)
    writes = ledger.lease_writes(debate_id)
    turns = ledger.turns(debate_id)
    operations = sum(r.operations for r in reports)
    assert all(r.operations >= OPERATIONS for r in reports)
    # fencing numbers each handed out once and in order, no two holders overlapping (by commit order and by
    # time), no write after expiry, and the turns a gapless sequence written by the holder of their fencing
    assert contention_problems(reports, status, writes, turns) == []

    # the run exercised what it claims to: contention, stalls, takeovers of expired leases
    taken_over = takeovers(status, writes)
    assert sum(r.refused_claims for r in reports) > 0
    assert sum(r.stale_writes_refused for r in reports) > 0
    assert taken_over
    with capsys.disabled():
        print(
            f"\n[{store.backend}] {PROCESSES} processes, {operations} lease operations in {elapsed:.1f} s "
            f"({operations / max(r.seconds for r in reports):.0f} ops/s while contending); "
            f"{status.last_fencing_token} acquisitions, {len(taken_over)} not released (stalled or lost), "
            f"{len(turns)} turns, {sum(r.lost_leases for r in reports)} writes refused after losing the lease"
        )


def write(id: int, fencing: int, holder: str, at: str, expires: str = "00:01:00") -> LeaseWrite:
    day = "2026-01-01T"
    return LeaseWrite(id, "d", fencing, holder, "turn", f"{day}{at}.000000Z", f"{day}{expires}.000000Z")


@pytest.mark.parametrize(
    "history",
    [
        [write(1, 2, "b", "00:00:02"), write(2, 1, "a", "00:00:03")],  # fencing 1 committed after fencing 2
        [write(1, 1, "a", "00:00:01"), write(2, 1, "b", "00:00:02")],  # two holders of one fencing number
        [write(1, 1, "a", "00:00:03"), write(2, 2, "b", "00:00:02")],  # interleaved in time
        [write(1, 1, "a", "00:01:00")],  # written when the lease had expired
    ],
)
def test_the_history_check_can_fail(history: list[LeaseWrite]) -> None:
    assert lease_history_problems([write(1, 1, "a", "00:00:01"), write(2, 2, "b", "00:00:02")]) == []
    assert lease_history_problems(history)


def test_a_follower_sees_every_event_once_in_order_while_processes_append(store: Store) -> None:
    follower: Ledger = store.open()

    seen, appended = follow_while_appending(follower, store.target, processes=4, count=150)

    assert seen == sorted(appended)  # nothing skipped, nothing twice, in id order
    assert len(seen) == 600


def test_processes_opening_a_new_store_at_once_migrate_it_once(store: Store) -> None:
    assert run_openers(store.target, 6) == [LATEST_VERSION] * 6

    ledger = store.open()
    assert ledger.schema_version == LATEST_VERSION

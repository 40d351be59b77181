"""Shared batches on both backends: each line taken by one host at a time, taken over after its lease ran out."""

from __future__ import annotations

from datetime import timedelta

from ledger_helpers import FakeClock, Store

from moot.ledger import Ledger

LEASE = timedelta(seconds=60)


def test_each_line_is_taken_once_and_done_once_across_hosts(ledger: Ledger, store: Store, clock: FakeClock) -> None:
    other = store.open(clock)  # a second host: its own connection
    ledger.open_batch("b1", "batch.jsonl", [1, 2, 4])
    other.open_batch("b1", "batch.jsonl", [1, 2, 4])  # joining an existing batch changes nothing
    first, second = ledger.claim_batch_line("b1", "A", LEASE), other.claim_batch_line("b1", "B", LEASE)
    third = ledger.claim_batch_line("b1", "A", LEASE)
    assert first is not None and second is not None and third is not None
    assert [first.line, second.line, third.line] == [1, 2, 4]
    assert other.claim_batch_line("b1", "B", LEASE) is None  # every line is held
    assert ledger.finish_batch_line("b1", "A", first, '{"line": 1}')
    assert not ledger.finish_batch_line("b1", "A", first, '{"line": 1}')  # done once
    progress = other.batch_progress("b1")
    assert (progress.lines, progress.done, progress.running, progress.waiting) == (3, 1, 2, 0)


def test_a_line_whose_host_stopped_heartbeating_is_taken_over_and_its_late_finish_refused(
    ledger: Ledger, store: Store, clock: FakeClock
) -> None:
    other = store.open(clock)
    ledger.open_batch("b2", "batch.jsonl", [1, 2])
    held = ledger.claim_batch_line("b2", "A", LEASE)
    dead = ledger.claim_batch_line("b2", "dead", LEASE)
    assert held is not None and dead is not None
    clock.advance(45)
    assert ledger.heartbeat_batch("b2", "A", LEASE) == 1  # A is alive; "dead" sent no heartbeat
    clock.advance(20)
    taken = other.claim_batch_line("b2", "B", LEASE)
    assert taken is not None and (taken.line, taken.claim) == (dead.line, 2)  # only the expired line
    assert other.claim_batch_line("b2", "B", LEASE) is None
    assert not ledger.finish_batch_line("b2", "dead", dead, "{}")  # the host came back too late
    assert other.finish_batch_line("b2", "B", taken, "{}") and ledger.finish_batch_line("b2", "A", held, "{}")
    assert ledger.batch_progress("b2").done == 2

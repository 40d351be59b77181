"""Real processes (spawn) contending for one debate's lease, and the checks of what they left behind.

Lives in its own module so that spawned children can import the worker functions.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from multiprocessing.synchronize import Barrier

from moot.errors import LeaseError
from moot.ledger import DebateStatus, Lease, LeaseWrite, Ledger, Refusal, TurnDigest, open_ledger

PROCESSES = 8  # the required minimum, used by the tests
OPERATIONS = 500  # lease operations per process (claim, refresh, release, guarded write)
TTL_SECONDS = 0.1  # short, so that stalled holders expire and get taken over

_barrier: Barrier | None = None


def _set_barrier(barrier: Barrier) -> None:
    global _barrier
    _barrier = barrier


def _wait_for_everyone() -> None:
    assert _barrier is not None
    _barrier.wait(timeout=120)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class WorkerReport:
    participant_id: str
    operations: int = 0
    acquisitions: list[int] = field(default_factory=list)  # fencing numbers, in the order this worker got them
    writes: int = 0
    refused_claims: int = 0
    lost_leases: int = 0  # a refresh/release/write refused because the lease expired or was taken over
    stale_writes_refused: int = 0
    stale_writes_accepted: int = 0
    seconds: float = 0.0


def contend(target: str, debate_id: str, seat: tuple[str, str], operations: int, ttl: float, seed: int) -> WorkerReport:
    """Claim, write, refresh and release (or stall past expiry) until ``operations`` lease calls are made, as the
    participant ``seat`` (its id and secret)."""
    participant_id, secret = seat
    rng = random.Random(seed)
    report = WorkerReport(participant_id)
    with open_ledger(target) as ledger:
        _wait_for_everyone()
        started = time.perf_counter()
        while report.operations < operations:
            report.operations += 1
            claimed = ledger.claim(debate_id, participant_id, participant_secret=secret, ttl_seconds=ttl)
            if isinstance(claimed, Refusal):
                report.refused_claims += 1
                time.sleep(rng.uniform(0, ttl / 10))
                continue
            lease: Lease = claimed
            report.acquisitions.append(lease.fencing_token)
            try:
                for _ in range(rng.randint(1, 3)):
                    report.operations += 1
                    with ledger.guarded_write(
                        debate_id, participant_id, lease.lease_token, lease.fencing_token, participant_secret=secret
                    ) as g:
                        turn = g.turn_count() + 1
                        g.record_turn(turn, sha(f"{lease.fencing_token}:{turn}"), sha(f"chain:{turn}"))
                    report.writes += 1
                    if rng.random() < 0.3:
                        report.operations += 1
                        lease = ledger.refresh(
                            debate_id, participant_id, lease.lease_token, participant_secret=secret, ttl_seconds=ttl
                        )
                if rng.random() < 0.75:
                    report.operations += 1
                    ledger.release(debate_id, participant_id, lease.lease_token, participant_secret=secret)
                    continue
            except LeaseError:
                report.lost_leases += 1
                continue
            # Stall past expiry (a paused process), then try to write with the stale lease: it must be refused.
            time.sleep(ttl * 1.5)
            report.operations += 1
            try:
                with ledger.guarded_write(
                    debate_id, participant_id, lease.lease_token, lease.fencing_token, participant_secret=secret
                ) as g:
                    turn = g.turn_count() + 1
                    g.record_turn(turn, sha(f"stale:{turn}"), sha(f"chain:{turn}"))
                report.stale_writes_accepted += 1
            except LeaseError:
                report.stale_writes_refused += 1
        report.seconds = time.perf_counter() - started
    return report


def run_contention(
    target: str,
    debate_id: str,
    seats: Sequence[tuple[str, str]],
    *,
    operations: int = OPERATIONS,
    ttl: float = TTL_SECONDS,
    timeout: float = 300,
) -> list[WorkerReport]:
    """One spawned process per seat (participant id and secret), all starting together."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(seats))
    args = [(target, debate_id, seat, operations, ttl, seed) for seed, seat in enumerate(seats)]
    with context.Pool(len(seats), initializer=_set_barrier, initargs=(barrier,)) as pool:
        return pool.starmap_async(contend, args, chunksize=1).get(timeout=timeout)


def lease_history_problems(writes: Sequence[LeaseWrite]) -> list[str]:
    """Everything wrong with an audit log of lease writes, taken in commit (id) order.

    Safe means: each fencing number has one holder; every write happened before its lease expired; and the
    writes of successive acquisitions do not interleave — by commit order and by time — with a fencing
    number that never decreases.
    """
    problems: list[str] = []
    holders: dict[int, set[str]] = defaultdict(set)
    spans: dict[int, tuple[str, str]] = {}
    previous: LeaseWrite | None = None
    for write in sorted(writes, key=lambda w: w.id):
        holders[write.fencing_token].add(write.holder_participant_id)
        if write.written_at >= write.lease_expires_at:
            problems.append(
                f"write {write.id} at {write.written_at} after its lease expired at {write.lease_expires_at}"
            )
        if previous is not None and write.fencing_token < previous.fencing_token:
            problems.append(
                f"write {write.id} under fencing {write.fencing_token} committed after write {previous.id} under "
                f"fencing {previous.fencing_token}"
            )
        first, last = spans.get(write.fencing_token, (write.written_at, write.written_at))
        spans[write.fencing_token] = (min(first, write.written_at), max(last, write.written_at))
        previous = write
    for fencing, names in holders.items():
        if len(names) > 1:
            problems.append(f"fencing {fencing} was used by {len(names)} holders")
    ordered = sorted(spans.items())
    for (earlier, (_, earlier_end)), (later, (later_start, _)) in pairwise(ordered):
        if earlier_end > later_start:
            problems.append(
                f"fencing {earlier} still wrote at {earlier_end} after fencing {later} began writing at {later_start}"
            )
    return problems


def contention_problems(
    reports: Sequence[WorkerReport], status: DebateStatus, writes: Sequence[LeaseWrite], turns: Sequence[TurnDigest]
) -> list[str]:
    """Everything that shows fencing failed to keep the writes of contending processes safe."""
    problems: list[str] = lease_history_problems(writes)
    acquired = sorted(n for r in reports for n in r.acquisitions)
    if acquired != list(range(1, status.last_fencing_token + 1)):
        problems.append(f"fencing numbers handed out are not 1..{status.last_fencing_token}, each once")
    problems += [
        f"{r.participant_id} got fencing numbers out of order: {r.acquisitions}"
        for r in reports
        if r.acquisitions != sorted(set(r.acquisitions))
    ]
    stale = sum(r.stale_writes_accepted for r in reports)
    if stale:
        problems.append(f"{stale} writes with an expired lease were accepted")
    if [t.turn for t in turns] != list(range(1, len(turns) + 1)):
        problems.append("the turns are not a gapless sequence from 1")
    if [t.fencing_token for t in turns] != sorted(t.fencing_token for t in turns):
        problems.append("a turn was written under a lower fencing number than the turn before it")
    holder_of = {w.fencing_token: w.holder_participant_id for w in writes}
    problems += [
        f"turn {t.turn} was written by {t.participant_id}, not the holder of fencing {t.fencing_token}"
        for t in turns
        if holder_of.get(t.fencing_token) != t.participant_id
    ]
    if len(turns) != sum(r.writes for r in reports):
        problems.append(
            f"{len(turns)} turns in the ledger, but the workers saw {sum(r.writes for r in reports)} writes"
        )
    return problems


def takeovers(status: DebateStatus, writes: Sequence[LeaseWrite]) -> list[int]:
    """Fencing numbers that ended without a release: their holder stalled past expiry or lost the lease."""
    released = {w.fencing_token for w in writes if w.action == "release"}
    return [n for n in range(1, status.last_fencing_token) if n not in released]


def append_events(target: str, run_id: str, count: int) -> list[int]:
    with open_ledger(target) as ledger:
        _wait_for_everyone()
        return [
            ledger.append_event(
                workflow="stress", type="status_change", run_id=run_id, step=str(i), data={"status": "running"}
            ).id
            for i in range(count)
        ]


def follow_while_appending(
    follower: Ledger, target: str, processes: int, count: int, *, timeout: float = 120
) -> tuple[list[int], list[int]]:
    """Spawned appenders add ``count`` events each while ``follower`` polls ``read_events(after_id=last)``.

    Returns (the ids the follower saw, in order; the ids the appenders got).
    """
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    with context.Pool(processes, initializer=_set_barrier, initargs=(barrier,)) as pool:
        appending = pool.starmap_async(append_events, [(target, f"run-{i}", count) for i in range(processes)])
        seen: list[int] = []
        deadline = time.monotonic() + timeout
        while True:
            finished = appending.ready()  # checked before reading, so the last read sees every commit
            batch = follower.read_events(after_id=seen[-1] if seen else None)
            seen.extend(event.id for event in batch)
            if finished and not batch:
                break
            if time.monotonic() > deadline:
                raise TimeoutError("the appenders did not finish in time")
            time.sleep(0.002)
        appended = [event_id for ids in appending.get() for event_id in ids]
    return seen, appended


def open_once(target: str) -> int:
    _wait_for_everyone()
    with open_ledger(target) as ledger:
        return ledger.schema_version


def run_openers(target: str, processes: int) -> list[int]:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    with context.Pool(processes, initializer=_set_barrier, initargs=(barrier,)) as pool:
        return pool.map_async(open_once, [target] * processes, chunksize=1).get(timeout=120)

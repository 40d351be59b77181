"""contention: the ledger's lease contention test scaled up to 16 processes, on SQLite and on PostgreSQL.

16 spawned processes contend for one debate's 100 ms lease: they claim, write turns under the lease,
refresh, release, and sometimes stall past expiry and then try to write with the stale lease. Afterwards
the ledger must show that fencing kept every write safe: each fencing number handed out once and in order,
no two holders' writes overlapping, no stale write accepted, and the turns a gapless sequence, each written
by the holder of its fencing number. Quick: 16 × 100 lease operations per backend; long
(MOOT_RELIABILITY=long): 16 × 2000.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from contention_helpers import postgres_schema, store  # noqa: F401 (fixtures; puts tests/ledger on sys.path)
from ledger_helpers import Store, join, secret_of
from ledger_stress import contention_problems, run_contention, takeovers
from reliability_helpers import record_result, scale

PROCESSES = 16
OPERATIONS = scale(100, 2000)  # lease operations per process

_measured: dict[str, Any] = {}  # both backends' figures, so that one results file holds them


def test_sixteen_contending_processes_never_overlap_and_fencing_strictly_increases(
    store: Store,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
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
        timeout=scale(300, 3600),
    )
    elapsed = time.perf_counter() - started

    status = ledger.status(debate_id)
    writes = ledger.lease_writes(debate_id)
    turns = ledger.turns(debate_id)
    assert all(r.operations >= OPERATIONS for r in reports)
    assert contention_problems(reports, status, writes, turns) == []

    # the run exercised what it claims to: contention, takeovers, and writes refused because their lease had
    # expired or been taken over (after a deliberate stall, or, on a loaded machine, a slow one)
    taken_over = takeovers(status, writes)
    assert sum(r.refused_claims for r in reports) > 0
    assert sum(r.stale_writes_refused + r.lost_leases for r in reports) > 0
    assert taken_over

    figures = {
        "operations": sum(r.operations for r in reports),
        "acquisitions": status.last_fencing_token,
        "takeovers": len(taken_over),
        "turns": len(turns),
        "refused claims": sum(r.refused_claims for r in reports),
        "writes refused after losing the lease": sum(r.lost_leases for r in reports),
        "stale writes refused": sum(r.stale_writes_refused for r in reports),
        "stale writes accepted": sum(r.stale_writes_accepted for r in reports),
        "wall seconds": round(elapsed, 1),
    }
    _measured.update({f"{store.backend}: {name}": value for name, value in figures.items()})
    record_result("contention", {"processes": PROCESSES, "operations per process": OPERATIONS, **_measured})
    with capsys.disabled():
        print(f"\n[{store.backend}] {PROCESSES} processes × {OPERATIONS} operations: {figures}")

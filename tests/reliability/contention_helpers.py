"""What the contention test borrows from tests/ledger, and the checks of what 16 contending processes left.

tests/ledger holds the contention workers (``ledger_stress``) and the ``store`` fixture that runs a test on
SQLite and on PostgreSQL (skipped locally without MOOT_TEST_DATABASE_URL, failing under CI). They are
imported here under the module names pytest gives them there, so spawned workers can import them too; the
ledger's conftest is loaded under a name of its own, because every conftest is called ``conftest``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

LEDGER_TESTS = Path(__file__).resolve().parents[1] / "ledger"
if str(LEDGER_TESTS) not in sys.path:
    sys.path.append(str(LEDGER_TESTS))  # spawned children inherit sys.path, so they find ledger_stress too

from ledger_stress import WorkerReport, lease_history_problems  # noqa: E402

from moot.ledger import DebateStatus, LeaseWrite, TurnDigest  # noqa: E402


def _load_ledger_conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ledger_conftest", LEDGER_TESTS / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ledger_conftest = _load_ledger_conftest()
store = _ledger_conftest.store  # SQLite and PostgreSQL, each in a fresh store
postgres_schema = _ledger_conftest.postgres_schema  # what ``store`` asks for on PostgreSQL


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

"""leases: how fast moot claims, refreshes and releases a debate's lease on SQLite and PostgreSQL.

Each of 1, 4 or 16 spawned processes owns one debate (two participants joined beforehand) and, once all of
them are ready, loops claim → refresh → release for a fixed time, timing every call; the two participants
take turns, as in a debate. The baseline runs in the same processes right after: the database's bare write
transaction through the same driver and settings (SQLite: ``BEGIN IMMEDIATE``, one ``UPDATE``, ``COMMIT``
in WAL mode with ``synchronous=FULL`` as moot opens it; PostgreSQL: the same three statements), each
process on a row of its own. The ratio of the two says what the lease rules cost on top of a commit.

SQLite is a file in a temporary directory on disk. PostgreSQL is ``MOOT_TEST_DATABASE_URL`` (else the URL
``.ci/postgres.sh`` prints), in a schema of its own that is dropped afterwards; unreachable, it is skipped.
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.pool import Pool
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from tests.ledger.ledger_helpers import PostgresSchema, join, secret_of

from bench.common import BenchResult, Table, fmt, fmt_ratio, median, percentile, ratio
from moot.ledger import Lease, open_ledger
from moot.ledger.sqlite import DEFAULT_BUSY_TIMEOUT_SECONDS

PROCESS_COUNTS = (1, 4, 16)
OPERATIONS = ("claim", "refresh", "release")
BARE = "transaction"
DEFAULT_POSTGRES_URL = "postgresql://moot:moot@127.0.0.1:5432/moot_test"  # what .ci/postgres.sh prints

# Set in every pool worker: one reusable barrier per process count, so that a cell's processes start together.
_barriers: dict[int, Barrier] = {}


def _keep_barriers(barriers: dict[int, Barrier]) -> None:
    _barriers.update(barriers)


def _start_together(processes: int) -> float:
    _barriers[processes].wait(timeout=120)
    return time.perf_counter()


def warm_up(pool: Pool, processes: int) -> None:
    """Wait until every worker has started: interpreters still booting would steal CPU from the first cell."""
    pool.map(_start_together, [processes] * processes, chunksize=1)


@dataclass
class Sample:
    """One process's share of one cell: how long it ran and the latency of every call, by operation."""

    seconds: float
    latencies: dict[str, list[float]]


Seat = tuple[str, str]  # a participant's id and its secret


@dataclass
class Backend:
    name: str
    kind: str  # "sqlite" or "postgres"
    ledger_target: str  # what open_ledger takes
    bare_target: str  # the baseline's database: a SQLite file or a PostgreSQL URL
    debates: list[tuple[str, tuple[Seat, Seat]]]  # one per process: (debate id, its two participants)


class BareTable:
    """The baseline: one row per process in a table ``counters``, bumped by one write transaction at a time."""

    def __init__(self, kind: str, target: str) -> None:
        if kind == "sqlite":  # opened as moot opens its ledger (see moot.ledger.sqlite)
            self._conn: Any = sqlite3.connect(target, timeout=DEFAULT_BUSY_TIMEOUT_SECONDS, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._begin, self._mark = "BEGIN IMMEDIATE", "?"
        else:  # opened as moot opens its ledger (see moot.ledger.postgres)
            import psycopg

            self._conn = psycopg.connect(target, autocommit=True, connect_timeout=10)
            self._begin, self._mark = "BEGIN", "%s"

    @classmethod
    def create(cls, kind: str, target: str) -> None:
        """The table, with a row for each process of the largest cell."""
        table = cls(kind, target)
        try:
            table._conn.execute("CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
            for row in range(max(PROCESS_COUNTS)):
                table._conn.execute(f"INSERT INTO counters (id, n) VALUES ({table._mark}, 0)", (row,))
        finally:
            table.close()

    def commit_one(self, row: int) -> None:
        self._conn.execute(self._begin)
        self._conn.execute(f"UPDATE counters SET n = n + 1 WHERE id = {self._mark}", (row,))
        self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()


def lease_loop(target: str, debate_id: str, participants: tuple[Seat, Seat], processes: int, seconds: float) -> Sample:
    """claim → refresh → release on this process's own debate until ``seconds`` have passed."""
    latencies: dict[str, list[float]] = {name: [] for name in OPERATIONS}
    with open_ledger(target) as ledger:
        started = _start_together(processes)
        turn = 0
        while time.perf_counter() - started < seconds:
            participant, secret = participants[turn % 2]
            turn += 1
            before_claim = time.perf_counter()
            lease = ledger.claim(debate_id, participant, participant_secret=secret)
            before_refresh = time.perf_counter()
            if not isinstance(lease, Lease):
                raise RuntimeError(f"a claim on a debate nobody else uses was refused: {lease}")
            ledger.refresh(debate_id, participant, lease.lease_token, participant_secret=secret)
            before_release = time.perf_counter()
            ledger.release(debate_id, participant, lease.lease_token, participant_secret=secret)
            done = time.perf_counter()
            latencies["claim"].append(before_refresh - before_claim)
            latencies["refresh"].append(before_release - before_refresh)
            latencies["release"].append(done - before_release)
        return Sample(time.perf_counter() - started, latencies)


def bare_loop(kind: str, target: str, row: int, processes: int, seconds: float) -> Sample:
    """Bare write transactions on this process's own row until ``seconds`` have passed."""
    table = BareTable(kind, target)
    try:
        times: list[float] = []
        started = _start_together(processes)
        while time.perf_counter() - started < seconds:
            before = time.perf_counter()
            table.commit_one(row)
            times.append(time.perf_counter() - before)
        return Sample(time.perf_counter() - started, {BARE: times})
    finally:
        table.close()


@dataclass
class Cell:
    """One backend × process count × run: total calls per second and latency percentiles (seconds)."""

    ops_per_second: float
    p50: dict[str, float]
    p99: dict[str, float]


def merge(samples: Sequence[Sample]) -> Cell:
    names = samples[0].latencies
    merged = {name: [t for s in samples for t in s.latencies[name]] for name in names}
    calls = sum(len(times) for times in merged.values())
    return Cell(
        calls / max(s.seconds for s in samples),
        {name: percentile(times, 50) for name, times in merged.items()},
        {name: percentile(times, 99) for name, times in merged.items()},
    )


def measure_leases(pool: Pool, backend: Backend, processes: int, seconds: float) -> Cell:
    args = [
        (backend.ledger_target, debate_id, pair, processes, seconds) for debate_id, pair in backend.debates[:processes]
    ]
    return merge(pool.starmap(lease_loop, args, chunksize=1))


def measure_bare(pool: Pool, backend: Backend, processes: int, seconds: float) -> Cell:
    args = [(backend.kind, backend.bare_target, row, processes, seconds) for row in range(processes)]
    return merge(pool.starmap(bare_loop, args, chunksize=1))


def join_debates(target: str, root: Path, count: int) -> list[tuple[str, tuple[Seat, Seat]]]:
    """``count`` debates of two participants each. A loop ends each round with a release, so they are reused."""
    debates = []
    with open_ledger(target) as ledger:
        for i in range(count):
            alice = join(ledger, root, "alice", slug=f"leases-{i}")
            bob = join(ledger, root, "bob", slug=f"leases-{i}")
            seats = tuple((j.participant.id, secret_of(j.participant.id)) for j in (alice, bob))
            debates.append((alice.debate.id, (seats[0], seats[1])))
    return debates


@contextmanager
def sqlite_backend() -> Iterator[Backend]:
    with tempfile.TemporaryDirectory(prefix="moot-bench-leases-") as tmp:
        root = Path(tmp)
        target, bare = str(root / "work"), str(root / "bare.db")
        BareTable.create("sqlite", bare)
        yield Backend("SQLite", "sqlite", target, bare, join_debates(target, root, max(PROCESS_COUNTS)))


@contextmanager
def postgres_backend() -> Iterator[Backend]:
    """A schema of its own at MOOT_TEST_DATABASE_URL, dropped afterwards; raises ``OSError`` when unreachable."""
    url = os.environ.get("MOOT_TEST_DATABASE_URL") or DEFAULT_POSTGRES_URL
    try:
        import psycopg
    except ModuleNotFoundError as exc:
        raise OSError("psycopg is not installed") from exc
    schema = PostgresSchema(url)
    try:
        schema.execute("CREATE SCHEMA {}")
    except psycopg.Error as exc:
        raise OSError(f"PostgreSQL is unreachable ({str(exc).strip().splitlines()[0]})") from exc
    try:
        with tempfile.TemporaryDirectory(prefix="moot-bench-leases-") as tmp:
            BareTable.create("postgres", schema.url)
            debates = join_debates(schema.url, Path(tmp), max(PROCESS_COUNTS))
            yield Backend("PostgreSQL", "postgres", schema.url, schema.url, debates)
    finally:
        schema.execute("DROP SCHEMA {} CASCADE")


def measure_backend(pool: Pool, backend: Backend, runs: int, seconds: float) -> dict[int, dict[str, list[Cell]]]:
    """Every process count, ``runs`` times, interleaved so that slow moments of the machine spread out."""
    cells: dict[int, dict[str, list[Cell]]] = {n: {"moot": [], "bare": []} for n in PROCESS_COUNTS}
    for _ in range(runs):
        for n in PROCESS_COUNTS:
            cells[n]["moot"].append(measure_leases(pool, backend, n, seconds))
            cells[n]["bare"].append(measure_bare(pool, backend, n, seconds))
    return cells


def summarize(cells: dict[int, dict[str, list[Cell]]]) -> dict[str, Any]:
    """Medians over the runs, per process count, with the scaling and the cost against the bare transaction."""
    rows: dict[str, Any] = {}
    for n, kinds in cells.items():
        moot, bare = kinds["moot"], kinds["bare"]
        row: dict[str, Any] = {
            "lease_ops_per_s": median([c.ops_per_second for c in moot]),
            "bare_transactions_per_s": median([c.ops_per_second for c in bare]),
            "p50_ms": {op: 1000 * median([c.p50[op] for c in cells_]) for op, cells_ in _by_op(moot, bare)},
            "p99_ms": {op: 1000 * median([c.p99[op] for c in cells_]) for op, cells_ in _by_op(moot, bare)},
        }
        rows[str(n)] = row
    one = rows[str(PROCESS_COUNTS[0])]
    for row in rows.values():
        row["lease_scaling"] = ratio(row["lease_ops_per_s"], one["lease_ops_per_s"])
        row["bare_scaling"] = ratio(row["bare_transactions_per_s"], one["bare_transactions_per_s"])
        # how many bare transactions' time one lease call takes, at the same load
        row["lease_op_cost_in_bare_transactions"] = ratio(row["bare_transactions_per_s"], row["lease_ops_per_s"])
    return rows


def _by_op(moot: list[Cell], bare: list[Cell]) -> list[tuple[str, list[Cell]]]:
    return [*((op, moot) for op in OPERATIONS), (BARE, bare)]


def tables(backend: str, summary: dict[str, Any]) -> list[Table]:
    throughput = Table(
        f"Lease throughput on {backend}",
        ["Processes", "Lease calls/s", "× 1 process", "Bare transactions/s", "× 1 process", "Lease call cost"],
        [
            [
                n,
                fmt(row["lease_ops_per_s"], 0),
                fmt_ratio(row["lease_scaling"]),
                fmt(row["bare_transactions_per_s"], 0),
                fmt_ratio(row["bare_scaling"]),
                f"{fmt_ratio(row['lease_op_cost_in_bare_transactions'])} a bare transaction",
            ]
            for n, row in summary.items()
        ],
    )
    latency = Table(
        f"Lease latency on {backend} (ms, p50 / p99)",
        ["Processes", *(op.capitalize() for op in OPERATIONS), "Bare transaction", "Claim p50 ÷ bare p50"],
        [
            [
                n,
                *(f"{fmt(row['p50_ms'][op])} / {fmt(row['p99_ms'][op])}" for op in (*OPERATIONS, BARE)),
                fmt_ratio(ratio(row["p50_ms"]["claim"], row["p50_ms"][BARE])),
            ]
            for n, row in summary.items()
        ],
    )
    return [throughput, latency]


def run(quick: bool) -> BenchResult:
    runs, seconds = (1, 0.6) if quick else (3, 5.0)
    context = multiprocessing.get_context("spawn")
    barriers = {n: context.Barrier(n) for n in PROCESS_COUNTS}
    data: dict[str, Any] = {"runs": runs, "seconds_per_cell": seconds, "process_counts": list(PROCESS_COUNTS)}
    found: list[Table] = []
    # One pool for every cell: spawning 16 interpreters takes seconds on 2 cores, so it is paid once.
    with context.Pool(max(PROCESS_COUNTS), initializer=_keep_barriers, initargs=(barriers,)) as pool:
        warm_up(pool, max(PROCESS_COUNTS))
        for key, opener in (("sqlite", sqlite_backend), ("postgres", postgres_backend)):
            try:
                with opener() as backend:
                    data[key] = summarize(measure_backend(pool, backend, runs, seconds))
                    found += tables(backend.name, data[key])
            except OSError as exc:
                data[key] = {"skipped": str(exc)}
    found[-1].notes += notes(data)
    return BenchResult("leases", summary(data), found, data, losses=losses(data))


def notes(data: dict[str, Any]) -> list[str]:
    said = [
        f"Each process owns one debate and loops claim → refresh → release for {data['seconds_per_cell']:g} s; "
        f"median of {data['runs']} run(s). Calls/s counts every call of every process.",
        "Bare transaction: BEGIN, one UPDATE of the process's own row, COMMIT, through the same driver and "
        "settings as moot. Lease call cost: the bare transaction rate ÷ the lease call rate at the same load.",
        "SQLite has one writer at a time: a writer that finds the file locked sleeps in SQLite's busy handler "
        "(up to 100 ms a try) and can lose the race again, which is the p99 of claim and of the bare transaction "
        "from 4 processes up; so there the two rates, and their ratio, say more about who wins the lock than "
        "about the work done.",
    ]
    if "skipped" in data["postgres"]:
        said.append(f"PostgreSQL skipped: {data['postgres']['skipped']}.")
    return said


def summary(data: dict[str, Any]) -> str:
    top = str(PROCESS_COUNTS[-1])
    parts = [
        f"{name}: a lease call costs {fmt_ratio(data[key]['1']['lease_op_cost_in_bare_transactions'])} a bare write "
        f"transaction alone and {fmt_ratio(data[key][top]['lease_op_cost_in_bare_transactions'])} with {top} "
        f"processes, which reach {fmt_ratio(data[key][top]['lease_scaling'])} the 1-process rate"
        for key, name in (("sqlite", "SQLite"), ("postgres", "PostgreSQL"))
        if "skipped" not in data[key]
    ]
    return "; ".join(parts) + "."


# Why a lease call does more than the bare one-UPDATE transaction, per backend (ledger/sqlite.py, ledger/postgres.py).
WHY_DEARER = {
    "sqlite": (
        "a claim is two transactions (a snapshot read, then the locked write), every call reads the debate and its"
        " lease before it writes, and refresh and release add an audit row: about three times the statements of the"
        " bare transaction, plus moot's own work per call."
    ),
    "postgres": (
        "each call is one statement, but a conditional upsert or UPDATE … RETURNING that checks the fencing and"
        " writes the audit row in a CTE touches three tables where the bare transaction touches one, plus moot's"
        " own work per call."
    ),
}


def losses(data: dict[str, Any]) -> list[str]:
    """Where a lease call costs clearly more than the bare commit, said with the cause."""
    found = []
    for key, name in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        if "skipped" in data[key]:
            continue
        worst_n, worst = max(
            ((n, row["lease_op_cost_in_bare_transactions"]) for n, row in data[key].items()), key=lambda x: x[1]
        )
        if worst < 1.5:
            continue
        found.append(
            f"On {name} with {worst_n} process(es) a lease call costs {fmt_ratio(worst)} a bare write transaction: "
            + WHY_DEARER[key]
            + " While the commit's disk flush is the bottleneck this hardly shows; once the CPU is, it shows in full."
        )
    return found

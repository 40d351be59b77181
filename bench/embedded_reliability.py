"""embedded-reliability: how often the embedded model ends a debate with a valid protocol outcome.

Each case runs ``moot run`` in a fresh process with the default agent (``local``, SmolLM2-135M) on its own
topic — a 2-round critique or a 2-turn duel over a short source document — and then ``moot check`` on its
record. A run ends *validly* when its outcome is one the protocol itself defines (critique: DONE, STUCK,
MAX_ROUNDS; duel: ACCEPTED_CONSENSUS, DISSENT, MAX_TURNS), reached by the debate rather than by the engine
giving up (an agent failure, repairs exhausted, a budget), and ``moot check`` passes on the record.

The baseline is the same cases run on the code of ``BASELINE`` (extracted with ``git archive`` and put first
on ``PYTHONPATH``), interleaved with the current code's runs so both share the machine's load.
``python -m bench.embedded_reliability --side baseline|current --runs N --out FILE`` runs one side alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.common import BenchResult, Table

# The last commit before the embedded model got its own turn bounds, tolerant reply reading and its grammar fix.
BASELINE = "2e24fb3"
REPO = Path(__file__).resolve().parent.parent
FULL_RUNS = 20
QUICK_RUNS = 2
# A shared, loaded machine can be very slow: a turn may take this long (moot's default is 300 s), and a run
# past it is reported as unfinished.
RUN_TIMEOUT_S = 2400.0
PROTOCOLS = ("critique", "duel")
VALID = {
    "critique": {"DONE", "STUCK", "MAX_ROUNDS"},
    "duel": {"ACCEPTED_CONSENSUS", "DISSENT", "MAX_TURNS"},
}
UNFINISHED = "unfinished"  # no end within RUN_TIMEOUT_S: the machine's load, not counted either way
# The baseline's code gives the local model a fixed 120 s per request whatever --turn-timeout says, so on a
# loaded machine its runs can end on the clock; such an ending is the load's, and counted as unfinished too.
LOAD_ENDINGS = ("did not finish within",)
# Reasons the engine (not the protocol) gives when it ends a run: these are not protocol outcomes.
ENGINE_ENDINGS = ("gave no valid turn", "'s agent failed", "the run reached", "the run spent", "the run used")
TOPICS = [
    ("Adopt a monorepo for our services", "All services move into one repository with one build."),
    ("Rate limiting for the public API", "Every key gets 100 requests per minute, enforced at the gateway."),
    ("Move the nightly batch jobs to a queue", "Jobs become messages; workers scale with the queue depth."),
    ("Replace REST with GraphQL for the mobile app", "One endpoint serves every screen's query."),
    ("Cache user sessions in Redis", "Sessions leave the database and expire after one hour in Redis."),
    ("Adopt feature flags for every release", "Every change ships dark and is turned on per customer."),
    ("Write the CLI in Rust instead of Python", "A single static binary replaces the Python package."),
    ("Use event sourcing for orders", "Orders are rebuilt from an append-only log of events."),
    ("Run the database on Kubernetes", "PostgreSQL runs in a StatefulSet with local volumes."),
    ("Require code review for every commit", "No commit reaches main without one approving review."),
    ("Switch logging to structured JSON", "Every log line becomes one JSON object with fixed keys."),
    ("Deploy to production on Fridays", "The release train runs every weekday, Friday included."),
    ("Shard the users table by region", "Each region holds its own users; a router finds the shard."),
    ("Adopt trunk-based development", "Branches live less than a day and merge straight to main."),
    ("Replace cron with a workflow engine", "Scheduled tasks become workflows with retries and history."),
    ("Encrypt every backup with customer keys", "Each customer's backups use a key that customer holds."),
    ("Drop support for Python 3.9", "The next release requires Python 3.10 or newer."),
    ("Use one shared design system for all apps", "Every front end takes its components from one library."),
    ("Put a CDN in front of the API", "Cacheable GET responses are served from the edge for a minute."),
    ("Make on-call a paid rotation", "Engineers on call receive a fixed weekly allowance."),
    ("Store documents in object storage", "Uploaded files leave the database for an S3-compatible store."),
    ("Adopt OpenTelemetry for tracing", "Every service exports traces through one collector."),
    ("Retire the legacy billing service", "Invoices move to the new billing platform by the end of the quarter."),
    ("Allow remote work four days a week", "The office is for one fixed team day each week."),
]


@dataclass(frozen=True)
class Outcome:
    """One run: which protocol and topic, how it ended, whether it is valid, and why not."""

    protocol: str
    topic: str
    outcome: str | None
    reason: str | None
    check_ok: bool
    valid: bool
    problem: str


def baseline_source(work: Path) -> Path:
    """The ``src`` directory of ``BASELINE``, extracted from git."""
    target = work / "baseline"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", BASELINE, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target / "src"


def moot(args: Sequence[str], src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "moot", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )


def run_case(protocol: str, index: int, src: Path, work: Path) -> Outcome:
    topic, claim = TOPICS[index % len(TOPICS)]
    root = work / f"{protocol}-{index}"
    root.mkdir(parents=True)
    if protocol == "critique":
        args = ["run", "critique", "--topic", topic, "--max-rounds", "2"]
    else:
        source = root / "proposal.md"
        source.write_text(f"# {topic}\n\n## Proposal\n{claim}\n\n## Why\nIt is simpler to run.\n", encoding="utf-8")
        args = ["run", "duel", str(source), "--max-turns", "2"]
    try:
        done = moot([*args, "--json", "--root", str(root), "--turn-timeout", f"{RUN_TIMEOUT_S:g}"], src, root)
    except subprocess.TimeoutExpired:
        return Outcome(protocol, topic, None, None, False, False, UNFINISHED)
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Outcome(protocol, topic, None, None, False, False, f"exit {done.returncode}: {tail}")
    name, reason = result.get("outcome"), result.get("reason") or ""
    if any(mark in reason for mark in LOAD_ENDINGS):
        return Outcome(protocol, topic, name, reason, False, False, UNFINISHED)
    check = moot(["check", result["artifact"]], src, root)
    engine_end = name not in VALID[protocol] or any(mark in reason for mark in ENGINE_ENDINGS)
    problem = "the engine ended the run" if engine_end else ""
    if check.returncode != 0:
        problem = problem or f"moot check exit {check.returncode}"
    valid = not engine_end and check.returncode == 0
    return Outcome(protocol, topic, name, reason, check.returncode == 0, valid, problem)


def measure(sides: dict[str, Path], runs: int, work: Path, workers: int = 1) -> dict[str, list[Outcome]]:
    """Run every case on every side, interleaved (``workers`` at a time), printing one line per run."""
    cases = [(index, protocol, side) for index in range(runs) for protocol in PROTOCOLS for side in sides]

    def one(case: tuple[int, str, str]) -> Outcome:
        index, protocol, side = case
        outcome = run_case(protocol, index, sides[side], work / side)
        mark = "valid" if outcome.valid else f"INVALID ({outcome.problem}: {outcome.reason})"
        print(f"   {side} {protocol} {index + 1}/{runs}: {outcome.outcome} {mark}", flush=True)
        return outcome

    with ThreadPoolExecutor(workers) as pool:
        outcomes = list(pool.map(one, cases))
    return {side: [o for (_, _, s), o in zip(cases, outcomes, strict=True) if s == side] for side in sides}


def rate(outcomes: list[Outcome], protocol: str) -> tuple[int, int]:
    """Valid runs over finished runs of ``protocol``."""
    mine = [o for o in outcomes if o.protocol == protocol and o.problem != UNFINISHED]
    return sum(o.valid for o in mine), len(mine)


def endings(outcomes: list[Outcome], protocol: str) -> str:
    counts: dict[str, int] = {}
    for o in outcomes:
        if o.protocol == protocol:
            key = o.outcome if o.valid else f"{o.outcome or 'none'} ({o.problem})"
            counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{key} ×{count}" for key, count in sorted(counts.items(), key=lambda kv: -kv[1]))


def result_of(found: dict[str, list[Outcome]]) -> BenchResult:
    rows = []
    for protocol in PROTOCOLS:
        for side, outcomes in found.items():
            valid, total = rate(outcomes, protocol)
            label = f"{side} ({BASELINE})" if side == "baseline" else side
            rate_text = f"{valid / total:.0%}" if total else "–"
            rows.append([protocol, label, f"{valid}/{total}", rate_text, endings(outcomes, protocol)])
    table = Table(
        "Valid endings of the embedded model (SmolLM2-135M, `--agents local`): 2-round critique, 2-turn duel",
        ["debate", "code", "valid runs", "rate", "endings"],
        rows,
        [
            "Valid: the protocol's own outcome (not an engine ending) and `moot check` passes on the record.",
            f"Runs that did not end within {RUN_TIMEOUT_S:g} s (machine load) are listed as unfinished, not counted.",
            "Each run is a fresh `moot run` process on its own topic; the two sides' runs are interleaved.",
        ],
    )
    summary = "; ".join(f"{row[0]} on {row[1]}: {row[2]} valid ({row[3]})" for row in rows)
    data = {side: [asdict(o) for o in outcomes] for side, outcomes in found.items()}
    return BenchResult("embedded-reliability", summary, [table], data)


def run(quick: bool) -> BenchResult:
    from moot.agents.llama_server import embedded_model_missing

    missing = embedded_model_missing()
    if missing:
        return BenchResult("embedded-reliability", "", [], {}, skipped=missing)
    with tempfile.TemporaryDirectory(prefix="moot-embedded-") as tmp:
        work = Path(tmp)
        sides = {"baseline": baseline_source(work), "current": REPO / "src"}
        return result_of(measure(sides, QUICK_RUNS if quick else FULL_RUNS, work))


def outcomes_in(path: Path, side: str) -> list[Outcome]:
    """One side's outcomes from its ``--out`` file, load endings counted as unfinished."""
    rows = json.loads(path.read_text(encoding="utf-8"))["data"][side]
    outcomes = [Outcome(**row) for row in rows]
    return [
        Outcome(o.protocol, o.topic, o.outcome, o.reason, False, False, UNFINISHED)
        if any(mark in (o.reason or "") for mark in LOAD_ENDINGS)
        else o
        for o in outcomes
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embedded_reliability", description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=["baseline", "current"])
    parser.add_argument(
        "--combine",
        nargs=2,
        type=Path,
        metavar=("BASELINE.json", "CURRENT.json"),
        help="one result from two sides' files",
    )
    parser.add_argument("--runs", type=int, default=FULL_RUNS)
    parser.add_argument("--out", type=Path, required=True, help="a JSON file for the outcomes")
    parser.add_argument("--src", type=Path, help="the current side's source tree (default: this checkout's src)")
    parser.add_argument("--workers", type=int, default=1, help="runs at once (each uses 2 threads)")
    parser.add_argument(
        "--merge", action="store_true", help="with --combine: put the result into bench/RESULTS.md and results.json"
    )
    args = parser.parse_args(argv)
    if args.combine:
        found = {
            side: outcomes_in(path, side) for side, path in zip(("baseline", "current"), args.combine, strict=True)
        }
        combined = result_of(found)
        args.out.write_text(json.dumps(asdict(combined), indent=2) + "\n", encoding="utf-8")
        print(combined.summary)
        if args.merge:
            from bench import machine, report

            bench_dir = REPO / "bench"
            command = shlex.join(
                ["python", "-m", "bench.embedded_reliability", *(sys.argv[1:] if argv is None else argv)]
            )
            results = report.merged(bench_dir, "results", [combined])
            md, _ = report.write(bench_dir, "results", machine.describe(command), results, quick=False)
            print(f"wrote {md}")
        return 0
    if args.side is None:
        parser.error("give --side, or --combine with the two sides' files")
    with tempfile.TemporaryDirectory(prefix="moot-embedded-") as tmp:
        work = Path(tmp)
        src = baseline_source(work) if args.side == "baseline" else (args.src or REPO / "src")
        found = measure({args.side: src}, args.runs, work, args.workers)
    result = result_of(found)
    args.out.write_text(json.dumps(asdict(result), indent=2) + "\n", encoding="utf-8")
    print(result.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

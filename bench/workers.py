"""Does ``moot run --batch --workers N`` use every core? The same batch, run as a user runs it, with 1, 2 and 4
workers, against bench/slow_server.py (an OpenAI-compatible server on loopback that answers at once: latency 0).

Every turn goes through the official OpenAI SDK, about 4 ms of CPU in moot's process, so one interpreter tops
out near a few hundred turns a second however fast the model is; a batch dealt to more processes can go past
that when the machine has the cores. The server runs in its own process and takes CPU too, so the ideal is
below the number of cores; past the core count, more workers only share the same cores. Each figure is the
median of several runs, in a fresh work root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Table, fmt, fmt_ratio, median
from bench.scripted import durable_dir, memory_dir
from bench.slow_server import running

REPO = Path(__file__).resolve().parent.parent
LATENCY_S = 0.0  # the server answers at once: moot's own CPU sets the pace
LEVELS = (1, 2, 4)
DEBATES_QUICK, DEBATES_FULL = 200, 400
RUNS_QUICK, RUNS_FULL = 1, 3
CONCURRENCY = 16  # debates in flight per worker: enough to keep its CPU busy with a server that answers at once
ROUNDS = 1  # two turns per debate, ending MAX_ROUNDS


def batch_file(root: Path, debates: int, port: int) -> Path:
    spec = f"openai:slow@http://127.0.0.1:{port}/v1"
    lines = [
        {
            "protocol": "critique",
            "topic": f"Adopt a monorepo {n}",
            "max_rounds": ROUNDS,
            "agents": spec,
            "root": str(root),
        }
        for n in range(debates)
    ]
    path = root / "batch.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def one_run(debates: int, workers: int, port: int) -> dict[str, Any]:
    # Records on tmpfs where there is one: each turn's fsync on a real disk would otherwise set the pace, and
    # what workers add is CPU (the durable disk's own pace is the concurrency benchmark's subject).
    root = memory_dir() or durable_dir()
    try:
        batch = batch_file(root, debates, port)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "moot", "run", "--batch", str(batch), "--concurrency", str(CONCURRENCY),
             "--workers", str(workers)],
            cwd=root, capture_output=True, text=True, check=False, env={**os.environ, "OPENAI_API_KEY": "sk-bench"},
        )  # fmt: skip
        wall = time.perf_counter() - started
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        turns = sum(int(row.get("turns", 0)) for row in rows)
        failed = [row for row in rows if "error" in row or row.get("outcome") != "MAX_ROUNDS"]
        if failed or len(rows) != debates:
            raise RuntimeError(
                f"{len(failed)} of {len(rows)} debates did not end MAX_ROUNDS: {failed[:1]} {done.stderr[-300:]}"
            )
        return {"wall_s": wall, "turns": turns}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(quick: bool) -> BenchResult:
    debates, runs = (DEBATES_QUICK, RUNS_QUICK) if quick else (DEBATES_FULL, RUNS_FULL)
    cores = os.cpu_count() or 1
    levels = list(LEVELS)
    with running(LATENCY_S) as server:
        measured = {w: [one_run(debates, w, server.port) for _ in range(runs)] for w in levels}
    rate = {w: median([r["turns"] / r["wall_s"] for r in found]) for w, found in measured.items()}
    rows = [
        [str(w), fmt(median([r["wall_s"] for r in measured[w]]), 1), fmt(rate[w], 0), fmt_ratio(rate[w] / rate[1])]
        for w in levels
    ]
    best_workers = max(levels, key=lambda w: rate[w])
    best = rate[best_workers] / rate[1]
    losses = [] if best > 1.1 else [f"no number of workers beats one by 10% on {cores} cores (best {best:.2f}×)"]
    table = Table(
        f"moot run --batch: {debates} critiques of 2 turns against a loopback server that answers at once",
        ["workers", "wall s", "turns/s", "vs 1 worker"],
        rows,
        [
            f"{CONCURRENCY} debates in flight per worker; the server is a separate process on the same {cores} cores; "
            "records on tmpfs (/dev/shm) where there is one, so that the CPU, not the disk's fsync, sets the pace."
        ],
    )
    summary = (
        f"On {cores} cores, "
        + ", ".join(f"--workers {w}: {rate[w] / rate[1]:.2f}×" for w in levels[1:])
        + f" the turns/s of one worker ({rate[1]:.0f} turns/s)"
    )
    return BenchResult("workers", summary, [table], {"turns_per_s": rate, "debates": debates, "runs": runs}, losses)

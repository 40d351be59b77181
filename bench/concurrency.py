"""How moot scales with concurrent debates: 1, 10, 100 (and 1000 in full mode) scripted debates at once.

Each level runs in a fresh child process (``python -m bench.concurrency --child N``) so its peak RSS is its
own: the child imports moot, starts N scripted critiques (bench/scripted.py) with durable records on the
real disk, runs them with ``asyncio.gather`` and reports the wall time of the gather and its peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Table, fmt, fmt_ratio, median, ratio
from bench.scripted import TURNS_PER_DEBATE, durable_dir, expect_done, filesystem_type, run_moot_debate

REPO = Path(__file__).resolve().parent.parent
QUICK_RUNS = {
    1: 5,
    10: 2,
    100: 1,
}  # the one-debate level is short, so noisy: more runs  # level -> runs (fresh processes) per level
FULL_RUNS = {1: 5, 10: 5, 100: 3, 1000: 1}
SLOWDOWN = 0.8  # a level below this share of the one-debate turns/s is reported as a loss


def peak_rss_mib() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child would
    report its parent's peak when the parent was bigger."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def gather_debates(root: Path, count: int) -> float:
    """Wall seconds to run ``count`` debates at once; every one must end DONE after six turns."""
    started = time.perf_counter()
    results = await asyncio.gather(*(run_moot_debate(root, index) for index in range(count)))
    elapsed = time.perf_counter() - started
    for result in results:
        expect_done(result)
    return elapsed


def child(count: int) -> dict[str, Any]:
    """One level, in this (fresh) process."""
    root = durable_dir()
    try:
        rss_before = peak_rss_mib()  # the interpreter and the imports, before any debate
        wall = asyncio.run(gather_debates(root, count))
        peak = peak_rss_mib()
        where = f"{root.parent}, {filesystem_type(root.parent) or 'unknown fs'}"
        return {"debates": count, "wall_s": wall, "rss_before_mib": rss_before, "peak_rss_mib": peak, "dir": where}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_level(count: int) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-m", "bench.concurrency", "--child", str(count)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the {count}-debate child failed: {completed.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def run(quick: bool) -> BenchResult:
    plan = QUICK_RUNS if quick else FULL_RUNS
    runs: dict[int, list[dict[str, Any]]] = {count: [] for count in plan}
    # Levels take turns run by run, so drift on a shared machine spreads over all of them.
    for round_ in range(max(plan.values())):
        for count, wanted in plan.items():
            if round_ < wanted:
                runs[count].append(run_level(count))

    levels: dict[int, dict[str, Any]] = {}
    for count, samples in runs.items():
        wall = median([s["wall_s"] for s in samples])
        levels[count] = {
            "runs": len(samples),
            "wall_s": wall,
            "turns_per_s": count * TURNS_PER_DEBATE / wall,
            "peak_rss_mib": median([s["peak_rss_mib"] for s in samples]),
            "rss_before_mib": median([s["rss_before_mib"] for s in samples]),
        }
    base = levels[1]
    rows = []
    for count, level in levels.items():
        growth = (level["peak_rss_mib"] - base["peak_rss_mib"]) * 1024 / (count - 1) if count > 1 else None
        level["turns_per_s_ratio"] = ratio(level["turns_per_s"], base["turns_per_s"])
        level["rss_growth_kib_per_debate"] = growth
        rows.append(
            [
                count,
                level["runs"],
                fmt(level["wall_s"], 3),
                fmt(level["turns_per_s"], 0),
                fmt_ratio(level["turns_per_s_ratio"]),
                fmt(level["peak_rss_mib"], 1),
                "—" if growth is None else fmt(growth, 1),
            ]
        )
    top = max(levels)
    single_runs = [str(count) for count, level in levels.items() if level["runs"] == 1]
    notes = [
        "One fresh process per run and level; each runs N scripted 2-party 6-turn critiques at once with "
        "asyncio.gather, records durable (fsync'd) on the real disk "
        f"({runs[1][0]['dir']}). Wall time covers the gather only (not the interpreter "
        "start or the imports). Figures are medians over the runs column"
        + (f"; the {', '.join(single_runs)}-debate level ran once." if single_runs else ".")
        + " Peak RSS is the child's VmHWM (its peak resident set), which includes the interpreter and imports "
        f"(about {fmt(base['rss_before_mib'], 1)} MiB before the first debate).",
        "The agents answer at once and moot writes each turn synchronously (temp file + fsync + rename) on the "
        "event loop thread, so concurrency cannot overlap the disk writes and turns/s cannot rise much above the "
        "one-debate rate. With real models, debates wait on their agents and those waits overlap.",
    ]
    table = Table(
        title="Concurrent scripted debates in one process (durable records)",
        columns=[
            "debates",
            "runs",
            "wall s",
            "turns/s",
            "turns/s vs 1 debate",
            "peak RSS MiB",
            "RSS growth KiB per extra debate",
        ],
        rows=rows,
        notes=notes,
    )
    summary = (
        f"{top} concurrent scripted debates run at {fmt(levels[top]['turns_per_s'], 0)} turns/s "
        f"({fmt_ratio(levels[top]['turns_per_s_ratio'])} the single-debate rate) with a peak RSS of "
        f"{fmt(levels[top]['peak_rss_mib'], 1)} MiB (1 debate: {fmt(base['peak_rss_mib'], 1)} MiB)."
    )
    losses = [
        f"concurrency: {count} debates at once run at {fmt(level['turns_per_s'], 0)} turns/s, "
        f"{fmt_ratio(level['turns_per_s_ratio'])} the one-debate rate. Each turn's work (validation and the "
        "fsync'd writes) runs synchronously on the one event-loop thread, so concurrent debates cannot beat one "
        "after another. This run did not profile the drop itself; the one-debate level lasts well under a second, "
        "so it is the noisiest figure of the table."
        for count, level in levels.items()
        if level["turns_per_s_ratio"] < SLOWDOWN
    ]
    data = {"levels": {str(count): level for count, level in levels.items()}, "statistic": "median over runs"}
    return BenchResult("concurrency", summary, [table], data, losses)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrency")
    parser.add_argument("--child", type=int, required=True, help="run this many debates at once; print JSON")
    print(json.dumps(child(parser.parse_args().child)))


if __name__ == "__main__":
    main()

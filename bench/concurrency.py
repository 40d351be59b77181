"""How moot scales with concurrent debates: 1, 10, 100 (and 1000 in full mode) scripted debates at once, and
1,000 (10,000 in full mode) debates against a loopback model server that answers after 1 s.

Each level runs in a fresh child process (``python -m bench.concurrency --child N``) so its peak RSS is its
own: the child imports moot, starts N scripted critiques (bench/scripted.py) with durable records on the
real disk, runs them with ``asyncio.gather`` and reports the wall time of the gather and its peak RSS. With
``--server-child N --port P`` the debates' agent is moot's OpenAI-compatible agent talking to
bench/slow_server.py, so each turn waits 1 s on the model, as a real one would make it wait.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Table, fmt, fmt_ratio, median, ratio
from bench.scripted import TURNS_PER_DEBATE, durable_dir, expect_done, filesystem_type, run_moot_debate
from bench.slow_server import running

REPO = Path(__file__).resolve().parent.parent
QUICK_RUNS = {
    1: 5,
    10: 2,
    100: 1,
}  # the one-debate level is short, so noisy: more runs  # level -> runs (fresh processes) per level
FULL_RUNS = {1: 5, 10: 5, 100: 3, 1000: 1}
SLOWDOWN = 0.8  # a level below this share of the one-debate turns/s is reported as a loss
SERVER_LATENCY_S = 1.0
SERVER_ROUNDS = 1  # 2 turns per debate, ending MAX_ROUNDS
SERVER_DEBATES_QUICK, SERVER_DEBATES_FULL = 1000, 10_000
SERVER_GOAL = 0.9  # of the ideal N ÷ latency turns/s


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


async def gather_server_debates(root: Path, count: int, port: int) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (all threads) and turns of ``count`` critiques at once, every turn asked of the
    loopback server."""
    from moot.agents.openai_compat import OpenAIAgent
    from moot.engine.loop import Engine, Limits, now_minutes
    from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions

    # One agent for every debate, with its own HTTP client (no pool limit: every debate's request is in flight).
    agent = OpenAIAgent("slow", base_url=f"http://127.0.0.1:{port}/v1")

    async def debate(index: int) -> int:
        options = CritiqueOptions(topic=f"Adopt a monorepo {index}", max_rounds=SERVER_ROUNDS)
        # Creating a record fsyncs it; a host running many debates does that off its event loop too.
        driver = await asyncio.to_thread(CritiqueDriver.start, root, options, now_minutes())
        result = await Engine(driver, {"proposer": agent, "critic": agent}, Limits()).run()
        if result.outcome is None or result.outcome.name != "MAX_ROUNDS":
            raise RuntimeError(f"a debate against the server ended {result.outcome!r}")
        return result.summary.turns

    started, cpu = time.perf_counter(), time.process_time()
    turns = await asyncio.gather(*(debate(index) for index in range(count)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    await agent.aclose()
    return elapsed, cpu, sum(turns)


def server_child(count: int, port: int) -> dict[str, Any]:
    root = durable_dir()
    try:
        rss_before = peak_rss_mib()
        wall, cpu, turns = asyncio.run(gather_server_debates(root, count, port))
        return {
            "debates": count,
            "turns": turns,
            "wall_s": wall,
            "cpu_s": cpu,
            "rss_before_mib": rss_before,
            "peak_rss_mib": peak_rss_mib(),
            "load_average": os.getloadavg()[0],
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_server_level(count: int) -> dict[str, Any]:
    """``count`` debates in a fresh child against a fresh slow server (its own process)."""
    with running(SERVER_LATENCY_S) as server:
        completed = subprocess.run(
            [sys.executable, "-m", "bench.concurrency", "--server-child", str(count), "--port", str(server.port)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
    if completed.returncode != 0:  # a level that cannot finish is a finding, reported as such
        lines = completed.stderr.strip().splitlines()
        return {"debates": count, "failed": lines[-1] if lines else f"exit {completed.returncode}"}
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    result["server"] = server.said
    return result


def server_failure(level: dict[str, Any]) -> tuple[Table, list[str], str]:
    count = level["debates"]
    table = Table(
        title=f"{count:,} concurrent debates against a loopback model server that answers after {SERVER_LATENCY_S:g} s",
        columns=["debates", "result"],
        rows=[[f"{count:,}", f"did not finish: {level['failed']}"]],
        notes=["The run stops at the first debate that does not end by the protocol's own rule."],
    )
    loss = (
        f"concurrency: {count:,} debates at once against a {SERVER_LATENCY_S:g} s server did not finish: "
        f"{level['failed']}. Every request is issued at once and each costs moot CPU in one interpreter (the "
        "OpenAI SDK's request building, the HTTP exchange, validation, the commit), so the last requests wait "
        "past the agent's per-request deadline."
    )
    return table, [loss], f"{count:,} debates against a {SERVER_LATENCY_S:g} s server did not finish"


def server_table(level: dict[str, Any]) -> tuple[Table, list[str], str]:
    if "failed" in level:
        return server_failure(level)
    count, turns, wall = level["debates"], level["turns"], level["wall_s"]
    ideal = count / SERVER_LATENCY_S
    achieved = turns / wall
    share = achieved / ideal
    table = Table(
        title=f"{count:,} concurrent debates against a loopback model server that answers after {SERVER_LATENCY_S:g} s",
        columns=[
            "debates",
            "turns",
            "wall s",
            "turns/s",
            "ideal turns/s (N ÷ latency)",
            "achieved ÷ ideal",
            "CPU ms per turn",
            "peak RSS MiB",
        ],
        rows=[
            [
                f"{count:,}",
                f"{turns:,}",
                fmt(wall, 1),
                fmt(achieved, 0),
                fmt(ideal, 0),
                fmt_ratio(share),
                fmt(level["cpu_s"] * 1000 / turns, 2),
                fmt(level["peak_rss_mib"], 1),
            ]
        ],
        notes=[
            f"One fresh process runs {count:,} critiques of {2 * SERVER_ROUNDS} turns at once (asyncio.gather), each "
            "turn a real HTTP request from moot's OpenAI-compatible agent (one agent and its own HTTP client, whose small "
            "connection pools take any number of requests at once) to "
            f"bench/slow_server.py in another process, which answers every request after {SERVER_LATENCY_S:g} s. "
            "Records are durable on the real disk; commits run on worker threads. Ideal: every debate's turn waits "
            "only on the server, so N debates make N turns per second. Goals: ≥ 0.9× the ideal in < 1 GiB.",
            f"The server answered {level['server']['answers']:,} requests, past its {SERVER_LATENCY_S:g} s by "
            f"{fmt(level['server']['late_p50_s'] * 1000, 1)} ms at the median, {fmt(level['server']['late_p99_s'] * 1000, 1)} ms "
            f"at p99 and {fmt(level['server']['late_max_s'] * 1000, 1)} ms at worst (from reading a request to writing "
            "its answer), so the server itself is not what holds the turns back.",
            f"CPU ms per turn: the child's CPU time (every thread) over the gather ÷ turns; at that cost one core "
            f"makes at most {fmt(1000 / max(level['cpu_s'] * 1000 / turns, 1e-9), 0)} turns/s. The load average "
            f"was {fmt(level['load_average'], 1)} on 2 cores when the child finished: under such load the "
            "process waits for a core, and the wall-clock figures say more about the machine than about moot.",
        ],
    )
    losses = []
    if share < SERVER_GOAL:
        losses.append(
            f"concurrency: {count:,} debates against a {SERVER_LATENCY_S:g} s server make {fmt(achieved, 0)} turns/s, "
            f"{fmt_ratio(share)} the ideal {fmt(ideal, 0)} (goal ≥ 0.9×): each turn costs "
            f"{fmt(level['cpu_s'] * 1000 / turns, 1)} ms of CPU in one interpreter (the prompt, the OpenAI SDK's "
            "request building and its HTTP exchange, validation, the commit), so one core cannot make more than "
            f"{fmt(turns / level['cpu_s'], 0)} turns/s, and the ideal would need each turn under "
            f"{fmt(1000 / ideal, 2)} ms. The load average was {fmt(level['load_average'], 1)} on 2 cores."
        )
    if level["peak_rss_mib"] >= 1024:
        losses.append(f"concurrency: {count:,} debates peak at {fmt(level['peak_rss_mib'], 0)} MiB (goal < 1 GiB).")
    summary = (
        f"{count:,} debates against a {SERVER_LATENCY_S:g} s server: {fmt(achieved, 0)} turns/s, "
        f"{fmt_ratio(share)} the ideal, peak RSS {fmt(level['peak_rss_mib'], 0)} MiB"
    )
    return table, losses, summary


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
        "The agents answer at once; each turn's commit (one append + fsync) runs on a worker thread, so "
        "concurrent debates overlap their disk waits, while their CPU work shares the one interpreter.",
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
        f"{fmt_ratio(level['turns_per_s_ratio'])} the one-debate rate. Each turn's CPU work (prompt, validation) "
        "runs on the one interpreter; only the fsync'd commits overlap. This run did not profile the drop itself; "
        "the one-debate level lasts well under a second, so it is the noisiest figure of the table."
        for count, level in levels.items()
        if level["turns_per_s_ratio"] < SLOWDOWN
    ]
    server_level = run_server_level(SERVER_DEBATES_QUICK if quick else SERVER_DEBATES_FULL)
    served, served_losses, served_summary = server_table(server_level)
    data = {
        "levels": {str(count): level for count, level in levels.items()},
        "statistic": "median over runs",
        "server": {**server_level, "latency_s": SERVER_LATENCY_S},
    }
    return BenchResult("concurrency", f"{summary} {served_summary}.", [table, served], data, [*losses, *served_losses])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrency")
    parser.add_argument("--child", type=int, help="run this many scripted debates at once; print JSON")
    parser.add_argument("--server-child", type=int, help="run this many debates against the server at --port")
    parser.add_argument("--port", type=int, help="the slow server's port")
    args = parser.parse_args()
    if args.server_child is not None:
        print(json.dumps(server_child(args.server_child, args.port)))
    else:
        print(json.dumps(child(args.child)))


if __name__ == "__main__":
    main()

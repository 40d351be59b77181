"""A sealed phase asks its roles at once: its wall time against its slowest call and against asking in turn.

The phase is a Council's stage 1 with 4 members, each a participant that answers after 1 s (an asyncio
sleep, as a remote model's latency is). moot runs the phase (ask all, commit each answer's digest
durably, reveal all in one write) on a real disk. The phase's wall time is put beside the slowest call
of that same phase, and beside the same four calls asked one after another in the same run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from pathlib import Path

from bench.common import BenchResult, Table, fmt, fmt_ratio, median, ratio
from bench.scripted import durable_dir
from moot.agents.base import AgentReply, AgentRequest
from moot.agents.script import FunctionAgent
from moot.engine.loop import Engine, Limits, RunResult
from moot.engine.sealed import open_phase, run_phase
from moot.protocols.council.driver import CouncilDriver, CouncilOptions

MEMBERS = 4
CALL_S = 1.0
GOAL = 1.1  # the phase may take at most this multiple of its slowest call


def _agent() -> FunctionAgent:
    async def answer(request: AgentRequest) -> AgentReply:
        started = time.perf_counter()
        await asyncio.sleep(CALL_S)
        text = json.dumps({"answer": f"{request.role}: a shared cache with a per-tenant floor."})
        return AgentReply(text=text, latency_s=time.perf_counter() - started, model="bench:sleep-1s")

    return FunctionAgent(answer)


def _start(root: Path) -> CouncilDriver:
    members = tuple((f"member{index}", "bench:sleep-1s") for index in range(1, MEMBERS + 1))
    options = CouncilOptions(question="Should tenants share one cache?", members=members, seed=1)
    return CouncilDriver.start(root, options, "2026-11-24 21:00")


async def _sealed(root: Path) -> tuple[float, float]:
    """(wall s of the whole phase, latency s of its slowest call)."""
    driver = _start(root)
    agents = {role: _agent() for role in driver.roles()}
    engine = Engine(driver, agents, Limits(repairs=0))
    result = RunResult(driver.protocol, driver.record_path, driver.summary())
    phase = open_phase(driver)
    assert phase is not None and len(phase.roles) == MEMBERS
    started = time.perf_counter()
    await run_phase(engine, phase, result)
    wall = time.perf_counter() - started
    assert driver.machine.stage(driver.state) == 2, "the phase did not reveal every answer"
    return wall, max(row["latency_s"] for row in result.usage)


async def _in_turn() -> float:
    """The same four requests asked one after another: what a one-speaker-at-a-time loop pays."""
    agent = _agent()
    started = time.perf_counter()
    for index in range(MEMBERS):
        await agent.reply(AgentRequest(prompt="Q", role=f"member{index + 1}"))
    return time.perf_counter() - started


def run(quick: bool) -> BenchResult:
    runs = 3 if quick else 7
    walls: list[float] = []
    slowest: list[float] = []
    sequential: list[float] = []
    load = os.getloadavg()[0]
    for _ in range(runs):
        root = durable_dir()
        try:
            wall, slow = asyncio.run(_sealed(root))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        walls.append(wall)
        slowest.append(slow)
        sequential.append(asyncio.run(_in_turn()))
    per_run = [ratio(w, s) for w, s in zip(walls, slowest, strict=True)]
    phase_ratio = median(per_run)
    worst = max(per_run)
    table = Table(
        f"A sealed phase of {MEMBERS} participants that each answer after {CALL_S:g} s (Council stage 1, durable)",
        ["", "median wall (s)", "vs the slowest call"],
        [
            ["slowest call of the phase", fmt(median(slowest), 3), fmt_ratio(1.0)],
            ["the sealed phase (ask all, commit each, reveal)", fmt(median(walls), 3), fmt_ratio(phase_ratio)],
            [
                "the same calls asked in turn",
                fmt(median(sequential), 3),
                fmt_ratio(ratio(median(sequential), median(slowest))),
            ],
        ],
        [
            f"{runs} runs; the phase's ratio is taken per run (worst run {fmt_ratio(worst)}); goal ≤ {GOAL:g}×.",
            "The phase's own cost: each answer's commit (append + fsync, in a worker thread) and one reveal "
            "(the record and its chain rewritten, each with fsyncs).",
            f"Load average when the runs began: {load:.1f} on {os.cpu_count()} cores (a shared machine); the phase's "
            "own work (prompts, validation, fsyncs) waits for a core, the sleeping calls do not.",
        ],
    )
    summary = (
        f"A sealed phase of {MEMBERS} participants answering after {CALL_S:g} s each takes {fmt_ratio(phase_ratio)} its "
        f"slowest call (goal ≤ {GOAL:g}×); asked in turn they take {fmt_ratio(ratio(median(sequential), median(slowest)))}."
    )
    losses = []
    if phase_ratio > GOAL:
        losses.append(f"sealed: the phase took {fmt_ratio(phase_ratio)} its slowest call, over the {GOAL:g}× goal.")
    data = {
        "load_average": load,
        "walls_s": walls,
        "slowest_s": slowest,
        "sequential_s": sequential,
        "ratio": phase_ratio,
        "worst": worst,
    }
    return BenchResult("sealed", summary, [table], data, losses)

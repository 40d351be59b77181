"""Orchestration cost per turn with zero-latency scripted agents: moot vs AutoGen AgentChat vs LangGraph.

Every system runs the same 2-party 6-turn debate (bench/scripted.py), built afresh for each debate as moot
builds a fresh driver and record per debate. One timed sample is one whole debate (set-up included) divided
by its six turns. The systems take turns in interleaved batches, so drift on a shared machine hits all alike.
moot's time is then profiled once per mode with cProfile to name where it goes.
"""

from __future__ import annotations

import asyncio
import cProfile
import operator
import pstats
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import ChatAgent, Team
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.replay import ReplayChatCompletionClient
from langgraph.graph import END, START, StateGraph

from bench.common import BenchResult, Table, fmt, fmt_ratio, median, ratio
from bench.scripted import (
    ROLES,
    TOPIC,
    TURNS_PER_DEBATE,
    durable_dir,
    expect_done,
    filesystem_type,
    memory_dir,
    messages_of,
    remove_debate,
    run_moot_debate,
)

MOOT_MEMORY = "moot (in-memory)"
MOOT_DURABLE = "moot (durable)"
AUTOGEN = "AutoGen AgentChat"
LANGGRAPH = "LangGraph"
WARMUP = 5

# One debate; it returns the record it left on disk (removed after the clock stops), or None.
Debate = Callable[[int], Awaitable[Path | None]]


# --- the three systems, one debate each ------------------------------------------------------------


def moot_debate(root: Path) -> Debate:
    async def debate(index: int) -> Path:
        result = await run_moot_debate(root, index)
        expect_done(result)
        return result.record_path

    return debate


async def autogen_debate(index: int) -> None:
    """Two AssistantAgents with replayed replies in a round robin; the task message counts as one message."""
    agents: list[ChatAgent | Team] = [
        AssistantAgent(role, model_client=ReplayChatCompletionClient(messages_of(role))) for role in ROLES
    ]
    team = RoundRobinGroupChat(agents, termination_condition=MaxMessageTermination(TURNS_PER_DEBATE + 1))
    result = await team.run(task=TOPIC)
    if len(result.messages) != TURNS_PER_DEBATE + 1:
        raise RuntimeError(f"AutoGen stopped after {len(result.messages)} messages: {result.stop_reason}")


class DebateState(TypedDict):
    messages: Annotated[list[tuple[str, str]], operator.add]


def speak(state: DebateState) -> dict[str, list[tuple[str, str]]]:
    """A LangGraph node: the party whose turn it is appends its next canned reply."""
    said = len(state["messages"])
    role = ROLES[said % 2]
    return {"messages": [(role, messages_of(role)[said // 2])]}


def next_node(state: DebateState) -> str:
    said = len(state["messages"])
    return END if said >= TURNS_PER_DEBATE else ROLES[said % 2]


def langgraph_app() -> Any:
    """Two nodes, one per party, taking turns until six turns are on the list."""
    graph = StateGraph(DebateState)
    for role in ROLES:
        graph.add_node(role, speak)
        graph.add_conditional_edges(role, next_node)
    graph.add_edge(START, ROLES[0])
    return graph.compile()


async def langgraph_debate(index: int) -> None:
    final = await langgraph_app().ainvoke({"messages": []})
    if len(final["messages"]) != TURNS_PER_DEBATE:
        raise RuntimeError(f"LangGraph stopped after {len(final['messages'])} turns")


# --- timing --------------------------------------------------------------------------------------------


async def time_debates(debate: Debate, start: int, count: int) -> list[float]:
    """Seconds per turn of ``count`` debates run one after another on the running event loop."""
    samples = []
    for index in range(start, start + count):
        started = time.perf_counter()
        record = await debate(index)
        samples.append((time.perf_counter() - started) / TURNS_PER_DEBATE)
        if record is not None:
            remove_debate(record)
    return samples


async def measure(systems: dict[str, Debate], batches: int, per_batch: int) -> dict[str, list[list[float]]]:
    """Per system, ``batches`` lists of per-turn seconds; the systems alternate batch by batch."""
    for debate in systems.values():
        await time_debates(debate, 10**6, WARMUP)  # indices clear of the timed ones
    samples: dict[str, list[list[float]]] = {name: [] for name in systems}
    for batch in range(batches):
        for name, debate in systems.items():
            samples[name].append(await time_debates(debate, batch * per_batch, per_batch))
    return samples


# --- where moot's time goes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cost:
    label: str
    file_suffix: str  # of the function's file; "~" for built-ins
    function: str
    inclusive: bool = True  # cumulative time (with callees) rather than the function's own


FSYNC = "fsync itself"
RENAME = "rename itself (os.replace)"
REWRITES = "atomic file rewrites (temp + fsync + rename + dir fsync)"
COSTS = [
    Cost("reply JSON Schema rebuilt by pydantic (request_for)", "pydantic/main.py", "model_json_schema"),
    Cost("whole record re-parsed (critique._scan)", "moot/artifacts/critique.py", "_scan"),
    Cost(
        "every turn's timestamp re-validated by strptime (history replay)",
        "moot/protocols/critique.py",
        "timestamp_problem",
    ),
    Cost(REWRITES, "moot/artifacts/base.py", "atomic_write_text"),
    Cost(FSYNC, "~", "<built-in method posix.fsync>", inclusive=False),
    Cost(RENAME, "~", "<built-in method posix.replace>", inclusive=False),
    Cost("usage-log append per attempt (_record_usage)", "moot/engine/loop.py", "_record_usage"),
]


def profile_moot(root: Path, debates: int) -> dict[str, Any]:
    """cProfile ``debates`` moot debates under ``root``: per named cost, calls per turn and share of time."""
    profiler = cProfile.Profile()
    profiler.runcall(asyncio.run, time_debates(moot_debate(root), 0, debates))
    stats = pstats.Stats(profiler)
    table: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    total = float(stats.total_tt)  # type: ignore[attr-defined]
    turns = debates * TURNS_PER_DEBATE
    costs = {}
    for cost in COSTS:
        calls, seconds = 0, 0.0
        for (file, _, function), (_, ncalls, own, cumulative, _) in table.items():
            if function == cost.function and file.endswith(cost.file_suffix):
                calls += ncalls
                seconds += cumulative if cost.inclusive else own
        costs[cost.label] = {"calls_per_turn": round(calls / turns, 2), "share": round(seconds / total, 3)}
    top = sorted(table.items(), key=lambda item: item[1][2], reverse=True)[:8]
    top_own = [
        {"function": f"{Path(file).name}:{line}({name})", "share": round(own / total, 3)}
        for (file, line, name), (_, _, own, _, _) in top
    ]
    return {"debates": debates, "profiled_s": round(total, 3), "costs": costs, "top_self_time": top_own}


def profile_note(mode: str, profile: dict[str, Any]) -> str:
    parts = [
        f"{label} {cost['share']:.0%} ({cost['calls_per_turn']:g}/turn)"
        for label, cost in profile["costs"].items()
        if cost["calls_per_turn"]
    ]
    return (
        f"Where moot's time goes, {mode} (cProfile of {profile['debates']} debates; shares of profiled time, "
        f"nested items overlap): " + "; ".join(parts) + "."
    )


def cause_of(profile: dict[str, Any]) -> str:
    """What the profile blames: the fsyncs where they dominate (on disk), else the largest CPU costs."""
    costs = profile["costs"]
    fsync, rename, rewrites = costs[FSYNC], costs[RENAME], costs[REWRITES]
    if fsync["share"] >= 0.2:
        return (
            f"the record and its digest chain are each rewritten whole per turn (temp file, fsync, rename, "
            f"directory fsync) and the usage log is appended and fsync'd: "
            f"{fsync['calls_per_turn']:g} fsyncs per turn take {fsync['share']:.0%} of its "
            f"time, {rename['calls_per_turn']:g} renames {rename['share']:.0%}, those rewrites {rewrites['share']:.0%} "
            "in all"
        )
    ranked = sorted((item for item in costs.items() if item[0] not in (FSYNC, RENAME)), key=lambda i: -i[1]["share"])
    return "its largest costs are " + ", ".join(f"{label} ({cost['share']:.0%})" for label, cost in ranked[:3])


def loss_sentence(mode: str, per_turn_us: dict[str, float], beaten_by: list[str], profile: dict[str, Any]) -> str:
    moot_us = per_turn_us[mode]
    peers = " and ".join(
        f"{peer}'s {fmt(per_turn_us[peer], 0)} µs ({fmt_ratio(ratio(moot_us, per_turn_us[peer]))})"
        for peer in beaten_by
    )
    return (
        f"overhead: {mode} spends {fmt(moot_us, 0)} µs per turn of orchestration vs {peers}. moot checks each turn "
        f"against the protocol and writes it crash-safely, which the peers do not; by cProfile, {cause_of(profile)}."
    )


# --- the benchmark ----------------------------------------------------------------------------------------


def run(quick: bool) -> BenchResult:
    batches, per_batch = (3, 20) if quick else (5, 200)
    profiled = 10 if quick else 50
    durable = durable_dir()
    memory = memory_dir()
    roots = {MOOT_DURABLE: durable} | ({MOOT_MEMORY: memory} if memory is not None else {})
    try:
        systems: dict[str, Debate] = {name: moot_debate(root) for name, root in roots.items()}
        systems |= {AUTOGEN: autogen_debate, LANGGRAPH: langgraph_debate}
        samples = asyncio.run(measure(systems, batches, per_batch))
        profiles = {name: profile_moot(root, profiled) for name, root in roots.items()}
    finally:
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)

    per_turn_us = {name: median([s for batch in runs for s in batch]) * 1e6 for name, runs in samples.items()}
    batch_us = {name: [median(batch) * 1e6 for batch in runs] for name, runs in samples.items()}
    moot_modes = [name for name in (MOOT_MEMORY, MOOT_DURABLE) if name in per_turn_us]
    peers = [AUTOGEN, LANGGRAPH]
    rows = []
    for name in [*moot_modes, *peers]:
        rows.append(
            [
                name,
                fmt(per_turn_us[name], 0),
                fmt(per_turn_us[name] * TURNS_PER_DEBATE, 0),
                f"{fmt(min(batch_us[name]), 0)}–{fmt(max(batch_us[name]), 0)}",
                *[fmt_ratio(ratio(per_turn_us[mode], per_turn_us[name])) for mode in moot_modes],
            ]
        )
    reps = batches * per_batch
    notes = [
        f"Median of {reps} debates per system ({batches} interleaved batches of {per_batch}, after {WARMUP} "
        "warm-up debates), µs per turn = one whole debate's wall time ÷ 6 turns; set-up is included (moot: "
        "start the driver and write the record's header; AutoGen: build the agents and the team; LangGraph: "
        "build and compile the graph). The batch column is the range of the batch medians.",
        f"'in-memory' = moot's record under /dev/shm (tmpfs): every write still goes through moot's temp file + "
        f"fsync + rename path, but the files live in RAM. 'durable' = the record on the real disk "
        f"({durable.parent}, {filesystem_type(durable.parent) or 'unknown fs'}), fsync'd. AutoGen and LangGraph "
        "keep the conversation in memory only and write nothing.",
        "AutoGen: RoundRobinGroupChat of two AssistantAgents, each with a ReplayChatCompletionClient holding its "
        "3 replies, MaxMessageTermination(7) (the task message counts as one). LangGraph: a two-node StateGraph "
        "whose nodes append canned replies to a messages list until 6 turns, run with ainvoke.",
        *[profile_note(mode, profiles[mode]) for mode in moot_modes],
    ]
    if memory is None:
        notes.append("No /dev/shm here: the in-memory mode was left out.")
    table = Table(
        title="Orchestration cost per turn, zero-latency scripted agents (2 parties, 6 turns)",
        columns=["system", "µs per turn", "µs per debate", "batch medians µs/turn", *[f"{m} ÷ it" for m in moot_modes]],
        rows=rows,
        notes=notes,
    )
    losses = []
    for mode in moot_modes:
        beaten_by = [peer for peer in peers if per_turn_us[peer] < per_turn_us[mode]]
        if beaten_by:
            losses.append(loss_sentence(mode, per_turn_us, beaten_by, profiles[mode]))
    fastest = min(moot_modes, key=lambda mode: per_turn_us[mode])
    summary = (
        f"{fastest} costs {fmt(per_turn_us[fastest], 0)} µs per turn: "
        + ", ".join(f"{fmt_ratio(ratio(per_turn_us[fastest], per_turn_us[peer]))} {peer}'s" for peer in peers)
        + (
            f"; durable records cost {fmt(per_turn_us[MOOT_DURABLE], 0)} µs per turn."
            if MOOT_DURABLE in per_turn_us and fastest != MOOT_DURABLE
            else "."
        )
    )
    data = {
        "reps_per_system": reps,
        "batches": batches,
        "statistic": "median of per-debate µs per turn over all reps",
        "us_per_turn": {name: round(value, 1) for name, value in per_turn_us.items()},
        "batch_medians_us_per_turn": {name: [round(v, 1) for v in values] for name, values in batch_us.items()},
        "ratios": {
            f"{mode} / {other}": round(ratio(per_turn_us[mode], per_turn_us[other]), 3)
            for mode in moot_modes
            for other in [*moot_modes, *peers]
            if other != mode
        },
        "durable_dir_fs": filesystem_type(durable.parent),
        "profiles": profiles,
    }
    return BenchResult("overhead", summary, [table], data, losses)

"""Orchestration cost per turn with zero-latency scripted agents: moot vs AutoGen AgentChat vs LangGraph.

Every system runs the same 2-party 6-turn debate (bench/scripted.py), each the way its documentation shows:
moot starts a fresh driver and record per debate; LangGraph's graph is compiled once and invoked per debate;
AutoGen is run both ways its docs show, a team built per task and one team reset and reused. One timed
sample is one whole debate divided by its six turns. The systems take turns in interleaved batches, so drift
on a shared machine hits all alike. In the same run: the append + fsync floor of the disk the durable records
are on, and how the cost per turn grows with a debate's length (turn 6 vs turn 60). moot's time is then
profiled once per mode with cProfile to name where it goes.
"""

from __future__ import annotations

import asyncio
import cProfile
import functools
import json
import operator
import os
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
    run_long_moot_debate,
    run_moot_debate,
)

MOOT_MEMORY = "moot (in-memory)"
MOOT_DURABLE = "moot (durable)"
AUTOGEN = "AutoGen AgentChat (team per task)"
AUTOGEN_REUSED = "AutoGen AgentChat (team reset and reused)"
LANGGRAPH = "LangGraph (compiled once)"
LONG_TURNS = 60  # the cost-growth debate: a critique of 30 rounds
GROWTH_WINDOW = 3  # turns each side of turn 6 and turn 60 whose times are pooled
FLOOR = "append + fsync floor"
TURN_BYTES = 400  # about one scripted turn as the record holds it
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


def autogen_team() -> tuple[RoundRobinGroupChat, list[ReplayChatCompletionClient]]:
    """Two AssistantAgents with replayed replies in a round robin; the task message counts as one message."""
    clients = [ReplayChatCompletionClient(messages_of(role)) for role in ROLES]
    agents: list[ChatAgent | Team] = [
        AssistantAgent(role, model_client=client) for role, client in zip(ROLES, clients, strict=True)
    ]
    team = RoundRobinGroupChat(agents, termination_condition=MaxMessageTermination(TURNS_PER_DEBATE + 1))
    return team, clients


async def autogen_run(team: RoundRobinGroupChat) -> None:
    result = await team.run(task=TOPIC)
    if len(result.messages) != TURNS_PER_DEBATE + 1:
        raise RuntimeError(f"AutoGen stopped after {len(result.messages)} messages: {result.stop_reason}")


async def autogen_debate(index: int) -> None:
    """A team built for the task, as the AgentChat quickstart does."""
    team, _ = autogen_team()
    await autogen_run(team)


def autogen_reused() -> Debate:
    """One team, reset before each task (``team.reset()``), as the AgentChat docs show for a new task."""
    team, clients = autogen_team()

    async def debate(index: int) -> None:
        await team.reset()
        for client in clients:
            client.reset()  # the replayed replies start again
        await autogen_run(team)

    return debate


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


@functools.cache
def langgraph_app() -> Any:
    """Two nodes, one per party, taking turns until six turns are on the list; compiled once, as LangGraph's
    docs do (a compiled graph is reusable and holds no per-run state)."""
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


# --- the disk's floor and the cost's growth --------------------------------------------------------------


def floor_debate(directory: Path) -> Debate:
    """The least a durable debate can cost on that disk: one append of a turn-sized line + fsync per turn, to a
    file in ``directory``. Timed as a system of its own, so it meets the same conditions as moot's debates."""
    line = (json.dumps({"turn": 0, "text": "x" * TURN_BYTES}) + "\n").encode()

    async def debate(index: int) -> None:
        path = directory / f"floor-{index}.log"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for _ in range(TURNS_PER_DEBATE):
                os.write(fd, line)
                os.fsync(fd)
        finally:
            os.close(fd)
            path.unlink()

    return debate


async def turn_times(root: Path, debates: int) -> list[list[float]]:
    """Seconds of each turn (from one accepted turn to the next) of ``debates`` 60-turn critiques."""
    runs = []
    for index in range(debates):
        runs.append(await run_long_moot_debate(root, index, LONG_TURNS))
    return runs


def around(runs: list[list[float]], turn: int) -> float:
    """Median seconds per turn over the turns ``turn - GROWTH_WINDOW + 1 .. turn`` of every run."""
    return median([times[t - 1] for times in runs for t in range(turn - GROWTH_WINDOW + 1, turn + 1)])


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
    Cost("record appends (append + fsync)", "moot/artifacts/base.py", "append_record"),
    Cost("usage-log append per attempt (_write_row)", "moot/engine/loop.py", "_write_row"),
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
            f"{fsync['calls_per_turn']:g} fsyncs per turn (the record's append; the new record's header and "
            f"its directory once per debate) take {fsync['share']:.0%} of its time, {rename['calls_per_turn']:g} "
            f"renames {rename['share']:.0%}, whole-file rewrites {rewrites['share']:.0%}"
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


def growth_table(growth: dict[str, tuple[float, float]], debates: int) -> Table:
    rows = [
        [mode, fmt(at6 * 1e6, 0), fmt(at60 * 1e6, 0), fmt_ratio(ratio(at60, at6))]
        for mode, (at6, at60) in growth.items()
    ]
    return Table(
        title=f"Cost growth: µs per turn at turn 6 and at turn {LONG_TURNS} of one debate",
        columns=["system", "µs per turn at turn 6", f"µs per turn at turn {LONG_TURNS}", "ratio (goal ≤ 1.2×)"],
        rows=rows,
        notes=[
            f"{debates} scripted critiques of {LONG_TURNS} turns (30 rounds) per mode; a turn's time runs from the "
            f"previous accepted turn to its own (the engine's turn_accepted events), pooled over turns "
            f"{6 - GROWTH_WINDOW + 1}–6 and {LONG_TURNS - GROWTH_WINDOW + 1}–{LONG_TURNS} of every debate (median). "
            "Turn 60's prompt shows the participant the dialogue so far, so some growth is the prompt itself.",
        ],
    )


def run(quick: bool) -> BenchResult:
    batches, per_batch = (3, 20) if quick else (5, 200)
    profiled = 10 if quick else 50
    long_debates = 3 if quick else 10
    durable = durable_dir()
    memory = memory_dir()
    roots = {MOOT_DURABLE: durable} | ({MOOT_MEMORY: memory} if memory is not None else {})
    try:
        systems: dict[str, Debate] = {name: moot_debate(root) for name, root in roots.items()}
        systems |= {AUTOGEN: autogen_debate, AUTOGEN_REUSED: autogen_reused(), LANGGRAPH: langgraph_debate}
        systems[FLOOR] = floor_debate(durable)
        samples = asyncio.run(measure(systems, batches, per_batch))
        growth_runs = {name: asyncio.run(turn_times(root, long_debates)) for name, root in roots.items()}
        profiles = {name: profile_moot(root, profiled) for name, root in roots.items()}
    finally:
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)

    per_turn_us = {name: median([s for batch in runs for s in batch]) * 1e6 for name, runs in samples.items()}
    batch_us = {name: [median(batch) * 1e6 for batch in runs] for name, runs in samples.items()}
    moot_modes = [name for name in (MOOT_MEMORY, MOOT_DURABLE) if name in per_turn_us]
    peers = [AUTOGEN, AUTOGEN_REUSED, LANGGRAPH]
    floor_us = per_turn_us[FLOOR]
    growth = {name: (around(runs, 6), around(runs, LONG_TURNS)) for name, runs in growth_runs.items()}
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
        "start the driver and write the record's header; AutoGen per task: build the agents and the team; "
        "AutoGen reused: reset the team and its replay clients; LangGraph: none, its graph is compiled once "
        "before the clock starts). The batch column is the range of the batch medians.",
        f"'in-memory' = moot's record under /dev/shm (tmpfs): every write still goes through moot's append + "
        f"fsync path, but the files live in RAM. 'durable' = the record on the real disk "
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
    tables = [table]
    durable_extra = None
    if MOOT_MEMORY in per_turn_us:
        durable_extra = (per_turn_us[MOOT_DURABLE] - per_turn_us[MOOT_MEMORY]) / floor_us
        steady_extra_us = (growth[MOOT_DURABLE][1] - growth[MOOT_MEMORY][1]) * 1e6
        tables.append(
            Table(
                title="Durability against the disk's floor",
                columns=["figure", "µs", "÷ the floor"],
                rows=[
                    ["one append + fsync of a turn-sized line (the floor)", fmt(floor_us, 0), "1.00×"],
                    [MOOT_MEMORY + " per turn", fmt(per_turn_us[MOOT_MEMORY], 0), ""],
                    [MOOT_DURABLE + " per turn", fmt(per_turn_us[MOOT_DURABLE], 0), ""],
                    [
                        "what durability adds per turn of a 6-turn debate, set-up included (durable − in-memory; "
                        "goal ≤ 1.5× the floor)",
                        fmt(per_turn_us[MOOT_DURABLE] - per_turn_us[MOOT_MEMORY], 0),
                        fmt_ratio(durable_extra),
                    ],
                    [
                        f"what durability adds to turn {LONG_TURNS} of a long debate (from the growth runs below)",
                        fmt(steady_extra_us, 0),
                        fmt_ratio(steady_extra_us / floor_us),
                    ],
                ],
                notes=[
                    f"The floor is timed as a system of its own, in the same interleaved batches: per 'debate', six "
                    f"appends of a {TURN_BYTES}-byte line, each followed by fsync, to a new file in the durable "
                    "records' directory. A durable turn of moot makes one such append (the record) plus one "
                    "unsynced append (the digest chain); the attempt log is appended without fsync. A debate "
                    "also creates its record and chain (two temp files, one fsync'd, two renames, one directory "
                    "fsync) and its run sidecar (temp file and rename, no fsync), which the 6-turn figures "
                    "include and the turn-60 figures below do not.",
                ],
            )
        )
    tables.append(growth_table(growth, long_debates))
    losses = []
    for mode in moot_modes:
        beaten_by = [peer for peer in peers if per_turn_us[peer] < per_turn_us[mode]]
        if beaten_by:
            losses.append(loss_sentence(mode, per_turn_us, beaten_by, profiles[mode]))
    if durable_extra is not None and durable_extra > 1.5:
        losses.append(
            f"overhead: durability adds {fmt(per_turn_us[MOOT_DURABLE] - per_turn_us[MOOT_MEMORY], 0)} µs per turn, "
            f"{fmt_ratio(durable_extra)} the append + fsync floor of {fmt(floor_us, 0)} µs (goal ≤ 1.5×)."
        )
    for mode, (at6, at60) in growth.items():
        if ratio(at60, at6) > 1.2:
            losses.append(
                f"cost growth: {mode} spends {fmt(at60 * 1e6, 0)} µs on turn {LONG_TURNS} and {fmt(at6 * 1e6, 0)} µs "
                f"on turn 6 ({fmt_ratio(ratio(at60, at6))}, goal ≤ 1.2×). A later turn's prompt carries the longer "
                "dialogue; this run did not profile the growth itself."
            )
    fastest = min(moot_modes, key=lambda mode: per_turn_us[mode])
    summary = (
        f"{fastest} costs {fmt(per_turn_us[fastest], 0)} µs per turn: "
        + ", ".join(f"{fmt_ratio(ratio(per_turn_us[fastest], per_turn_us[peer]))} {peer}'s" for peer in peers)
        + (
            f"; durable records cost {fmt(per_turn_us[MOOT_DURABLE], 0)} µs per turn"
            + (f", durability {fmt_ratio(durable_extra)} the append + fsync floor" if durable_extra is not None else "")
            if MOOT_DURABLE in per_turn_us and fastest != MOOT_DURABLE
            else ""
        )
        + "; turn 60 costs "
        + ", ".join(f"{fmt_ratio(ratio(at60, at6))} turn 6 ({mode})" for mode, (at6, at60) in growth.items())
        + "."
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
        "append_fsync_floor_us": round(floor_us, 1),
        "durability_over_floor": None if durable_extra is None else round(durable_extra, 3),
        "growth_us_per_turn": {
            name: {"turn_6": round(at6 * 1e6, 1), f"turn_{LONG_TURNS}": round(at60 * 1e6, 1)}
            for name, (at6, at60) in growth.items()
        },
        "durable_dir_fs": filesystem_type(durable.parent),
        "profiles": profiles,
    }
    return BenchResult("overhead", summary, tables, data, losses)

"""The scripted debate the overhead, concurrency and startup benchmarks share, and where its records go.

Two parties, six turns, zero-latency agents: a Critique Loop (planning template, ``max_rounds=3``) in which
the proposer and the critic each answer AWAITING twice, then the proposer proposes done and the critic
confirms. The peers (AutoGen, LangGraph) replay the same six messages.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import time
from pathlib import Path

from moot.agents import Agent, ScriptAgent
from moot.core.run_state import remove_record
from moot.engine.loop import Event, Limits, RunResult, now_minutes
from moot.engine.session import run_driver
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions

TOPIC = "Adopt a monorepo for our services"
ROLES = ("proposer", "critic")
MAX_ROUNDS = 3
# (role, message, status, summary), in speaking order.
TURNS = [
    ("proposer", "Move all services into one repository with one CI pipeline.", "AWAITING", ""),
    ("critic", "CI time grows with every service; how do you keep builds fast?", "AWAITING", ""),
    ("proposer", "Build only what changed, using the dependency graph.", "AWAITING", ""),
    ("critic", "Who owns the shared build tooling when it breaks?", "AWAITING", ""),
    ("proposer", "A platform team owns it, with an on-call rota.", "PROPOSING_DONE", ""),
    ("critic", "Agreed.", "DONE", "One repository, one pipeline, builds scoped to changed services."),
]
TURNS_PER_DEBATE = len(TURNS)


def messages_of(role: str) -> list[str]:
    """What ``role`` says, in order: the peers' canned replies."""
    return [message for speaker, message, _, _ in TURNS if speaker == role]


def moot_agents() -> dict[str, Agent]:
    """One ScriptAgent holding every reply (JSON turns, as a model would send them), each for its role."""
    agent = ScriptAgent()
    for role, message, status, summary in TURNS:
        agent.enqueue(json.dumps({"message": message, "status": status, "summary": summary}), role=role)
    return {role: agent for role in ROLES}


async def run_moot_debate(root: Path, index: int) -> RunResult:
    """Start the critique under ``root`` (a fresh driver and record, as ``moot run`` does) and run it to DONE."""
    options = CritiqueOptions(topic=f"{TOPIC} {index}", max_rounds=MAX_ROUNDS)
    driver = CritiqueDriver.start(root, options, now_minutes())
    return await run_driver(driver, moot_agents(), Limits())


async def run_long_moot_debate(root: Path, index: int, turns: int) -> list[float]:
    """A critique of ``turns`` turns (AWAITING until the last two); the seconds each turn took, from the
    previous accepted turn (the first: from the start of the run) to its own."""
    agent = ScriptAgent()
    for number in range(1, turns + 1):
        role = ROLES[(number - 1) % 2]
        status = "PROPOSING_DONE" if number == turns - 1 else "DONE" if number == turns else "AWAITING"
        summary = "Agreed after the long review." if status == "DONE" else ""
        message = f"Point {number}: {TURNS[(number - 1) % 4][1]}"
        agent.enqueue(json.dumps({"message": message, "status": status, "summary": summary}), role=role)
    options = CritiqueOptions(topic=f"{TOPIC} long {index}", max_rounds=turns // 2)
    driver = CritiqueDriver.start(root, options, now_minutes())
    marks = [time.perf_counter()]

    def on_event(event: Event) -> None:
        if event.type == "turn_accepted":
            marks.append(time.perf_counter())

    result = await run_driver(driver, dict.fromkeys(ROLES, agent), Limits(), (on_event,))
    if result.summary.turns != turns or result.outcome is None or result.outcome.name != "DONE":
        raise RuntimeError(f"the long scripted debate ended {result.outcome!r} after {result.summary.turns} turns")
    remove_record(result.record_path, stop_at=root)
    return [later - earlier for earlier, later in itertools.pairwise(marks)]


def expect_done(result: RunResult) -> None:
    """A benchmark that timed a broken debate would report nonsense: stop instead."""
    outcome = result.outcome
    if outcome is None or outcome.name != "DONE" or result.summary.turns != TURNS_PER_DEBATE:
        raise RuntimeError(f"the scripted debate ended {outcome!r} after {result.summary.turns} turns, not DONE")


def remove_debate(record: Path) -> None:
    """Delete a debate's files (record, digest chain, usage log) so the directory stays small."""
    remove_record(record, stop_at=record.parent)


def filesystem_type(path: Path) -> str:
    """The type of the file system holding ``path`` (ext4, tmpfs, ...), from /proc/mounts; "" if unknown."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return ""
    resolved = str(path.resolve())
    best, kind = "", ""
    for point, fs in mounts:
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fs
    return kind


def durable_dir() -> Path:
    """A fresh directory on a real disk: the system temp dir unless it is tmpfs, else beside the repo."""
    base = Path(tempfile.gettempdir())
    if filesystem_type(base) in ("tmpfs", "ramfs", ""):
        base = Path(__file__).resolve().parent.parent
    return Path(tempfile.mkdtemp(prefix="moot-bench-", dir=base))


def memory_dir() -> Path | None:
    """A fresh directory on /dev/shm (tmpfs), or None where there is none."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or filesystem_type(shm) != "tmpfs":
        return None
    return Path(tempfile.mkdtemp(prefix="moot-bench-", dir=shm))

"""One debate of the soak, in-process: through moot's engine, or a whole duel through the agent tools.

Engine debates run the four protocols with the scripted participant of protocol_agent.py (as a
FunctionAgent, so no process per turn). Tool duels are the hand-written six-turn consensus duel of
the agent-tool tests, appended turn by turn under leases of the one SQLite ledger the soak shares.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path
from typing import Any

import psutil
from protocol_agent import legal_reply

from moot import tools
from moot.agents import AgentRequest, FunctionAgent
from moot.agents.base import prompt_as_text
from moot.engine.loop import Limits, RunResult
from moot.engine.session import run_driver
from moot.engine.specs import build_driver
from moot.protocols.duel import tools as duel_tools

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # the agent-tool tests' helpers
from tools_helpers import ALICE, BOB, SOURCE_TEXT, TOPIC, example_turns

STARTED = "2026-05-01 10:00"
# The debates the engine runs, as ``moot run --batch`` lines; each ends by its protocol's own rule.
ENGINE_DEBATES: dict[str, dict[str, Any]] = {
    "critique": {"protocol": "critique", "topic": "Adopt a monorepo", "max_rounds": 4},
    "duel": {"protocol": "duel", "source": "design.md"},
    "agora": {"protocol": "agora", "topic": "Adopt a monorepo", "max_turns": 12},
    "roundtable": {"protocol": "roundtable", "topic": "Cache design", "speakers": ["a", "b", "c"], "max_rounds": 2},
}


def scripted_reply(request: AgentRequest) -> str:
    assert request.json_schema is not None
    return legal_reply(request.protocol, request.role, request.json_schema, prompt_as_text(request))


def engine_debate(protocol: str, root: Path) -> RunResult:
    """One debate in its own work root, with a fresh participant (it keeps the requests it got)."""
    root.mkdir(parents=True)
    (root / "design.md").write_text(SOURCE_TEXT, encoding="utf-8")
    spec = ENGINE_DEBATES[protocol]
    driver = build_driver({**spec, "source": str(root / spec["source"])} if "source" in spec else spec, root, STARTED)
    agent = FunctionAgent(scripted_reply)
    return asyncio.run(run_driver(driver, {role: agent for role in driver.roles()}, Limits(repairs=0)))


def tools_duel(ws: tools.Workspace, number: int) -> tuple[Path, str | None]:
    """A six-turn duel by two agents through ``moot.tools``: join, then claim, append and release per turn;
    the last turn's writer closes it. Returns the artifact and the ledger's outcome."""
    source = ws.root / "sources" / f"source-{number}.md"
    source.parent.mkdir(exist_ok=True)
    source.write_text(SOURCE_TEXT, encoding="utf-8")
    seats = {}
    for who in (ALICE, BOB):
        joined = duel_tools.join(
            ws, target=source, topic=f"{TOPIC} {number}", participant_name=who["name"], harness=who["harness"],
            model_id=who["model"], run_id=f"soak-{number}",
        )  # fmt: skip
        seats[who["name"]] = {"participant_id": joined.participant_id, "participant_secret": joined.participant_secret}
    duel_id = joined.duel_id
    for turn, text in enumerate(example_turns(source), start=1):
        me = seats["alice" if turn % 2 else "bob"]
        lock = duel_tools.claim_lock(ws, duel_id=duel_id, **me)
        appended = duel_tools.append(ws, duel_id=duel_id, **me, lease_token=lock.lease_token, turn_markdown=text)
        ending = appended.terminal_outcome
        duel_tools.release_lock(
            ws, duel_id=duel_id, **me, lease_token=lock.lease_token, close=ending is not None, outcome=ending
        )
    status = duel_tools.status(ws, duel_id=duel_id)
    return Path(status.debate_path), status.outcome


def rss_bytes() -> int:
    """The process's resident memory once garbage is collected."""
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def growth_per_debate(samples: list[tuple[int, int]]) -> float:
    """Least-squares slope of RSS over the debate count, in bytes per debate."""
    n = len(samples)
    mean_x = sum(x for x, _ in samples) / n
    mean_y = sum(y for _, y in samples) / n
    spread = sum((x - mean_x) ** 2 for x, _ in samples)
    return sum((x - mean_x) * (y - mean_y) for x, y in samples) / spread if spread else 0.0

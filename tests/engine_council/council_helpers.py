"""Helpers shared by the council engine tests (a plain module, not collected)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from moot.agents.base import Agent, AgentRequest
from moot.agents.script import FunctionAgent
from moot.detect import check_path
from moot.engine.loop import Engine, Limits, RunResult
from moot.protocols.council.driver import CouncilDriver, CouncilOptions

PROTOCOL_AGENT = Path(__file__).parents[1] / "reliability" / "protocol_agent.py"
SCRIPTED = f"cmd:{sys.executable} {PROTOCOL_AGENT}"
QUESTION = "Should all tenants share one cache, or should each tenant get its own?"
MEMBERS = (("ada", "openai:gpt-4o-mini"), ("bo", "anthropic:claude-sonnet-4"), ("cy", "local"))
# What each member answers: every answer names its author, which stage 2 must never show.
ANSWERS = {
    "ada": "ada says: one shared cache with a per-tenant floor (gpt-4o-mini thinks the floor bounds the worst case).",
    "bo": "bo says: regulated tenants get their own cache, the rest share one (claude-sonnet-4 weighs the audit).",
    "cy": "cy says: separate caches for every tenant; simplest to bill.",
}


def stage(request: AgentRequest) -> int:
    properties = (request.json_schema or {}).get("properties", {})
    return 2 if "ranking" in properties else 3 if "dissent" in properties else 1


def stated(request: AgentRequest, reply: dict[str, Any], confidence: float = 0.8) -> str:
    """``reply`` as JSON, with a confidence where the request's schema asks for one."""
    properties = (request.json_schema or {}).get("properties", {})
    return json.dumps({**reply, "confidence": confidence} if "confidence" in properties else reply)


def legal(request: AgentRequest) -> str:
    """A valid reply in any stage: the member's answer, a ranking in label order, a synthesis citing the top."""
    kind = stage(request)
    properties = (request.json_schema or {})["properties"]
    if kind == 1:
        return stated(request, {"answer": ANSWERS.get(request.role, f"{request.role} answers.")})
    if kind == 2:
        labels = properties["ranking"]["items"]["properties"]["answer"]["enum"]
        ranking = [{"answer": label, "reason": f"{label} is argued well."} for label in labels]
        return stated(request, {"ranking": ranking})
    match = re.search(r"name the top-ranked member, ([\w-]+)\.", request.prompt)
    assert match is not None
    others = properties["dissent"]["items"]["properties"]["member"]["enum"]
    return json.dumps(
        {
            "answer": "Share one cache with a per-tenant floor; regulated tenants get their own.",
            "basis": f"The reviews ranked {match[1]} first; its floor is the core of the answer.",
            "dissent": [
                {"member": m, "position": "separate caches", "why_not_adopted": "it doubles memory"} for m in others
            ],
        }
    )


def start(root: Path, members: tuple[tuple[str, str], ...] = MEMBERS, chairman: str | None = None) -> CouncilDriver:
    options = CouncilOptions(question=QUESTION, members=members, chairman=chairman, seed=42)
    return CouncilDriver.start(root, options, "2026-11-24 21:00")


def agents_for(driver: CouncilDriver, function: Callable[[AgentRequest], object] = legal) -> dict[str, FunctionAgent]:
    return {role: FunctionAgent(function) for role in driver.roles()}  # type: ignore[arg-type]


def run(driver: CouncilDriver, agents: Mapping[str, Agent], limits: Limits | None = None) -> RunResult:
    return asyncio.run(Engine(driver, agents, limits or Limits(repairs=1), clock=lambda: "2026-11-24 21:05").run())


def checks_clean(path: Path) -> None:
    report = check_path(path)
    assert report.exit_code == 0 and report.violations == [], [str(v) for v in report.violations]

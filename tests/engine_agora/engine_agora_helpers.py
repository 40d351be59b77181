"""Shared builders for the Agora driver tests: drone replies, scripted and schema-following agents."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from moot.agents import Agent, AgentRequest, FunctionAgent
from moot.detect import check_path
from moot.engine.loop import Engine, Limits, RunResult
from moot.protocols.agora.driver import AgoraDriver, AgoraOptions

STARTED = "2026-11-22T09:00:00Z"
TOPIC = "Adopt a monorepo"
EVIDENCE = [{"source": "build logs", "content": "CI takes 6 minutes per repository", "confidence": 0.8}]


def drone(
    signal: str,
    target: str | None = None,
    *,
    message: str | None = None,
    evidence: bool = False,
    confidence: float = 0.7,
) -> str:
    """One drone reply in the seed's JSON."""
    return json.dumps(
        {
            "signal": signal,
            "message": message or f"I {signal}; my reasons stand.",
            "confidence": confidence,
            "target": target,
            "evidence": EVIDENCE if evidence else [],
        }
    )


def start(root: Path, **options: Any) -> AgoraDriver:
    values: dict[str, Any] = {"topic": TOPIC}
    values.update(options)
    return AgoraDriver.start(root, AgoraOptions(**values), STARTED)


def run(driver: AgoraDriver, agents: Mapping[str, Agent], limits: Limits | None = None) -> RunResult:
    return asyncio.run(Engine(driver, agents, limits).run())


def every_role(driver: AgoraDriver, agent: Agent) -> dict[str, Agent]:
    return {role: agent for role in driver.roles()}


def choosing(prefer: Callable[[AgentRequest], str], *, evidence: bool = False) -> FunctionAgent:
    """An agent that answers within the offered schema: its preferred signal when offered (else the
    first one offered) and the first offered target, like a grammar-constrained model would."""

    def answer(request: AgentRequest) -> str:
        schema = request.json_schema or {}
        offered = schema["properties"]["signal"]["enum"]
        wanted = prefer(request)
        signal = wanted if wanted in offered else offered[0]
        targets = schema["properties"]["target"].get("enum") or [None]
        return drone(signal, targets[0], message=f"{request.role} says {signal}.", evidence=evidence)

    return FunctionAgent(answer)


def checks_clean(path: Path) -> None:
    report = check_path(path)
    assert report.exit_code == 0, [str(v) for v in report.violations]

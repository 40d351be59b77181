"""A whole debate through the OpenAI-compatible path, against a real llama.cpp server on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

from moot.agents import resolve_agent
from moot.artifacts import check_path
from moot.engine.critique import CritiqueDriver, CritiqueOptions
from moot.engine.loop import Engine


def test_a_critique_dialogue_runs_on_an_openai_compatible_server(llama_server: str, tmp_path: Path) -> None:
    driver = CritiqueDriver.start(tmp_path, CritiqueOptions(topic="Adopt a monorepo", max_rounds=1), "2026-11-22 09:00")
    agent = resolve_agent(f"openai:smollm2@{llama_server}")
    result = asyncio.run(Engine(driver, {"proposer": agent, "critic": agent}).run())
    assert result.summary.turns == 2 and result.outcome is not None  # MAX_ROUNDS or an agreement
    assert result.completion_tokens > 0
    assert check_path(driver.record_path).exit_code == 0

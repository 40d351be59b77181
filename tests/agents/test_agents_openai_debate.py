"""A whole debate through the OpenAI-compatible path, against a real llama.cpp server on loopback."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from moot.agents import FunctionAgent, resolve_agent
from moot.detect import check_path
from moot.engine.loop import Engine
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions

MOOT_RUN = [sys.executable, "-m", "moot", "run"]


def test_a_critique_dialogue_runs_on_an_openai_compatible_server(llama_server: str, tmp_path: Path) -> None:
    driver = CritiqueDriver.start(tmp_path, CritiqueOptions(topic="Adopt a monorepo", max_rounds=1), "2026-11-22 09:00")
    model = resolve_agent(f"openai:smollm2@{llama_server}")
    # Greedy decoding and a fixed clock make the run repeatable: at the server's default temperature (0.8)
    # the 135M model now and then fails a turn three times running, which is the model's doing, not moot's.
    agent = FunctionAgent(lambda request: model.reply(request.model_copy(update={"temperature": 0.0})))
    clock = iter(f"2026-11-22 09:{minute:02d}" for minute in range(1, 60))
    result = asyncio.run(Engine(driver, {"proposer": agent, "critic": agent}, clock=lambda: next(clock)).run())
    assert result.summary.turns == 2 and result.outcome is not None  # MAX_ROUNDS or an agreement
    assert result.completion_tokens > 0
    assert check_path(driver.record_path).exit_code == 0


def test_moot_run_debates_on_a_server_that_keeps_its_connections_open(llama_server: str, tmp_path: Path) -> None:
    # As a user runs it: `moot run` first checks that the server is there, then debates. The server (uvicorn)
    # keeps the probe's connection alive; the debate's requests must not try to reuse it from another event loop.
    # At the server's temperature (0.8) the 135M model can give invalid turns all the way (CI runs ended RUN_HALTED
    # "proposer gave no valid turn in 3 attempts", and in 7): that is the model's doing. What the connections
    # decide is that every request came back with an answer, so a halt may only be for the replies' form.
    done = subprocess.run(
        [
            *MOOT_RUN,
            "critique",
            "--topic",
            "Adopt a monorepo",
            "--max-rounds",
            "1",
            "--json",
            "--agents",
            f"openai:smollm2@{llama_server}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    result = json.loads(done.stdout)
    assert "Event loop is closed" not in result["reason"], result["reason"]
    assert result["completion_tokens"] > 0, (result["outcome"], result["reason"], done.stderr)
    halted = result["run_halted"]
    assert halted is None or halted["cause"] == "repairs_exhausted", (result, done.stderr)
    assert check_path(tmp_path / result["artifact"]).exit_code == 0

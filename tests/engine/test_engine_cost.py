"""Every attempt's price in USD from the genai-prices table, in the usage log, the run's JSON and `moot show`;
--max-cost as a budget; local models cost nothing and an unknown model's price is unknown, never a guess."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from engine_helpers import reply, run_moot, write_script

from moot.agents import AgentReply, AgentRequest, FunctionAgent, resolve_agent
from moot.agents.local import LocalAgent
from moot.agents.pricing import table_price_usd
from moot.engine.loop import Engine, Limits, usage_path
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions

# gpt-4o-mini's list price on OpenAI: $0.15 per million input tokens, $0.60 per million output tokens.
GPT_4O_MINI_USD = 1000 * 0.15e-6 + 1000 * 0.60e-6


class PricedAgent(FunctionAgent):
    """A participant priced as gpt-4o-mini on OpenAI, each call using 1000 prompt and 1000 completion tokens."""

    def __init__(self) -> None:
        self.count = 0

        def answer(request: AgentRequest) -> AgentReply:
            self.count += 1
            text = reply(f"Point {self.count}.")
            return AgentReply(text=text, prompt_tokens=1000, completion_tokens=1000, latency_s=0.1, model="gpt-4o-mini")

        super().__init__(answer)

    def price_usd(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        return table_price_usd("gpt-4o-mini", prompt_tokens, completion_tokens, provider="openai")


def start(tmp_path: Path) -> CritiqueDriver:
    return CritiqueDriver.start(tmp_path, CritiqueOptions(topic="Adopt a monorepo", max_rounds=2), "2026-11-22 09:00")


def test_prices_come_from_the_table_local_is_free_and_unknown_stays_unknown() -> None:
    assert table_price_usd("gpt-4o-mini", 1000, 1000, provider="openai") == pytest.approx(GPT_4O_MINI_USD)
    assert table_price_usd("no-such-model-anywhere", 1000, 1000, provider="openai") is None
    assert resolve_agent("openai:gpt-4o-mini@http://127.0.0.1:8080/v1").price_usd(1000, 1000) == 0.0
    assert resolve_agent("openai:my-finetune@https://llm.example.com/v1").price_usd(1000, 1000) is None
    assert LocalAgent.price_usd(LocalAgent.__new__(LocalAgent), 1000, 1000) == 0.0


def test_each_attempt_is_priced_in_the_usage_log_and_the_run(tmp_path: Path) -> None:
    driver = start(tmp_path)
    agent = PricedAgent()
    result = asyncio.run(Engine(driver, {"proposer": agent, "critic": agent}).run())
    rows = [json.loads(line) for line in usage_path(driver.record_path).read_text().splitlines()]
    assert [row["cost_usd"] for row in rows] == pytest.approx([GPT_4O_MINI_USD] * 4)
    assert result.to_json()["cost_usd"] == pytest.approx(4 * GPT_4O_MINI_USD)


def test_max_cost_ends_the_run_once_the_budget_is_spent(tmp_path: Path) -> None:
    driver = start(tmp_path)
    agent = PricedAgent()
    limits = Limits(max_cost_usd=2.5 * GPT_4O_MINI_USD)
    result = asyncio.run(Engine(driver, {"proposer": agent, "critic": agent}, limits).run())
    assert result.summary.turns == 3 and agent.count == 3
    assert result.outcome is not None and "spent its budget of $0.0019" in result.outcome.reason


def test_an_unknown_price_is_unknown_everywhere(tmp_path: Path) -> None:
    driver = start(tmp_path)
    agent = FunctionAgent(lambda request: reply("Fine."))
    result = asyncio.run(Engine(driver, {"proposer": agent, "critic": agent}, Limits(max_turns=1)).run())
    rows = [json.loads(line) for line in usage_path(driver.record_path).read_text().splitlines()]
    assert rows[0]["cost_usd"] is None and result.to_json()["cost_usd"] is None


def test_the_cli_shows_the_price_and_refuses_a_cost_budget_it_cannot_check(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.jsonl", [reply("A."), reply("B.")])
    args = ["run", "critique", "--topic", "T", "--max-rounds", "1"]
    done = run_moot(*args, "--agents", f"script:{script}", "--json", "--max-cost", "1", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    record = json.loads(done.stdout)
    assert record["cost_usd"] == 0.0
    shown = run_moot("show", record["artifact"], "--plain", cwd=tmp_path)
    assert "usage: 2 attempt(s), 0 tokens, cost $0" in shown.stdout

    refused = run_moot(*args, "--topic", "U", "--agents", "cmd:cat", "--max-cost", "1", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--max-cost needs each agent's price" in refused.stderr and "cmd:cat" in refused.stderr


def test_a_dry_run_prints_calls_tokens_and_price_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-used")  # nothing is sent: the dry run asks no agent
    args = ["run", "critique", "--topic", "Adopt a monorepo", "--max-rounds", "2", "--dry-run"]
    done = run_moot(*args, "--agent", "proposer=local", "--agent", "critic=openai:gpt-4o-mini", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "nothing was asked or written" in lines[0]
    assert lines[1].split()[:2] == ["proposer", "local"] and "2 call(s)" in lines[1] and lines[1].endswith("$0")
    assert (
        lines[2].split()[:2] == ["critic", "openai:gpt-4o-mini"]
        and "at most" in lines[2]
        and "+ 8,192, $0.0" in lines[2]
    )
    assert lines[3].startswith("  total: 4 call(s)")
    assert list(tmp_path.iterdir()) == []

    unknown = run_moot(*args, "--agents", "cmd:cat", cwd=tmp_path)
    assert unknown.returncode == 0 and unknown.stdout.rstrip().endswith("unknown")
    assert list(tmp_path.iterdir()) == []

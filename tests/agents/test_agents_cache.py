"""Provider caching, through the official SDKs against loopback servers shaped after the providers' docs.

Anthropic's Messages API caches a prompt's prefix up to a ``cache_control`` breakpoint (at most four a request)
and reports ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` beside ``input_tokens``, which then
counts only the rest. OpenAI caches every prefix of 1,024 tokens or more on its own, takes a
``prompt_cache_key``, and reports ``usage.prompt_tokens_details.cached_tokens`` within ``prompt_tokens``.
Prices are the genai-prices table's, whose list prices for these models the comments give.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
from agents_helpers import chat_completion, scripted_http_server
from genai_prices import Usage, calc_price

import forked_moot
from moot.agents import AgentRequest, AnthropicAgent, OpenAIAgent
from moot.engine.loop import Engine, Limits, usage_path
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions
from moot.web.page import build, record_body

SONNET = "claude-sonnet-4-6"  # $3 input, $3.75 5-minute cache write, $0.30 cache read, $15 output per MTok
RULES = "You are the critic in a structured dialogue. Rules: respond to the latest turn; keep to the topic."
TURNS = ("Topic: adopt a monorepo.\n\n", "## Turn 1 (proposer)\nOne repository for all services.\n\n")
INSTRUCTION = "Write your turn as the critic."


def critique_turn(text: str) -> dict[str, Any]:
    return {"message": text, "status": "AWAITING", "summary": ""}


def claude_message(turn: dict[str, Any], usage: dict[str, int]) -> dict[str, Any]:
    """A forced tool call as the Messages API documents it, with the usage of a cached request."""
    return {
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": SONNET,
        "content": [{"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "submit_turn", "input": turn}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": usage,
    }


# 4,000 tokens read from the cache, 1,000 written to it, 50 after the breakpoint; 300 out.
CACHED_CLAUDE_USAGE = {
    "input_tokens": 50,
    "cache_creation_input_tokens": 1000,
    "cache_read_input_tokens": 4000,
    "output_tokens": 300,
}
CACHED_CLAUDE_USD = (50 * 3 + 1000 * 3.75 + 4000 * 0.30 + 300 * 15) / 1e6  # $0.0096
UNCACHED_CLAUDE_USD = (5050 * 3 + 300 * 15) / 1e6  # $0.01965


def anthropic_url(v1_url: str) -> str:
    return v1_url.removesuffix("/v1")  # the SDK adds /v1/messages itself


def test_a_prefix_stable_request_carries_breakpoints_on_the_rules_and_at_the_end_of_the_transcript() -> None:
    fields: dict[str, Any] = {"system": RULES, "json_schema": {"type": "object"}, "role": "critic"}
    answers = [(200, claude_message(critique_turn("Builds slow down."), CACHED_CLAUDE_USAGE), {})]
    with scripted_http_server(answers) as (url, seen):
        agent = AnthropicAgent(SONNET, api_key="sk-ant-test", base_url=anthropic_url(url))
        asyncio.run(agent.reply(AgentRequest.with_prefix(TURNS, INSTRUCTION, **fields)))
        asyncio.run(agent.reply(AgentRequest(prompt="".join(TURNS) + INSTRUCTION, **fields)))
    marked, plain = seen[0].body, seen[1].body
    ephemeral = {"type": "ephemeral"}
    assert marked["system"] == [{"type": "text", "text": RULES, "cache_control": ephemeral}]
    assert marked["messages"][0]["content"] == [
        {"type": "text", "text": TURNS[0]},
        {"type": "text", "text": TURNS[1], "cache_control": ephemeral},
        {"type": "text", "text": INSTRUCTION},
    ]
    assert json.dumps(marked).count("cache_control") == 2  # of the four the API allows
    assert "critic" not in marked["tools"][0]["description"]  # the tool is in the prefix that roles may share
    # A request its driver did not build prefix-stable is sent as before: nothing marked.
    assert plain["system"] == RULES and plain["messages"][0]["content"] == "".join(TURNS) + INSTRUCTION
    assert "cache_control" not in json.dumps(plain)


def test_the_prefix_contract_survives_a_repair_and_refuses_ends_outside_the_prompt(tmp_path: Path) -> None:
    request = AgentRequest.with_prefix(["", *TURNS], INSTRUCTION, system=RULES)
    assert request.prompt_parts() == (list(TURNS), INSTRUCTION)  # an empty part is no part
    driver = CritiqueDriver.start(tmp_path, CritiqueOptions(topic="Adopt a monorepo", max_rounds=1), "2026-11-22 09:00")
    violation = driver.read_reply("proposer", "not json", "2026-11-22 09:01").errors
    repaired = driver.repair_prompt(request, "not json", violation)
    parts, instruction = repaired.prompt_parts()
    assert parts == list(TURNS) and instruction.startswith(INSTRUCTION) and "not json" in instruction
    with pytest.raises(ValueError, match="prefix_ends"):
        AgentRequest(prompt="short", prefix_ends=(3, 9))
    assert not AgentRequest(prompt="Thoughts?").prefix_stable  # the default marks nothing


def test_anthropic_cached_tokens_are_counted_and_priced_at_the_cache_rates() -> None:
    answers = [(200, claude_message(critique_turn("Builds slow down."), CACHED_CLAUDE_USAGE), {})]
    with scripted_http_server(answers) as (url, _):
        agent = AnthropicAgent(SONNET, api_key="sk-ant-test", base_url=anthropic_url(url))
        request = AgentRequest.with_prefix(TURNS, INSTRUCTION, system=RULES, json_schema={"type": "object"})
        reply = asyncio.run(agent.reply(request))
    # input_tokens excludes what the cache read and wrote: the prompt is all three.
    assert (reply.prompt_tokens, reply.cached_tokens, reply.cache_write_tokens) == (5050, 4000, 1000)
    cost, uncached = agent.reply_cost(reply)
    table = calc_price(
        Usage(input_tokens=5050, cache_read_tokens=4000, cache_write_tokens=1000, output_tokens=300),
        SONNET,
        provider_id="anthropic",
    )
    assert cost == pytest.approx(float(table.total_price)) == pytest.approx(CACHED_CLAUDE_USD)
    assert uncached == pytest.approx(UNCACHED_CLAUDE_USD) and uncached is not None and cost < uncached


class ToLoopback(httpx2.AsyncHTTPTransport):
    """Sends what the client addresses to api.openai.com to a loopback server instead (the paid API cannot run
    here); the agent still knows its server as OpenAI, and prices and keys its requests so."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.target = httpx2.URL(url)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(scheme="http", host=self.target.host, port=self.target.port)
        return await super().handle_async_request(request)


def openai_agent(model: str, url: str) -> OpenAIAgent:
    return OpenAIAgent(model, api_key="sk-test", http_client=httpx2.AsyncClient(transport=ToLoopback(url)))


def cached_completion(content: str, prompt: int, cached: int, completion: int, model: str) -> dict[str, Any]:
    body = chat_completion(content, model)
    body["usage"] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    return body


def test_openai_requests_carry_the_prompt_cache_key_and_cached_tokens_are_priced_at_the_cache_rate() -> None:
    # gpt-4o-mini: $0.15 input, $0.075 cached input, $0.60 output per MTok.
    answer = (200, cached_completion(json.dumps(critique_turn("Fine.")), 4000, 3072, 500, "gpt-4o-mini"), {})
    request = AgentRequest(prompt="Review the plan.", system=RULES, cache_key="moot-debate-critic")
    with scripted_http_server([answer]) as (url, seen):
        agent = openai_agent("gpt-4o-mini", url)
        reply = asyncio.run(agent.reply(request))
        local = asyncio.run(OpenAIAgent("gpt-4o-mini", base_url=url).reply(request))
    assert seen[0].body["prompt_cache_key"] == "moot-debate-critic"
    assert "prompt_cache_key" not in seen[1].body  # another server may refuse a field it does not know
    assert (reply.prompt_tokens, reply.cached_tokens) == (4000, 3072)
    assert local.cached_tokens == 3072  # vLLM and llama.cpp report it in the same place
    cost, uncached = agent.reply_cost(reply)
    assert cost == pytest.approx((928 * 0.15 + 3072 * 0.075 + 500 * 0.60) / 1e6)
    assert uncached == pytest.approx((4000 * 0.15 + 500 * 0.60) / 1e6) and cost is not None and cost < uncached


def test_max_cost_counts_the_cached_price_and_the_roles_sharing_a_prefix_share_a_cache_key(tmp_path: Path) -> None:
    # gpt-4.1: $2 input, $0.50 cached input, $8 output per MTok. A turn costs $0.005184 cached and $0.02016
    # uncached: the whole two-turn debate costs less than the budget, one uncached turn more.
    turn = json.dumps(critique_turn("Scope the builds."))
    answer = (200, cached_completion(turn, 10_000, 9_984, 20, "gpt-4.1"), {})
    driver = CritiqueDriver.start(tmp_path, CritiqueOptions(topic="Adopt a monorepo", max_rounds=1), "2026-11-22 09:00")
    with scripted_http_server([answer]) as (url, seen):
        agent = openai_agent("gpt-4.1", url)
        limits = Limits(max_cost_usd=0.015)
        result = asyncio.run(Engine(driver, {"proposer": agent, "critic": agent}, limits).run())
    assert result.outcome is not None and result.outcome.name == "MAX_ROUNDS", result.outcome
    assert result.summary.turns == 2
    assert result.cost_usd == pytest.approx(2 * 0.005184) and result.cost_usd < 0.015
    keys = [body["prompt_cache_key"] for body in (s.body for s in seen)]
    # Both roles' requests share one prefix (the dialogue), so they meet one cache.
    assert keys[0] == keys[1] and all(key.startswith("moot-") for key in keys)
    assert str(tmp_path) not in keys[0]  # a digest: the provider learns no path


def run_moot(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return forked_moot.run(args, cwd=cwd, env=env, timeout=300)


def test_run_json_log_show_and_the_viewer_show_cached_tokens_and_the_saving(tmp_path: Path) -> None:
    answers = [
        (200, claude_message(critique_turn(text), CACHED_CLAUDE_USAGE), {})
        for text in ("One repository for all services.", "Builds slow down.")
    ]
    with scripted_http_server(answers) as (url, _):
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": anthropic_url(url)}
        args = ("--topic", "Adopt a monorepo", "--max-rounds", "1", "--agents", f"anthropic:{SONNET}")
        done = run_moot("run", "critique", *args, "--json", cwd=tmp_path, env=env)
        assert done.returncode == 1, done.stderr  # MAX_ROUNDS: a debate that ends without agreement
        ran = json.loads(done.stdout)
        shown_run = run_moot("run", "critique", *args, "--force", cwd=tmp_path, env=env)
    assert (ran["prompt_tokens"], ran["cached_tokens"], ran["cache_write_tokens"]) == (10_100, 8000, 2000)
    assert ran["cost_usd"] == pytest.approx(2 * CACHED_CLAUDE_USD)
    assert ran["uncached_cost_usd"] == pytest.approx(2 * UNCACHED_CLAUDE_USD)
    assert ran["cache_saving_usd"] == pytest.approx(2 * (UNCACHED_CLAUDE_USD - CACHED_CLAUDE_USD))
    assert "cache: 8,000 of 10,100 prompt tokens from cache, saving $0.0201" in shown_run.stdout

    record = tmp_path / ran["artifact"]
    logged = run_moot("log", str(record), cwd=tmp_path, env=env)
    assert logged.stdout.count("cache: 4,000 of 5,050 prompt tokens from cache, saving $0.0101") == 2
    rows = json.loads(run_moot("log", str(record), "--json", cwd=tmp_path, env=env).stdout)
    assert [(r["cached_tokens"], r["cache_write_tokens"]) for r in rows] == [(4000, 1000)] * 2
    assert rows[0]["uncached_cost_usd"] == pytest.approx(UNCACHED_CLAUDE_USD)
    shown = run_moot("show", str(record), "--plain", cwd=tmp_path, env=env)
    assert "\ncache: 8,000 of 10,100 prompt tokens from cache, saving $0.0201\n" in shown.stdout

    page = record_body(build(record))
    assert '<td class="num">4000</td>' in page and "Provider cache: 8,000 of 10,100 prompt tokens" in page
    assert usage_path(record).exists()

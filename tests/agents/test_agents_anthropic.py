"""The Anthropic backend. The paid API cannot run here, so a mock transport answers with bodies
shaped exactly after the documented Messages API (tool use, text, and the 529 overloaded error)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="the anthropic SDK is not installed (pip install 'moot[anthropic]')")

import httpx2
from agents_helpers import VERDICT_SCHEMA

from moot.agents import AgentRequest, AnthropicAgent, RetryPolicy
from moot.errors import AgentBadReply, AgentUnavailable

MODEL = "claude-sonnet-4-6"


def tool_use_message(tool_input: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "submit_turn", "input": tool_input}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 472, "output_tokens": 91},
    }


def text_message(text: str) -> dict[str, Any]:
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 6},
    }


OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


class Recorder:
    """A MockTransport handler that answers from a script and keeps every request."""

    def __init__(self, *answers: tuple[int, dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        status, body = self.answers.pop(0)
        return httpx2.Response(status, json=body)

    def agent(self, **options: Any) -> AnthropicAgent:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(self))
        return AnthropicAgent(MODEL, api_key="sk-ant-test", http_client=client, **options)


def test_schema_forces_the_tool_and_the_reply_is_its_input() -> None:
    turn = {"verdict": "disagree", "reason": "The claim ignores the failure case."}
    recorder = Recorder((200, tool_use_message(turn)))
    request = AgentRequest(
        prompt="Review the plan.",
        system="You are the critic.",
        json_schema=VERDICT_SCHEMA,
        max_tokens=300,
        role="critic",
        protocol="critique",
    )
    reply = asyncio.run(recorder.agent().reply(request))

    assert json.loads(reply.text) == turn
    assert (reply.prompt_tokens, reply.completion_tokens) == (472, 91)
    assert reply.model == "claude-sonnet-4-6"
    assert reply.finish_reason == "tool_use"

    sent = recorder.requests[0]
    assert sent.url.path == "/v1/messages"
    # The documented header is x-api-key; this SDK release sends the key as a bearer token.
    assert "sk-ant-test" in (
        sent.headers.get("x-api-key"),
        sent.headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert "anthropic-version" in sent.headers
    body = json.loads(sent.content)
    assert body["tool_choice"] == {"type": "tool", "name": "submit_turn"}
    assert [tool["name"] for tool in body["tools"]] == ["submit_turn"]
    assert body["tools"][0]["input_schema"] == VERDICT_SCHEMA
    assert "critic" in body["tools"][0]["description"]
    assert body["system"] == "You are the critic."
    assert body["max_tokens"] == 300
    assert body["model"] == MODEL
    assert body["messages"] == [{"role": "user", "content": "Review the plan."}]


def test_without_schema_the_text_blocks_are_the_reply() -> None:
    recorder = Recorder((200, text_message("I agree with the plan.")))
    reply = asyncio.run(recorder.agent().reply(AgentRequest(prompt="Thoughts?")))
    assert reply.text == "I agree with the plan."
    body = json.loads(recorder.requests[0].content)
    assert "tools" not in body and "tool_choice" not in body
    assert body["max_tokens"] == 1024  # required by the API, so always sent


def test_overloaded_is_retried() -> None:
    recorder = Recorder((529, OVERLOADED), (200, tool_use_message({"verdict": "agree", "reason": "ok"})))
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)

    agent = recorder.agent(retry=RetryPolicy(sleep=sleep))
    reply = asyncio.run(agent.reply(AgentRequest(prompt="judge", json_schema=VERDICT_SCHEMA)))
    assert reply.attempts == 2
    assert len(recorder.requests) == 2
    assert len(delays) == 1


def test_a_reply_without_the_forced_tool_call_is_a_bad_reply() -> None:
    recorder = Recorder((200, text_message("I refuse to use tools.")))
    with pytest.raises(AgentBadReply, match="without calling the submit_turn tool"):
        asyncio.run(recorder.agent().reply(AgentRequest(prompt="judge", json_schema=VERDICT_SCHEMA)))


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(AgentUnavailable, match="ANTHROPIC_API_KEY is not set"):
        AnthropicAgent(MODEL)

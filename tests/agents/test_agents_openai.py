"""The OpenAI-compatible backend against real servers on loopback.

llama-cpp-python's own server runs SmolLM2; a tiny http.server plays the failures (429, 500)
that a real provider shows under load, with bodies shaped after OpenAI's documented API.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

import pytest

pytest.importorskip("openai", reason="the openai SDK is not installed (pip install 'moot[openai]')")

from agents_helpers import VERDICT_SCHEMA, chat_completion, free_port, scripted_http_server
from pydantic import BaseModel

from moot.agents import AgentRequest, OpenAIAgent, RetryPolicy
from moot.errors import AgentError, AgentUnavailable


class Verdict(BaseModel):
    verdict: Literal["agree", "disagree"]
    reason: str


class Sleeps:
    """An injected sleep that records the backoff delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def no_wait_policy(max_attempts: int = 4) -> tuple[RetryPolicy, Sleeps]:
    sleeps = Sleeps()
    return RetryPolicy(max_attempts=max_attempts, sleep=sleeps, random=lambda: 0.5), sleeps


def test_real_llama_server_with_schema(llama_server: str) -> None:
    agent = OpenAIAgent("smollm2", base_url=llama_server)
    reply = asyncio.run(
        agent.reply(
            AgentRequest(
                prompt="Is water wet? Give your verdict.",
                system="You are a careful critic.",
                json_schema=VERDICT_SCHEMA,
                max_tokens=96,
                temperature=0,
            )
        )
    )
    Verdict.model_validate_json(reply.text)
    # llama-cpp-python's server refuses response_format json_schema; the agent noticed and used
    # the json_object + schema form instead (a grammar), which is what made the reply parse.
    assert agent.json_schema_refused
    assert reply.model == "smollm2"
    assert reply.prompt_tokens and reply.completion_tokens
    assert reply.attempts == 1


def test_real_llama_server_free_text(llama_server: str) -> None:
    agent = OpenAIAgent("smollm2", base_url=llama_server)
    reply = asyncio.run(agent.reply(AgentRequest(prompt="Name one colour.", max_tokens=10)))
    assert reply.text.strip()
    assert 0 < reply.completion_tokens <= 10


def test_unreachable_server_names_the_url_and_the_fix() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    policy, sleeps = no_wait_policy(max_attempts=2)
    agent = OpenAIAgent("any-model", base_url=url, retry=policy)
    with pytest.raises(AgentUnavailable) as caught:
        asyncio.run(agent.reply(AgentRequest(prompt="hello", timeout_s=5)))
    message = str(caught.value)
    # The URL was given, so the fix is the server or the URL, not "pass openai:MODEL@URL".
    assert message.startswith(f"cannot reach {url}: start the server there, or correct the URL")
    assert caught.value.attempts == 2  # connection errors are retried
    assert len(sleeps.delays) == 1
    with pytest.raises(AgentUnavailable, match=f"cannot reach {url}: start the server there"):
        asyncio.run(agent.probe())  # the start-up probe says the same, once


def test_429_then_500_then_success_takes_three_attempts() -> None:
    answers = [
        (429, {"error": {"message": "Rate limit reached", "type": "requests"}}, {"retry-after": "2"}),
        (500, {"error": {"message": "The server had an error", "type": "server_error"}}, {}),
        (200, chat_completion('{"verdict": "agree", "reason": "fine"}'), {}),
    ]
    policy, sleeps = no_wait_policy()
    with scripted_http_server(answers) as (url, received):
        agent = OpenAIAgent("scripted-model", base_url=url, api_key="sk-test", retry=policy)
        reply = asyncio.run(agent.reply(AgentRequest(prompt="judge", json_schema=VERDICT_SCHEMA, max_tokens=50)))
    assert reply.attempts == 3
    assert json.loads(reply.text) == {"verdict": "agree", "reason": "fine"}
    assert (reply.prompt_tokens, reply.completion_tokens, reply.model) == (9, 4, "scripted-model")
    assert len(received) == 3
    # The server's Retry-After (2 s) outweighs the first backoff step; the second step is 1 s ± jitter.
    assert sleeps.delays == [2.0, 0.75]
    assert received[0].path == "/v1/chat/completions"
    assert received[0].headers["authorization"] == "Bearer sk-test"
    sent = received[0].body
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {"name": "turn", "schema": VERDICT_SCHEMA}}
    assert sent["max_tokens"] == 50
    assert sent["messages"] == [{"role": "user", "content": "judge"}]


def test_always_500_gives_up_after_max_attempts() -> None:
    answers = [(500, {"error": {"message": "upstream exploded", "type": "server_error"}}, {})]
    policy, sleeps = no_wait_policy(max_attempts=3)
    with scripted_http_server(answers) as (url, received):
        agent = OpenAIAgent("scripted-model", base_url=url, api_key="sk-test", retry=policy)
        with pytest.raises(AgentError) as caught:
            asyncio.run(agent.reply(AgentRequest(prompt="judge")))
    assert len(received) == 3
    assert caught.value.attempts == 3
    assert "HTTP 500" in str(caught.value)
    assert "upstream exploded" in str(caught.value)
    assert str(caught.value).endswith("(gave up after 3 attempts)")
    assert sleeps.delays == [0.375, 0.75]  # exponential: 0.5 s then 1 s steps, half of each jittered


def test_a_body_that_is_not_a_chat_completion_is_retried_then_read() -> None:
    """A proxy or a wrong URL can answer 200 with JSON of another shape; the SDK does not validate it."""
    answers = [
        (200, {"choices": "xy"}, {}),
        (200, {"detail": "Not Found"}, {}),
        (200, chat_completion('{"verdict": "agree", "reason": "fine"}'), {}),
    ]
    policy, _ = no_wait_policy()
    with scripted_http_server(answers) as (url, received):
        agent = OpenAIAgent("scripted-model", base_url=url, api_key="sk-test", retry=policy)
        reply = asyncio.run(agent.reply(AgentRequest(prompt="judge")))
    assert (reply.attempts, len(received)) == (3, 3)
    assert json.loads(reply.text)["verdict"] == "agree"


def test_a_body_that_is_never_a_chat_completion_names_the_fix() -> None:
    policy, _ = no_wait_policy(max_attempts=2)
    with scripted_http_server([(200, {"choices": "xy"}, {})]) as (url, _):
        agent = OpenAIAgent("scripted-model", base_url=url, api_key="sk-test", retry=policy)
        with pytest.raises(AgentError, match=r"something other than a chat completion: check the URL"):
            asyncio.run(agent.reply(AgentRequest(prompt="judge")))


class CutOffHandler(BaseHTTPRequestHandler):
    """Promises a whole chat completion, sends half of it, and hangs up: a crashed server or a broken proxy."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        payload = json.dumps(chat_completion('{"verdict": "agree", "reason": "fine"}')).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload[: len(payload) // 2])
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_an_answer_cut_off_mid_body_is_retried_and_named_as_such() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CutOffHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    policy, sleeps = no_wait_policy(max_attempts=2)
    try:
        agent = OpenAIAgent("scripted-model", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", retry=policy)
        with pytest.raises(AgentUnavailable, match=r"closed the connection before a whole answer .*check the server"):
            asyncio.run(agent.reply(AgentRequest(prompt="judge")))
    finally:
        server.shutdown()
        server.server_close()
    assert len(sleeps.delays) == 1  # retried once, as a transient failure


def test_client_errors_are_not_retried() -> None:
    answers = [(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}, {})]
    policy, sleeps = no_wait_policy()
    with scripted_http_server(answers) as (url, received):
        agent = OpenAIAgent("scripted-model", base_url=url, api_key="sk-wrong", retry=policy)
        with pytest.raises(AgentUnavailable, match=r"rejected the API key .*set OPENAI_API_KEY"):
            asyncio.run(agent.reply(AgentRequest(prompt="judge")))
    assert len(received) == 1
    assert sleeps.delays == []


def test_missing_key_for_openai_itself_is_refused_up_front() -> None:
    with pytest.raises(AgentUnavailable, match="OPENAI_API_KEY is not set"):
        OpenAIAgent("gpt-4o-mini")


def test_key_and_url_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = [(200, chat_completion("hello"), {})]
    with scripted_http_server(answers) as (url, received):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
        agent = OpenAIAgent("scripted-model")
        assert asyncio.run(agent.reply(AgentRequest(prompt="hi"))).text == "hello"
    assert received[0].headers["authorization"] == "Bearer sk-from-env"


def test_a_server_without_a_key_gets_a_placeholder() -> None:
    with scripted_http_server([(200, chat_completion("hello"), {})]) as (url, received):
        asyncio.run(OpenAIAgent("scripted-model", base_url=url).reply(AgentRequest(prompt="hi")))
    assert received[0].headers["authorization"] == "Bearer not-needed"

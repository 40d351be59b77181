"""A request's own deadline inside the turn's, and a refused response format remembered per server.

Real HTTP servers on loopback play a server whose first answer never comes (a hung request) and
llama-cpp-python's answer to ``response_format: json_schema`` (HTTP 500 naming it).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the openai SDK is not installed (pip install 'moot[openai]')")

from agents_helpers import VERDICT_SCHEMA, chat_completion, scripted_http_server

from moot.agents import AgentRequest, OpenAIAgent, RetryPolicy
from moot.agents._http import RequestDeadline
from moot.agents.base import DEFAULT_TURN_TOKENS
from moot.agents.server_memory import MEMORY_NAME
from moot.engine.loop import usage_path
from moot.errors import AgentError

ANSWER = '{"verdict": "agree", "reason": "fine"}'


@contextmanager
def first_request_hangs(hang_s: float) -> Iterator[tuple[str, list[float]]]:
    """A server that holds its first request ``hang_s`` seconds without a byte, then answers the others."""
    arrivals: list[float] = []
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            arrivals.append(time.monotonic())
            if len(arrivals) == 1:
                release.wait(hang_s)
                return
            payload = json.dumps(chat_completion(ANSWER)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", arrivals
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_hung_request_is_retried_inside_the_turn() -> None:
    # The turn has 4 s; the first request hangs far longer. Before, the request's deadline was the
    # turn's, so the turn ended with the hang and nothing was retried.
    with first_request_hangs(hang_s=30) as (url, arrivals):
        agent = OpenAIAgent("scripted-model", base_url=url, api_key="sk-test", retry=RetryPolicy(base_delay_s=0.01))
        started = time.monotonic()
        reply = asyncio.run(agent.reply(AgentRequest(prompt="judge", timeout_s=4)))
        took = time.monotonic() - started
    assert json.loads(reply.text) == {"verdict": "agree", "reason": "fine"}
    assert reply.attempts == 2
    assert len(arrivals) == 2
    assert 1.5 <= arrivals[1] - arrivals[0] < 3.5  # the first request was given half the turn
    assert took < 4


def test_the_turn_deadline_still_bounds_every_retry() -> None:
    with first_request_hangs(hang_s=30) as (url, _arrivals):
        agent = OpenAIAgent("scripted-model", base_url=url, api_key="sk-test", retry=RetryPolicy(max_attempts=1))
        started = time.monotonic()
        with pytest.raises(AgentError) as caught:
            asyncio.run(agent.reply(AgentRequest(prompt="judge", timeout_s=2)))
        took = time.monotonic() - started
    assert "did not answer within 1 s" in str(caught.value)
    assert "--turn-timeout" in str(caught.value)
    assert took < 2


def test_a_refused_json_schema_is_remembered_for_the_server_across_debates() -> None:
    refusal = (500, {"error": {"message": "response_format json_schema is not supported", "type": "server"}}, {})
    ok = (200, chat_completion(ANSWER), {})
    with scripted_http_server([refusal, ok, ok]) as (url, received):
        first = OpenAIAgent("scripted-model", base_url=url, api_key="sk-test")
        asyncio.run(first.reply(AgentRequest(prompt="judge", json_schema=VERDICT_SCHEMA)))
        # A later debate's agent for the same server: its very first request uses the form the server takes.
        second = OpenAIAgent("scripted-model", base_url=url + "/", api_key="sk-test")
        reply = asyncio.run(second.reply(AgentRequest(prompt="judge", json_schema=VERDICT_SCHEMA)))
    formats = [seen.body["response_format"]["type"] for seen in received]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert second.json_schema_refused and reply.attempts == 1


def test_the_next_run_asks_a_refusing_server_in_the_form_it_takes_from_its_first_request(tmp_path: Path) -> None:
    # Two `moot run` processes, one after the other, against the same server: only the first ever sends the
    # json_schema form the server refuses; the second run's first request is already json_object.
    refusal = (500, {"error": {"message": "response_format json_schema is not supported", "type": "server"}}, {})
    message = (
        "Keep the services in one repository, but scope every CI job to the services a change touches, "
        "using the build graph. A platform team owns the shared tooling and its on-call rota; each service "
        "team keeps its own release cadence and its own code owners file."
    )
    turn = (200, chat_completion(json.dumps({"message": message, "status": "AWAITING", "summary": ""})), {})
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    formats: list[list[str]] = []
    with scripted_http_server([refusal, turn]) as (url, received):
        for run in (1, 2):
            before = len(received)
            command = ["run", "critique", "--topic", f"Monorepo {run}", "--max-rounds", "1", "--json"]
            command += ["--agents", f"openai:scripted-model@{url}", "--root", str(tmp_path)]
            done = subprocess.run(
                [sys.executable, "-m", "moot", *command],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert json.loads(done.stdout)["outcome"] == "MAX_ROUNDS", done.stderr
            formats.append([seen.body["response_format"]["type"] for seen in received[before:]])
    assert formats == [["json_schema", "json_object", "json_object"], ["json_object", "json_object"]]
    assert url in (tmp_path / "state" / "moot" / MEMORY_NAME).read_text(encoding="utf-8")


def test_a_prompt_longer_than_the_models_context_is_built_again_to_fit_it_in_this_run_and_the_next(
    tmp_path: Path,
) -> None:
    # A small local model behind an OpenAI-compatible server (llama-cpp-python's wording of the refusal): the
    # first request, sized for a full-size model, is refused; moot builds it again for the reported context,
    # with the short turns of a small model, and the next run starts that way.
    message = (
        "This model's maximum context length is 2048 tokens. However, you requested 6184 tokens (2088 in the "
        "messages, 4096 in the completion). Please reduce the length of the messages or completion."
    )
    too_long = (
        400,
        {"error": {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}},
        {},
    )
    turn = (
        200,
        chat_completion(
            json.dumps({"message": "Scope CI jobs to changed services.", "status": "AWAITING", "summary": ""})
        ),
        {},
    )
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    budgets: list[list[int]] = []
    runs: list[subprocess.CompletedProcess[str]] = []
    with scripted_http_server([too_long, turn]) as (url, received):
        for run in (1, 2):
            before = len(received)
            command = ["run", "critique", "--topic", f"Monorepo {run}", "--max-rounds", "1", "--json"]
            command += ["--agents", f"openai:small-model@{url}", "--root", str(tmp_path)]
            runs.append(
                subprocess.run(
                    [sys.executable, "-m", "moot", *command], capture_output=True, text=True, env=env, timeout=120
                )
            )
            budgets.append([seen.body["max_tokens"] for seen in received[before:]])
    assert [json.loads(done.stdout)["outcome"] for done in runs] == ["MAX_ROUNDS", "MAX_ROUNDS"], runs[0].stderr
    full, small = budgets[0][0], budgets[0][1]
    assert full == DEFAULT_TURN_TOKENS and small < 2048 // 2
    assert budgets == [[full, small, small], [small, small]]
    first_turn = json.loads(usage_path(tmp_path / json.loads(runs[0].stdout)["artifact"]).read_text().splitlines()[0])
    assert first_turn["agent_attempts"] == 2  # the refused request and the one that fit


def test_a_reply_the_models_context_cut_short_sizes_the_next_requests(tmp_path: Path) -> None:
    # llama.cpp refuses only a prompt that alone is too long; a long reply simply stops where the context ends
    # (finish_reason "length" before max_tokens). That is the context's size too: the repair and the next
    # turn are sized for it.
    cut = chat_completion('{"message": "Scope the builds to the services that changed, and')
    cut["choices"][0]["finish_reason"] = "length"
    cut["usage"] = {"prompt_tokens": 1500, "completion_tokens": 548, "total_tokens": 2048}
    turn = chat_completion(
        json.dumps({"message": "Scope CI jobs to changed services.", "status": "AWAITING", "summary": ""})
    )
    with scripted_http_server([(200, cut, {}), (200, turn, {})]) as (url, received):
        command = ["run", "critique", "--topic", "Monorepo", "--max-rounds", "1", "--json"]
        command += ["--agents", f"openai:small-model@{url}", "--root", str(tmp_path)]
        done = subprocess.run([sys.executable, "-m", "moot", *command], capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout)["outcome"] == "MAX_ROUNDS", done.stderr
    budgets = [seen.body["max_tokens"] for seen in received]
    assert budgets[0] == DEFAULT_TURN_TOKENS and len(budgets) == 3 and all(b <= 2048 // 2 for b in budgets[1:]), budgets


def test_a_long_turn_leaves_its_requests_all_but_a_minute_for_a_slow_server() -> None:
    # A local model on a busy machine may need most of a 300 s turn: its request is not cut at half of it.
    assert RequestDeadline(AgentRequest(prompt="x", timeout_s=300)).request_s == 240
    assert RequestDeadline(AgentRequest(prompt="x", timeout_s=60)).request_s == 30

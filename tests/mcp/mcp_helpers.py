"""Helpers of the MCP tests: ``moot mcp`` started the way an agent host starts it, driven with the official
SDK's client (``stdio_client`` + ``ClientSession``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent
from tools_helpers import ALICE, BOB, TOPIC, example_turns, write_source

__all__ = [
    "ALICE",
    "BOB",
    "REPLIES",
    "TOKEN",
    "TOPIC",
    "PacedModelServer",
    "call",
    "connect",
    "critique_reply",
    "environment",
    "example_turns",
    "free_port",
    "http_session",
    "join",
    "moot_mcp",
    "refused",
    "serving_http",
    "session_over",
    "tool_error",
    "tree",
    "write_source",
]


TOKEN = "s3cret-test-token"


def _source_path() -> dict[str, str]:
    """The PYTHONPATH of the test run (a worktree's sources first), which a server process must import too."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}


@asynccontextmanager
async def connect(root: Path, *flags: str, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized session with ``python -m moot mcp --root ROOT FLAGS…`` over stdio (its own process).

    The SDK passes the server only a minimal environment (PATH, HOME, …), the test run's PYTHONPATH and
    ``env``, so no MOOT_* variable or key of the test run leaks into it.
    """
    args = ["-m", "moot", "mcp", "--root", str(root), *flags]
    params = StdioServerParameters(command=sys.executable, args=args, env={**_source_path(), **(env or {})})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def environment(**extra: str) -> dict[str, str]:
    """The test run's environment without moot's variables or an OpenAI key, plus ``extra``."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("MOOT_", "OPENAI_"))}
    return {**kept, **extra}


def moot_mcp(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m moot mcp ARGS…`` run to its end (stdin closed), for what it refuses before serving."""
    return subprocess.run(
        [sys.executable, "-m", "moot", "mcp", *args],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Served:
    """A ``moot mcp --transport http`` process: where it listens, what it printed once listening, its pid."""

    url: str
    said: str
    pid: int


@contextmanager
def serving_http(root: Path, *flags: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """``moot mcp --transport http`` on a free loopback port, as its own process. Without --token or
    $MOOT_MCP_TOKEN in ``flags``/``env`` it draws its own token."""
    port = free_port()
    command = [sys.executable, "-m", "moot", "mcp", "--root", str(root), "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(
        [*command, *flags], env=env if env is not None else environment(), stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        said = process.stderr.readline()  # printed once the port is bound
        assert "serving" in said, f"moot mcp did not start: {said}{process.stderr.read() if not said else ''}"
        yield Served(f"http://127.0.0.1:{port}/mcp", said, process.pid)
    finally:
        process.terminate()
        process.wait(timeout=10)


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    """An initialized session of the SDK's streamable HTTP client, sending ``token`` as the bearer token."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def session_over(
    transport: str, root: Path, *flags: str, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """A session with ``moot mcp FLAGS…`` over ``transport`` (stdio or http, with the token), ``env`` added to
    the server's environment."""
    if transport == "stdio":
        async with connect(root, *flags, env=env) as session:
            yield session
        return
    with serving_http(root, *flags, env=environment(MOOT_MCP_TOKEN=TOKEN, **(env or {}))) as served:
        async with http_session(served.url, TOKEN) as session:
            yield session


def _first_text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A successful call's payload (``ok: true``)."""
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, f"{tool} was refused: {_first_text(result)}"
    payload = result.structured_content
    assert payload is not None and payload["ok"] is True
    return payload


async def refused(session: ClientSession, tool: str, rule: str, **arguments: Any) -> dict[str, Any]:
    """A refusal: a tool error (not a protocol error), its first line the sentence and the rule ids."""
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error, f"{tool} was not refused: {_first_text(result)}"
    payload = result.structured_content
    assert payload is not None and payload["ok"] is False
    rules = [r["rule"] for r in payload["rules"]]
    assert rule in rules, f"{rule} not among {rules}: {payload['error']}"
    lead = _first_text(result)
    assert lead.startswith(payload["error"]) and rule in lead
    return payload


async def join(session: ClientSession, source: Path, who: dict[str, str]) -> dict[str, Any]:
    return await call(
        session,
        "join",
        target=str(source),
        topic=TOPIC,
        participant_name=who["name"],
        harness=who["harness"],
        model_id=who["model"],
        run_id=f"run-{who['name']}",
    )


class PacedModelServer:
    """A real OpenAI-compatible chat server on loopback: ``/v1/models`` for moot's probe, and each chat completion
    answered with the next prepared reply after ``delay`` seconds. Replies from index ``hold_from`` on wait until
    :meth:`release` (a participant still thinking), so a test can stop a debate mid-turn.
    """

    def __init__(self, replies: list[str], *, delay: float = 0.0, hold_from: int | None = None) -> None:
        self.replies = replies
        self.delay = delay
        self.hold_from = hold_from
        self.asked = 0
        self.authorizations: list[str | None] = []  # the Authorization header of every request, in order
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def spec(self) -> str:
        return f"openai:paced-model@{self.url}"

    @property
    def allowed(self) -> tuple[str, str]:
        """The flags of a ``moot mcp`` whose clients may name this server."""
        return ("--allow-server", self.url)

    def release(self) -> None:
        self._released.set()

    def __enter__(self) -> PacedModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        paced = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paced.authorizations.append(self.headers.get("authorization"))
                self._send({"object": "list", "data": [{"id": "paced-model", "object": "model", "owned_by": "test"}]})

            def do_POST(self) -> None:
                paced.authorizations.append(self.headers.get("authorization"))
                self.rfile.read(int(self.headers.get("content-length", 0)))
                with paced._lock:
                    index = paced.asked
                    paced.asked += 1
                if paced.hold_from is not None and index >= paced.hold_from:
                    paced._released.wait()
                time.sleep(paced.delay)
                self._send(chat_completion(paced.replies[min(index, len(paced.replies) - 1)]))

            def _send(self, body: dict[str, Any]) -> None:
                payload = json.dumps(body).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up on this request (a cancelled debate)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def chat_completion(content: str) -> dict[str, Any]:
    """A chat completion exactly as OpenAI's API documents it (9 prompt and 4 completion tokens)."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "paced-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }


def critique_reply(message: str, status: str = "AWAITING", summary: str = "") -> str:
    """A critique participant's reply, as the engine asks for it."""
    return json.dumps({"message": message, "status": status, "summary": summary})


# A planning critique that ends DONE in round 2: proposer, critic, proposer (PROPOSING_DONE), critic (DONE).
REPLIES = [
    critique_reply("Move all services into one repository with one CI pipeline."),
    critique_reply("CI time grows with every service; how do you keep builds fast?"),
    critique_reply("Build only what changed, using the dependency graph.", "PROPOSING_DONE"),
    critique_reply("Agreed.", "DONE", "One repository, one pipeline, builds scoped to changed services."),
]


async def tool_error(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A call refused as a usage error (exit code 2): its first line is one sentence."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool} was not refused: {_first_text(result)}"
    payload = result.structured_content
    assert payload is not None and payload["ok"] is False and payload["exit_code"] == 2, payload
    lead = _first_text(result)
    assert "\n" not in lead and "Traceback" not in lead, lead
    return payload


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes, the ledger's files left out."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".moot" not in p.relative_to(root).parts
    }

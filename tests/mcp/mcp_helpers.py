"""Helpers of the MCP tests: ``moot mcp`` started the way an agent host starts it, driven with the official
SDK's client (``stdio_client`` + ``ClientSession``)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, TextContent
from tools_helpers import ALICE, BOB, TOPIC, example_turns, write_source

__all__ = [
    "ALICE",
    "BOB",
    "REPLIES",
    "TOPIC",
    "PacedModelServer",
    "call",
    "connect",
    "critique_reply",
    "example_turns",
    "join",
    "refused",
    "tool_error",
    "tree",
    "write_source",
]


@asynccontextmanager
async def connect(root: Path, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized session with ``python -m moot mcp --root ROOT`` over stdio (its own process).

    The SDK passes the server only a minimal environment (PATH, HOME, …) and ``env``, so no MOOT_* variable
    of the test run leaks into it; ``PYTHONPATH`` does, so that the server runs the code under test.
    """
    path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "moot", "mcp", "--root", str(root)], env={**path, **(env or {})}
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
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
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def spec(self) -> str:
        return f"openai:paced-model@http://127.0.0.1:{self._server.server_address[1]}/v1"

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
                self._send({"object": "list", "data": [{"id": "paced-model", "object": "model", "owned_by": "test"}]})

            def do_POST(self) -> None:
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

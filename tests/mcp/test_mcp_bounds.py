"""Bounded work in ``moot mcp``, seen from two real SDK clients over streamable HTTP: a huge topic is refused in
one sentence while another client is answered, a start's preparation does not stop the server answering others,
and the debates running at once are capped per server and per MCP session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx2
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import REPLIES, PacedModelServer, call, tool_error

from moot.limits import MAX_SUBJECT_CHARS

# Far below the minutes an unbounded start held the event loop for, far above a loaded machine's answer time.
ANSWERED_WITHIN_S = 20
TOKEN = "bounds-test-token"
MODEL = "openai:paced-model"  # at the operator's OPENAI_BASE_URL: a spec no client names a server in


@contextmanager
def serving(root: Path, model: PacedModelServer) -> Iterator[str]:
    """``moot mcp --transport http`` on a free loopback port with the token, its operator's model server
    ``model`` (``$OPENAI_BASE_URL``) and ``moot.toml`` giving every role that model; yields the MCP URL."""
    (root / "moot.toml").write_text(f'agents = "{MODEL}"\n', encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("MOOT_", "OPENAI_"))}
    env = {**kept, "MOOT_MCP_TOKEN": TOKEN, "OPENAI_BASE_URL": model.spec.partition("@")[2]}
    command = [sys.executable, "-m", "moot", "mcp", "--root", str(root), "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "moot mcp exited early"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "moot mcp did not start listening"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()  # a server still blocked in a start (the old code) would not stop on a polite signal
        process.wait(timeout=30)


@asynccontextmanager
async def clients(url: str) -> AsyncIterator[tuple[ClientSession, ClientSession]]:
    """Two initialized MCP sessions on the server at ``url``, each on its own HTTP connection."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as first_http,
        httpx2.AsyncClient(headers=headers, timeout=120) as second_http,
        streamable_http_client(url, http_client=first_http) as (read_a, write_a),
        streamable_http_client(url, http_client=second_http) as (read_b, write_b),
        ClientSession(read_a, write_a) as first,
        ClientSession(read_b, write_b) as second,
    ):
        await first.initialize()
        await second.initialize()
        yield first, second


def with_caps(root: Path, **caps: int) -> None:
    """Add the caps on running debates to the work root's moot.toml (read at each start)."""
    settings = root / "moot.toml"
    lines = [settings.read_text(encoding="utf-8"), *(f"{key} = {value}\n" for key, value in caps.items())]
    settings.write_text("".join(lines), encoding="utf-8")


def fill_pipe(pipe: Path, text: str) -> None:
    """Give the reader waiting on ``pipe`` its text, and leave a regular file with that text at its path."""
    with pipe.open("w", encoding="utf-8") as writer:  # waits for the reader, as a slow disk would answer at last
        writer.write(text)
        settled = pipe.with_name(f".{pipe.name}.file")
        settled.write_text(text, encoding="utf-8")
        settled.replace(pipe)  # before the reader sees the end: whoever opens the path later reads the file


def test_a_megabyte_topic_is_refused_in_one_sentence_while_another_client_is_answered(root: Path) -> None:
    async def scenario(server_url: str) -> None:
        async with clients(server_url) as (first, second):
            refusal: dict[str, object] = {}

            async def huge_start() -> None:
                refusal.update(await tool_error(first, "start_debate", protocol="critique", topic="cache " * 200_000))

            async with anyio.create_task_group() as group:
                group.start_soon(huge_start)
                await anyio.sleep(0.5)  # the huge call reaches the server first
                with anyio.fail_after(ANSWERED_WITHIN_S):
                    listed = await call(second, "list_debates")
                assert listed["debates"] == []
            error = str(refusal["error"])
            assert f"{MAX_SUBJECT_CHARS:,}" in error and "1,200,000 characters" in error and "shorten" in error
            assert error.count(". ") == 0 and error.endswith(".")
            assert not (root / ".dialogues").exists()  # nothing was named after it or written

    with PacedModelServer(REPLIES) as model, serving(root, model) as url:
        anyio.run(scenario, url)


def test_another_client_is_answered_while_a_start_is_being_prepared(root: Path) -> None:
    # The duel's source is a pipe nobody writes yet: its start blocks reading it, as on a slow or hung disk.
    source = root / "slow.md"
    os.mkfifo(source)

    async def scenario(server_url: str) -> None:
        async with clients(server_url) as (first, second):
            started: dict[str, object] = {}

            async def slow_start() -> None:
                started.update(await call(first, "start_debate", protocol="duel", source="slow.md"))

            async with anyio.create_task_group() as group:
                group.start_soon(slow_start)
                await anyio.sleep(1.0)  # the start is now reading the pipe
                try:
                    with anyio.fail_after(ANSWERED_WITHIN_S):
                        listed = await call(second, "list_debates")
                    assert started == {} and listed["debates"] == []  # answered while the start still waits
                finally:
                    await anyio.to_thread.run_sync(fill_pipe, source, "# Shared cache\n\nOne LRU for all.\n")
            assert started["state"] == "running" and started["protocol"] == "duel"
            await call(second, "cancel_debate", debate_id=started["debate_id"])

    with PacedModelServer(REPLIES, hold_from=0) as model, serving(root, model) as url:
        anyio.run(scenario, url)


def test_starts_past_the_session_and_server_caps_are_refused_with_the_limit_and_what_to_do(root: Path) -> None:
    async def scenario(server_url: str) -> None:
        async with clients(server_url) as (first, second):
            a1 = await call(first, "start_debate", protocol="critique", topic="First")
            await call(first, "start_debate", protocol="critique", topic="Second")
            mine = await tool_error(first, "start_debate", protocol="critique", topic="Third")
            assert "already runs 2 debate(s)" in mine["error"]
            assert "max_running_debates_per_session" in mine["error"] and "cancel_debate" in mine["error"]

            # Another session still has room, up to the server's cap.
            await call(second, "start_debate", protocol="critique", topic="Fourth")
            full = await tool_error(second, "start_debate", protocol="critique", topic="Fifth")
            assert "this server already runs 3 debate(s)" in full["error"]
            assert "max_running_debates in moot.toml" in full["error"] and "wait for one to end" in full["error"]
            assert not (root / ".dialogues" / "third.md").exists()
            assert not (root / ".dialogues" / "fifth.md").exists()

            # A cancelled debate frees its place.
            await call(first, "cancel_debate", debate_id=a1["debate_id"])
            again = await call(first, "start_debate", protocol="critique", topic="Third")
            assert again["state"] == "running"

    # Every model call waits: each debate started here keeps running until it is cancelled.
    with PacedModelServer(REPLIES, hold_from=0) as model, serving(root, model) as url:
        with_caps(root, max_running_debates=3, max_running_debates_per_session=2)
        anyio.run(scenario, url)

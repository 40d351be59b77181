"""``moot mcp --transport http``: a real server process on loopback, the SDK's streamable HTTP client with
the bearer token, a plain HTTP client without it (401), and the refusal to serve beyond loopback without
a token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import ALICE, BOB, REPLIES, PacedModelServer, call, join, refused, write_source

TOKEN = "s3cret-test-token"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _environment(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MOOT_")}
    return {**base, **extra}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _moot_mcp(root: Path, *args: str, env: dict[str, str]) -> list[str]:
    return [sys.executable, "-m", "moot", "mcp", "--root", str(root), "--transport", "http", *args]


@pytest.fixture
def server_url(root: Path) -> Iterator[str]:
    """``moot mcp --transport http`` on a free loopback port, the token given through $MOOT_MCP_TOKEN."""
    port = _free_port()
    env = _environment(MOOT_MCP_TOKEN=TOKEN)
    process = subprocess.Popen(
        _moot_mcp(root, "--port", str(port), env=env), env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, f"moot mcp exited early: {process.stderr.read() if process.stderr else ''}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "moot mcp did not start listening"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_sdk_client_with_the_bearer_token_joins_and_claims_over_http(root: Path, server_url: str) -> None:
    source = write_source(root)

    async def scenario() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers) as alice_http,
            httpx2.AsyncClient(headers=headers) as bob_http,
            streamable_http_client(server_url, http_client=alice_http) as (read_a, write_a),
            streamable_http_client(server_url, http_client=bob_http) as (read_b, write_b),
            ClientSession(read_a, write_a) as alice,
            ClientSession(read_b, write_b) as bob,
        ):
            await alice.initialize()
            await bob.initialize()
            first, second = await join(alice, source, ALICE), await join(bob, source, BOB)
            duel = first["duel_id"]
            status = await call(alice, "status", duel_id=duel)
            assert status["participant_count"] == 2 and status["next_step"] == "debating"
            # Each HTTP session is its own connection: bob's session may act as bob, alice's may not.
            await refused(alice, "claim_lock", "TOOLS_IDENTITY", duel_id=duel, participant_id=second["participant_id"])
            lock = await call(bob, "claim_lock", duel_id=duel, participant_id=second["participant_id"])
            assert lock["lease_token"] and lock["participant_id"] == second["participant_id"]

    anyio.run(scenario)


def test_a_request_without_the_bearer_token_gets_401(server_url: str) -> None:
    missing = httpx2.post(server_url, json=INITIALIZE, headers=MCP_HEADERS, timeout=10)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].lower().startswith("bearer")
    wrong = httpx2.post(
        server_url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer nope"}, timeout=10
    )
    assert wrong.status_code == 401
    right = httpx2.post(
        server_url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}, timeout=10
    )
    assert right.status_code == 200
    # Loopback also checks the Host header (the SDK's DNS-rebinding protection), token or not.
    rebound = httpx2.post(
        server_url,
        json=INITIALIZE,
        headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}", "Host": "attacker.example"},
        timeout=10,
    )
    assert rebound.status_code == 421


def test_binding_beyond_loopback_without_a_token_is_refused(root: Path) -> None:
    port = _free_port()
    env = _environment()
    done = subprocess.run(
        _moot_mcp(root, "--host", "0.0.0.0", "--port", str(port), env=env),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    message = done.stderr.strip()
    assert message.count("\n") == 0 and "0.0.0.0" in message and "--token" in message, message
    assert done.stdout == ""


def test_a_busy_port_is_one_sentence_and_nothing_says_serving(root: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = _environment()
        done = subprocess.run(
            _moot_mcp(root, "--port", str(port), env=env), env=env, capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 2, done.stderr
    message = done.stderr.strip()
    assert "serving" not in message and message.count("\n") == 0, message
    assert str(port) in message and "--port" in message


def test_a_bad_work_root_is_one_sentence_before_anything_is_served(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-root"
    done = subprocess.run(
        [sys.executable, "-m", "moot", "mcp", "--root", str(missing)],
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and str(missing) in done.stderr and "--root" in done.stderr


def test_a_debate_started_in_one_http_session_is_followed_from_another(root: Path, server_url: str) -> None:
    async def scenario() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with PacedModelServer(REPLIES, delay=0.5) as model:
            async with (
                httpx2.AsyncClient(headers=headers) as first_http,
                httpx2.AsyncClient(headers=headers) as second_http,
                streamable_http_client(server_url, http_client=first_http) as (read_a, write_a),
                streamable_http_client(server_url, http_client=second_http) as (read_b, write_b),
                ClientSession(read_a, write_a) as first,
                ClientSession(read_b, write_b) as second,
            ):
                await first.initialize()
                await second.initialize()
                started = await call(first, "start_debate", protocol="critique", topic="Cache", agents=model.spec)
                landed: list[float] = []

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    landed.append(value)

                result = await second.call_tool(
                    "debate_status",
                    {"debate_id": started["debate_id"], "wait_seconds": 60},
                    progress_callback=on_progress,
                )
                assert result.structured_content is not None and result.structured_content["outcome"] == "DONE"
                assert landed and landed[-1] == 4
                listed = await call(second, "list_debates")
                assert [row["state"] for row in listed["debates"]] == ["ended"]

    anyio.run(scenario)


def test_a_second_http_session_joining_as_alice_is_refused_unless_it_presents_her_secret(
    root: Path, server_url: str
) -> None:
    source = write_source(root)

    async def scenario() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers) as alice_http,
            httpx2.AsyncClient(headers=headers) as other_http,
            streamable_http_client(server_url, http_client=alice_http) as (read_a, write_a),
            streamable_http_client(server_url, http_client=other_http) as (read_b, write_b),
            ClientSession(read_a, write_a) as alice,
            ClientSession(read_b, write_b) as other,
        ):
            await alice.initialize()
            await other.initialize()
            first = await join(alice, source, ALICE)
            # one server process, two sessions: the name alone no longer gives session B alice's seat
            await refused(
                other, "join", "TOOLS_SEAT", target=str(source), participant_name="alice", harness="claude-code",
                model_id="claude-opus-4", run_id="run-b",
            )  # fmt: skip
            await refused(other, "claim_lock", "TOOLS_IDENTITY", duel_id=first["duel_id"],
                          participant_id=first["participant_id"], for_timeout=True)  # fmt: skip
            back = await call(
                other, "join", target=str(source), participant_name="alice", harness="claude-code",
                model_id="claude-opus-4", run_id="run-b", participant_secret=first["participant_secret"],
            )  # fmt: skip
            assert back["participant_id"] == first["participant_id"]
            lock = await call(other, "claim_lock", duel_id=first["duel_id"], participant_id=back["participant_id"],
                              for_timeout=True)  # fmt: skip
            assert lock["lease_token"]

    anyio.run(scenario)

"""``moot mcp --transport http``: a real server process on loopback, the SDK's streamable HTTP client with
the bearer token, a plain HTTP client without it (401); with no token given, the server draws one, prints it
and asks it of every request, loopback included."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import (
    ALICE,
    BOB,
    REPLIES,
    TOKEN,
    PacedModelServer,
    call,
    environment,
    http_session,
    join,
    moot_mcp,
    refused,
    serving_http,
    write_source,
)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def server_url(root: Path) -> Iterator[str]:
    """``moot mcp --transport http`` on a free loopback port, the token given through $MOOT_MCP_TOKEN."""
    with serving_http(root, env=environment(MOOT_MCP_TOKEN=TOKEN)) as served:
        assert TOKEN not in served.said  # a token the operator gave is not printed
        yield served.url


def _status(url: str, token: str | None, **headers: str) -> int:
    bearer = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx2.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **bearer, **headers}, timeout=10).status_code


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
    assert _status(server_url, "nope") == 401
    assert _status(server_url, TOKEN) == 200
    # Loopback also checks the Host header (the SDK's DNS-rebinding protection), token or not.
    assert _status(server_url, TOKEN, Host="attacker.example") == 421


def test_without_a_token_the_server_draws_one_prints_it_and_asks_it_on_loopback(root: Path) -> None:
    with serving_http(root, env=environment()) as served:
        drawn = re.search(r"Authorization: Bearer ([A-Za-z0-9_-]{32})'", served.said)
        assert drawn is not None, served.said
        assert _status(served.url, None) == 401
        assert _status(served.url, drawn.group(1)[:-1]) == 401
        assert _status(served.url, drawn.group(1)) == 200
    with serving_http(root, env=environment()) as again:
        assert drawn.group(1) not in again.said  # each start draws its own


def test_beyond_loopback_the_drawn_token_is_asked_too(root: Path) -> None:
    with serving_http(root, "--host", "0.0.0.0", env=environment()) as served:
        assert "0.0.0.0" in served.said and "Authorization: Bearer " in served.said
        assert _status(served.url, None) == 401


def test_a_busy_port_is_one_sentence_and_nothing_says_serving(root: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = moot_mcp("--root", str(root), "--transport", "http", "--port", str(port))
    assert done.returncode == 2, done.stderr
    message = done.stderr.strip()
    assert "serving" not in message and message.count("\n") == 0, message
    assert str(port) in message and "--port" in message


def test_a_bad_work_root_is_one_sentence_before_anything_is_served(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-root"
    done = moot_mcp("--root", str(missing))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and str(missing) in done.stderr and "--root" in done.stderr


def test_a_debate_started_in_one_http_session_is_followed_from_another(root: Path) -> None:
    async def scenario() -> None:
        with (
            PacedModelServer(REPLIES, delay=0.5) as model,
            serving_http(root, *model.allowed, env=environment(MOOT_MCP_TOKEN=TOKEN)) as served,
        ):
            async with http_session(served.url, TOKEN) as first, http_session(served.url, TOKEN) as second:
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

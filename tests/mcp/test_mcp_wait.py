"""``wait_turn`` over MCP: one server, two sessions of the SDK's HTTP client. A session waiting for its turn does
not hold the other session's calls, and its wait ends when the other session's turn lands."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
from mcp_helpers import (
    ALICE,
    BOB,
    TOKEN,
    call,
    environment,
    example_turns,
    http_session,
    join,
    serving_http,
    write_source,
)


def test_a_waiting_session_does_not_block_another_sessions_calls(root: Path) -> None:
    source = write_source(root)
    turns = example_turns(source)
    found: dict[str, Any] = {}

    async def scenario() -> None:
        with serving_http(root, env=environment(MOOT_MCP_TOKEN=TOKEN)) as served:
            async with http_session(served.url, TOKEN) as alice, http_session(served.url, TOKEN) as bob:
                a = await join(alice, source, ALICE)
                b = await join(bob, source, BOB)
                duel = a["duel_id"]
                lock = await call(bob, "claim_lock", duel_id=duel, participant_id=b["participant_id"])

                async def alice_waits() -> None:
                    started = time.monotonic()
                    found["wait"] = await call(
                        alice, "wait_turn", duel_id=duel, participant_id=a["participant_id"], timeout_seconds=60
                    )
                    found["wait_ended"] = time.monotonic()
                    found["wait_took"] = found["wait_ended"] - started

                async with anyio.create_task_group() as group:
                    group.start_soon(alice_waits)
                    await anyio.sleep(1.5)
                    # While alice waits, bob's session gets its answers at once.
                    for _ in range(3):
                        started = time.monotonic()
                        status = await call(bob, "status", duel_id=duel)
                        found.setdefault("status_took", []).append(time.monotonic() - started)
                        assert status["may_write"] == ["alice", "bob"]
                    assert "wait" not in found, "wait_turn returned while bob held the lock"
                    bob_first = turns[0].replace("alice (claude-code / claude-opus-4)", "bob (codex / gpt-5)")
                    me = {"duel_id": duel, "participant_id": b["participant_id"], "lease_token": lock["lease_token"]}
                    await call(bob, "append_turn", **me, turn_markdown=bob_first)
                    await call(bob, "release_lock", **me)
                    found["released"] = time.monotonic()

    anyio.run(scenario)
    assert max(found["status_took"]) < 5
    assert found["wait"]["waited"] == "your_turn"
    assert found["wait"]["may_write"] == ["alice"] and found["wait"]["artifact"]["turns"] == 1
    assert found["wait_ended"] - found["released"] < 10
    assert found["wait_took"] < 50

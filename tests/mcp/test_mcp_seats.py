"""Seats with secrets over MCP (the official SDK client, one ``moot mcp`` process per agent as a host starts
it): the server keeps each seat's secret for the connection that joined, so the agent that joined never
handles it, and another connection gets that seat only by presenting it."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp_helpers import ALICE, BOB, call, connect, example_turns, join, refused, write_source
from test_mcp_participation import DIALOGUE, HEADER, TURNS


def test_a_second_session_joining_as_alice_is_refused_and_alice_keeps_working(root: Path) -> None:
    source = write_source(root)
    turns = example_turns(source)

    async def scenario() -> None:
        async with connect(root) as alice, connect(root) as bob, connect(root) as mallory:
            first, second = await join(alice, source, ALICE), await join(bob, source, BOB)
            duel, alice_id = first["duel_id"], first["participant_id"]

            taken = await refused(
                mallory, "join", "TOOLS_SEAT", target=str(source), participant_name="alice", harness="claude-code",
                model_id="claude-opus-4", run_id="run-m",
            )  # fmt: skip
            assert "participant_secret" in taken["error"]
            assert first.get("participant_secret") and second.get("participant_secret")
            await refused(mallory, "claim_lock", "TOOLS_IDENTITY", duel_id=duel, participant_id=alice_id)
            assert (await call(bob, "status", duel_id=duel))["participant_count"] == 2

            # alice's agent follows the tools as the skill says: no secret in any call
            again = await join(alice, source, ALICE)
            assert again["rejoined"] and again["participant_secret"] is None
            lock = await call(alice, "claim_lock", duel_id=duel, participant_id=alice_id)
            args = {"duel_id": duel, "participant_id": alice_id, "lease_token": lock["lease_token"]}
            await refused(mallory, "append_turn", "TOOLS_IDENTITY", **args, turn_markdown=turns[0])
            assert (await call(alice, "append_turn", **args, turn_markdown=turns[0]))["turn_number"] == 1
            await call(alice, "release_lock", **args)

        # alice's host restarts: a new connection takes her seat back with the secret her first join returned
        async with connect(root) as restarted:
            back = await call(
                restarted, "join", target=str(source), participant_name="alice", harness="claude-code",
                model_id="claude-opus-4", run_id="run-alice", participant_secret=first["participant_secret"],
            )  # fmt: skip
            assert back["rejoined"] and back["participant_id"] == alice_id
            lock = await call(restarted, "claim_lock", duel_id=duel, participant_id=alice_id)
            assert lock["participant_id"] == alice_id

    anyio.run(scenario)


def test_critique_and_roundtable_seats_are_taken_only_by_their_connection_or_with_the_secret(root: Path) -> None:
    record = root / DIALOGUE
    record.parent.mkdir()
    record.write_text(HEADER, encoding="utf-8")

    async def scenario() -> None:
        async with connect(root) as proposer, connect(root) as moderator, connect(root) as mallory:
            lock = await call(proposer, "critique_claim", file=DIALOGUE, role="proposer")
            token = lock["lease_token"]
            await call(
                proposer, "critique_append", file=DIALOGUE, role="proposer", lease_token=token,
                turn_markdown=TURNS[("proposer", 1)],
            )  # fmt: skip
            await call(proposer, "critique_release", file=DIALOGUE, role="proposer", lease_token=token)
            # the role's name is not enough from another connection (another process here)
            await refused(mallory, "critique_claim", "TOOLS_SEAT", file=DIALOGUE, role="proposer")
            again = await call(proposer, "critique_claim", file=DIALOGUE, role="proposer")
            assert again["participant_secret"] is None
            await call(proposer, "critique_release", file=DIALOGUE, role="proposer", lease_token=again["lease_token"])

            started = await call(
                moderator, "roundtable_start", name="cache", speakers=["architect"], max_rounds=1,
                agenda="# Cache design\n\nShould tenants share one cache?\n",
            )  # fmt: skip
            floor = await call(mallory, "roundtable_take_floor", name="cache", role="architect")  # a free seat
            await call(
                mallory, "roundtable_speak", name="cache", role="architect", lease_token=floor["lease_token"],
                speech="Partition per tenant.",
            )  # fmt: skip
            # concluding: the moderator's seat is the connection's that started the meeting
            await refused(mallory, "roundtable_take_floor", "TOOLS_IDENTITY", name="cache", role="moderator")
            async with connect(root) as stranger:
                await refused(stranger, "roundtable_take_floor", "TOOLS_SEAT", name="cache", role="moderator")
                taken = await call(
                    stranger, "roundtable_take_floor", name="cache", role="moderator",
                    participant_secret=started["participant_secret"],
                )  # fmt: skip
                assert taken["participant_secret"] is None and taken["lease_token"]

    anyio.run(scenario)

"""``moot mcp`` over stdio, driven by the official SDK client: two agents, each with its own server process
as an agent host would start it, run a whole duel; refusals are tool errors and the server keeps serving;
a connection cannot act as the other participant."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp_helpers import ALICE, BOB, call, connect, example_turns, join, refused, write_source

from moot.detect import check_path
from moot.protocols.duel.machine import OutcomeName

TOOL_NAMES = {"join", "status", "claim_lock", "refresh_lock", "release_lock", "read_debate", "append_turn", "emit"}


def test_initialize_and_list_the_duels_eight_tools_among_the_others_with_input_schemas(root: Path) -> None:
    async def scenario() -> None:
        async with connect(root) as session:
            assert session.server_info is not None and session.server_info.name == "moot"
            assert session.instructions and "append_turn" in session.instructions
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(listed) >= TOOL_NAMES
            for tool in listed.values():
                assert tool.description, tool.name
                assert tool.input_schema["type"] == "object" and "ctx" not in tool.input_schema["properties"]
            assert listed["append_turn"].input_schema["required"] == [
                "duel_id",
                "participant_id",
                "lease_token",
                "turn_markdown",
            ]
            outcome = listed["release_lock"].input_schema["properties"]["outcome"]
            assert outcome["enum"] == [o.value for o in OutcomeName]
            assert listed["status"].annotations is not None and listed["status"].annotations.read_only_hint

    anyio.run(scenario)


def test_two_agents_run_a_whole_duel_and_close_it_with_the_outcome_the_turns_reached(root: Path) -> None:
    source = write_source(root)
    turns = example_turns(source)

    async def scenario() -> None:
        async with connect(root) as alice, connect(root) as bob:
            first = await join(alice, source, ALICE)
            assert first["next_step"] == "waiting_for_participant"
            second = await join(bob, source, BOB)
            duel = first["duel_id"]
            assert second["duel_id"] == duel and second["participant_count"] == 2
            seats = {"alice": (alice, first["participant_id"]), "bob": (bob, second["participant_id"])}
            for number, text in enumerate(turns, start=1):
                me, peer = ("alice", "bob") if number % 2 else ("bob", "alice")
                session, participant = seats[me]
                lock = await call(session, "claim_lock", duel_id=duel, participant_id=participant)
                assert lock["fencing_token"] == number
                token = lock["lease_token"]
                appended = await call(
                    session,
                    "append_turn",
                    duel_id=duel,
                    participant_id=participant,
                    lease_token=token,
                    turn_markdown=text,
                )
                assert appended["turn_number"] == number and appended["artifact_created"] is (number == 1)
                if number < len(turns):
                    assert appended["terminal_outcome"] is None and appended["next_speaker"] == peer
                    await call(session, "release_lock", duel_id=duel, participant_id=participant, lease_token=token)
            assert appended["terminal_outcome"] == "ACCEPTED_CONSENSUS"

            # A close whose outcome disagrees with the turns is refused and leaves the duel open.
            wrong = await refused(
                bob,
                "release_lock",
                "DUEL_CONCLUSION_INCONSISTENT",
                duel_id=duel,
                participant_id=seats["bob"][1],
                lease_token=token,
                close=True,
                outcome="DISSENT",
            )
            assert wrong["closed"] is False
            closed = await call(
                bob,
                "release_lock",
                duel_id=duel,
                participant_id=seats["bob"][1],
                lease_token=token,
                close=True,
                outcome="ACCEPTED_CONSENSUS",
            )
            assert closed["closed"] is True and closed["next_step"] == "completed"

            status = await call(alice, "status", duel_id=duel)
            assert status["status"] == "closed" and status["outcome"] == "ACCEPTED_CONSENSUS"
            assert status["turn_count"] == 6 and status["lock"] is None

            debate = await call(alice, "read_debate", duel_id=duel)
            path = Path(debate["debate_path"])
            assert path.parent == root / "debates"
            assert debate["text"] == path.read_text(encoding="utf-8")
            assert "**Outcome**: ACCEPTED_CONSENSUS" in debate["text"]
            assert debate["artifact"]["valid"] and debate["artifact"]["turns"] == 6
            report = check_path(path)
            assert report.exit_code == 0, report.violations
            assert report.summary is not None and report.summary.outcome is not None
            assert report.summary.outcome.name == "ACCEPTED_CONSENSUS"

            # The artifact is a resource: listed, and read back byte for byte.
            listed = (await bob.list_resources()).resources
            assert [str(r.uri) for r in listed] == [debate["resource_uri"]]
            assert listed[0].mime_type == "text/markdown"
            contents = (await bob.read_resource(debate["resource_uri"])).contents
            assert len(contents) == 1 and getattr(contents[0], "text", None) == debate["text"]

    anyio.run(scenario)


def test_a_bad_turn_is_a_tool_error_with_its_rule_and_the_server_keeps_serving(root: Path) -> None:
    source = write_source(root)
    turns = example_turns(source)

    async def scenario() -> None:
        async with connect(root) as alice, connect(root) as bob:
            first, second = await join(alice, source, ALICE), await join(bob, source, BOB)
            duel, alice_id, bob_id = first["duel_id"], first["participant_id"], second["participant_id"]
            lock = await call(alice, "claim_lock", duel_id=duel, participant_id=alice_id)
            args = {"duel_id": duel, "participant_id": alice_id, "lease_token": lock["lease_token"]}
            await call(alice, "append_turn", **args, turn_markdown=turns[0])
            await call(alice, "release_lock", **args)
            path = Path(first["debate_path"])
            before = path.read_bytes()

            token = (await call(bob, "claim_lock", duel_id=duel, participant_id=bob_id))["lease_token"]
            args = {"duel_id": duel, "participant_id": bob_id, "lease_token": token}
            unmarked = turns[1].replace("(blocking)", "")
            refusal = await refused(bob, "append_turn", "DUEL_UNRESOLVED_MARKER", **args, turn_markdown=unmarked)
            assert refusal["kind"] == "refused" and refusal["exit_code"] == 1
            await refused(
                bob, "append_turn", "TOOLS_LEASE", **{**args, "lease_token": "forged"}, turn_markdown=turns[1]
            )
            await refused(bob, "status", "TOOLS_BAD_INPUT", duel_id="no-such-duel")
            # Arguments that do not fit the schema: one sentence naming the argument, no pydantic text or URL.
            wrong = await bob.call_tool("claim_lock", {"duel_id": duel, "participant_id": bob_id, "ttl_seconds": "x"})
            missing = await bob.call_tool("status", {})
            for result, argument in ((wrong, "ttl_seconds"), (missing, "duel_id")):
                text = result.content[0].text  # type: ignore[union-attr]
                assert result.is_error and argument in text and "pydantic" not in text and "http" not in text
                assert text.count("\n") == 0 and text.endswith("again.")
            assert path.read_bytes() == before

            # The same server process goes on: the corrected turn is accepted.
            appended = await call(bob, "append_turn", **args, turn_markdown=turns[1])
            assert appended["turn_number"] == 2 and appended["next_speaker"] == "alice"

    anyio.run(scenario)


def test_a_connection_cannot_act_as_the_other_participant(root: Path) -> None:
    source = write_source(root)
    turns = example_turns(source)

    async def scenario() -> None:
        async with connect(root) as alice, connect(root) as bob:
            first, second = await join(alice, source, ALICE), await join(bob, source, BOB)
            duel, bob_id = first["duel_id"], second["participant_id"]

            # bob's participant id is public (status lists it) but it is not alice's to use.
            await refused(alice, "claim_lock", "TOOLS_IDENTITY", duel_id=duel, participant_id=bob_id)
            assert (await call(bob, "status", duel_id=duel))["lock"] is None

            token = (await call(bob, "claim_lock", duel_id=duel, participant_id=bob_id))["lease_token"]
            forged = turns[1].replace("## Turn 2", "## Turn 1")  # a turn signed by bob, written by alice
            stolen = {"duel_id": duel, "participant_id": bob_id, "lease_token": token}
            await refused(alice, "append_turn", "TOOLS_IDENTITY", **stolen, turn_markdown=forged)
            await refused(alice, "refresh_lock", "TOOLS_IDENTITY", **stolen)
            await refused(alice, "release_lock", "TOOLS_IDENTITY", **stolen)
            # Nor can alice's connection rejoin under bob's name to get his id bound to it.
            impostor = await refused(
                alice,
                "join",
                "TOOLS_IDENTITY",
                target=str(source),
                participant_name="bob",
                harness="codex",
                model_id="gpt-5",
                run_id="run-x",
            )
            assert "alice" in impostor["error"]

            status = await call(bob, "status", duel_id=duel)
            assert status["lock"]["holder_participant_id"] == bob_id and status["participant_count"] == 2
            assert not Path(first["debate_path"]).exists()

    anyio.run(scenario)

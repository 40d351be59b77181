"""Contention and crashes: two agent processes share one duel; a writer killed between the artifact write
and the ledger commit leaves a turn that is adopted, never lost or doubled."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tools_helpers import ALICE, BOB, MOOT, Cli, example_turns, start_duel, write_source

from moot.detect import check_path
from moot.protocols.duel.record import append_turn
from moot.protocols.duel.text import duel_config, parse_turn, table_participant
from moot.tools import open_workspace

AGENT = Path(__file__).with_name("duel_agent.py")


def test_two_agent_processes_finish_a_duel_on_their_own(cli: Cli, tmp_path: Path) -> None:
    source = write_source(cli.root)
    turns = example_turns(source)
    agents = []
    for who, numbers in ((ALICE, (1, 3, 5)), (BOB, (2, 4, 6))):
        folder = tmp_path / who["name"]
        folder.mkdir()
        for number in numbers:
            (folder / f"{number}.md").write_text(turns[number - 1], encoding="utf-8")
        args = [str(MOOT), str(cli.root), str(source), who["name"], who["harness"], who["model"], str(folder)]
        agents.append(
            subprocess.Popen(
                [sys.executable, str(AGENT), *args], env=cli.environment(), stdout=subprocess.PIPE, text=True
            )
        )
    outputs = [agent.communicate(timeout=300)[0] for agent in agents]
    assert [agent.returncode for agent in agents] == [0, 0], outputs
    debate = next((cli.root / "debates").glob("*.md"))
    report = check_path(debate)
    assert report.exit_code == 0, report.violations
    assert report.summary is not None and report.summary.turns == 6
    assert report.summary.outcome is not None and report.summary.outcome.name == "ACCEPTED_CONSENSUS"
    assert any(json.loads(out.splitlines()[-1]).get("closed") for out in outputs)


CRASH = textwrap.dedent(
    """
    import os, sys
    from moot.protocols.duel import record
    from moot.tools import open_workspace
    from moot.protocols.duel.text import duel_config, parse_turn, table_participant
    from moot.tools.seats import UserKeyring

    root, duel_id, participant, token, fencing, turn = sys.argv[1:7]
    ws = open_workspace(root)
    found = ws.ledger.status(duel_id)
    config, table = duel_config(found.debate), [table_participant(p) for p in found.participants]
    path = ws.root / found.debate.artifact_path
    secret = UserKeyring().get(duel_id, participant)  # kept for this user when it joined
    with ws.ledger.guarded_write(duel_id, participant, token, int(fencing), participant_secret=secret):
        if not path.exists():
            record.create(path, config, table)
        record.append_turn(path, parse_turn(open(turn).read(), config, table, file=turn))
        os._exit(137)  # killed after the artifact write, before the ledger commit
    """
)


def crash_after_the_file_write(cli: Cli, duel_id: str, participant: str, lock: dict[str, object], turn: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CRASH, str(cli.root), duel_id, participant, str(lock["lease_token"]),
         str(lock["fencing_token"]), str(turn)],
        env=cli.environment(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 137, done.stderr


def test_a_turn_written_before_a_crash_is_adopted_by_the_retry(cli: Cli) -> None:
    duel = start_duel(cli)
    lock = duel.claim("alice").ok()
    crash_after_the_file_write(cli, duel.duel_id, duel.ids["alice"], lock, duel.write_turn(1))
    status = duel.status()
    assert status["turn_count"] == 0 and status["artifact"]["turns"] == 1  # on disk, not in the ledger

    retry = duel.append("alice", lock["lease_token"], duel.write_turn(1)).ok()
    assert retry["already_appended"] and retry["adopted_turns"] == [1] and retry["turn_number"] == 1
    assert duel.status()["turn_count"] == 1 and duel.debate_path.read_text().count("## Turn 1 ") == 1
    duel.release("alice", lock["lease_token"]).ok()


def test_a_peer_adopts_a_crashed_turn_after_the_lease_expires(cli: Cli) -> None:
    duel = start_duel(cli)
    lock = duel.claim("alice", "--ttl-seconds", "1").ok()
    crash_after_the_file_write(cli, duel.duel_id, duel.ids["alice"], lock, duel.write_turn(1))
    time.sleep(1.2)
    bob = duel.claim("bob").ok()
    appended = duel.append("bob", bob["lease_token"], duel.write_turn(2)).ok()
    assert appended["adopted_turns"] == [1] and appended["turn_number"] == 2 and not appended["already_appended"]
    assert duel.status()["turn_count"] == 2
    assert check_path(duel.debate_path).exit_code == 0


def test_more_than_one_unrecorded_turn_is_refused(cli: Cli) -> None:
    duel = start_duel(cli)
    lock = duel.claim("alice").ok()
    crash_after_the_file_write(cli, duel.duel_id, duel.ids["alice"], lock, duel.write_turn(1))
    # A second turn written outside moot (the artifact writer alone, no ledger).
    with open_workspace(cli.root) as ws:
        found = ws.ledger.status(duel.duel_id)
        config, table = duel_config(found.debate), [table_participant(p) for p in found.participants]
    append_turn(duel.debate_path, parse_turn(duel.turns[1], config, table, file="turn-2"))
    before = duel.artifact_bytes()
    duel.append("alice", lock["lease_token"], duel.write_turn(3)).refused("TOOLS_UNRECORDED_TURNS")
    assert duel.artifact_bytes() == before and duel.status()["turn_count"] == 0


def test_a_speech_a_crash_left_without_its_turn_json_is_finished_by_the_retry(cli: Cli) -> None:
    agenda = cli.root / "agenda.md"
    agenda.write_text("Cache?\n", encoding="utf-8")
    cli(
        "roundtable",
        "start",
        "--name",
        "m",
        "--speakers",
        "architect,reviewer",
        "--max-rounds",
        "2",
        "--agenda",
        str(agenda),
    ).ok()
    floor = cli("roundtable", "take-floor", "--name", "m", "--role", "architect").ok()
    speech = cli.root / "speech.md"
    speech.write_text("## Position\n\nPartition it.\n", encoding="utf-8")
    meeting = cli.root / ".roundtable" / "m"
    (meeting / "001_architect.md").write_text(speech.read_text(encoding="utf-8"), encoding="utf-8")  # the crash
    assert check_path(meeting).repairable
    done = cli(
        "roundtable", "speak", "--name", "m", "--role", "architect", "--lease-token", floor["lease_token"],
        "--file", str(speech), "--prompt-next", "Reviewer, go.",
    ).ok()  # fmt: skip
    assert done["repaired"] and done["already_committed"] and done["adopted_turns"] == [1]
    assert done["next_speaker"] == "reviewer" and done["prompt_for_speaker"] == "Reviewer, go."
    assert check_path(meeting).exit_code == 0
    assert sorted(p.name for p in meeting.glob("0*.md")) == ["001_architect.md"]

"""Seats with secrets through the CLI: a participant id is public (``status`` prints it), so only the caller
that joined — whose OS user keeps the seat's secret in its private state — can claim, write or rejoin as that
participant, while the seed's commands stay exactly as the skill writes them."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tools_helpers import ALICE, BOB, TOPIC, Cli, Result, example_turns, join, start_duel, write_source

import moot


def other_user(cli: Cli, name: str = "mallory") -> Cli:
    """The same work root and ledger, run with another user's private state (none of the duel's secrets)."""
    return Cli(cli.root, env={"XDG_STATE_HOME": str(cli.root.parent / f"state-{name}")})


def test_a_participant_id_read_from_status_cannot_claim_append_or_close_without_the_secret(cli: Cli) -> None:
    duel = start_duel(cli)
    mallory = other_user(cli)
    alice = mallory("duel", "status", "--duel-id", duel.duel_id).ok()["participants"][0]["participant_id"]
    assert alice == duel.ids["alice"]  # public

    refusal = mallory("duel", "claim-lock", "--duel-id", duel.duel_id, "--participant-id", alice).refused("TOOLS_SEAT")
    assert "--participant-secret" in refusal["error"] and "MOOT_PARTICIPANT_SECRET" in refusal["error"]
    assert duel.status()["lock"] is None

    # alice's own process claims; her token leaks (the seed passes it on the command line, which ps shows)
    token = duel.claim("alice").ok()["lease_token"]
    turn = duel.write_turn(1)
    stolen = ["--duel-id", duel.duel_id, "--participant-id", alice, "--lease-token", token]
    mallory("duel", "append", *stolen, "--file", str(turn)).refused("TOOLS_SEAT")
    mallory("duel", "refresh-lock", *stolen).refused("TOOLS_SEAT")
    mallory("duel", "release-lock", *stolen).refused("TOOLS_SEAT")
    mallory("duel", "release-lock", *stolen, "--close", "--outcome", "INVALIDATED", "--reason", "x").refused(
        "TOOLS_SEAT"
    )
    status = duel.status()
    assert status["turn_count"] == 0 and status["status"] != "closed" and duel.artifact_bytes() is None
    assert status["lock"]["holder_participant_id"] == alice

    # a guessed secret is refused too, and nothing changes
    mallory("duel", "append", *stolen, "--participant-secret", "guess", "--file", str(turn)).refused("TOOLS_SEAT")
    assert duel.append("alice", token, turn).ok()["turn_number"] == 1


def test_rejoining_under_a_taken_name_needs_the_secret(cli: Cli) -> None:
    source = write_source(cli.root)
    first = join(cli, source, ALICE).ok()
    mallory = other_user(cli)

    refusal = join(mallory, source, ALICE).refused("TOOLS_SEAT")
    assert "rejoin with the participant secret" in refusal["error"] and "another name" in refusal["error"]
    again = join(cli, source, ALICE).ok()  # the OS user that joined: its kept secret
    assert again["rejoined"] and again["participant_id"] == first["participant_id"]
    assert again["participant_secret"] is None  # shown once
    assert join(mallory, source, BOB).ok()["participant_count"] == 2  # a free seat is anyone's


def test_the_agent_that_joined_runs_the_seeds_commands_unchanged(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    source = write_source(root)
    # two agents, two OS users' private states; each runs the skill's commands as written, from the project
    agents = {name: Cli(root, env={"XDG_STATE_HOME": str(tmp_path / f"state-{name}")}) for name in ("alice", "bob")}
    joined = {}
    for who in (ALICE, BOB):
        joined[who["name"]] = agents[who["name"]](
            "duel", "join", "--target", str(source), "--topic", TOPIC, "--debate-dir", f"{root}/debates",
            "--participant-name", who["name"], "--harness", who["harness"], "--model-id", who["model"],
            "--run-id", f"run-{who['name']}",
        ).ok()  # fmt: skip
    duel_id = joined["alice"]["duel_id"]

    for name, result in joined.items():
        secret = result["participant_secret"]  # printed once, and kept for this user only
        assert isinstance(secret, str) and len(secret) >= 40
        seats = tmp_path / f"state-{name}" / "moot" / "seats"
        kept = [p for p in seats.iterdir() if not p.name.startswith(".")]
        assert [p.read_text(encoding="utf-8") for p in kept] == [secret]
        assert stat.S_IMODE(seats.stat().st_mode) == 0o700
        assert stat.S_IMODE(kept[0].stat().st_mode) == 0o600
        assert secret not in agents[name]("duel", "status", "--duel-id", duel_id).stdout

    turns = example_turns(source)
    for number in range(1, 7):
        name = "alice" if number % 2 else "bob"
        me = ["--duel-id", duel_id, "--participant-id", joined[name]["participant_id"]]
        agent = agents[name]
        token = agent("duel", "claim-lock", *me).ok()["lease_token"]
        agent("duel", "refresh-lock", *me, "--lease-token", token).ok()
        turn = tmp_path / f"turn-{number}.md"
        turn.write_text(turns[number - 1], encoding="utf-8")
        appended = agent("duel", "append", *me, "--lease-token", token, "--file", str(turn)).ok()
        if number < 6:
            agent("duel", "release-lock", *me, "--lease-token", token).ok()
    closed = agents["bob"](
        "duel", "release-lock", "--duel-id", duel_id, "--participant-id", joined["bob"]["participant_id"],
        "--lease-token", token, "--close", "--outcome", appended["terminal_outcome"],
    ).ok()  # fmt: skip
    assert closed["closed"] and closed["outcome"] == "ACCEPTED_CONSENSUS"


def test_a_rejoin_with_the_secret_works_after_the_agents_process_restarts(cli: Cli) -> None:
    source = write_source(cli.root)
    first = join(cli, source, ALICE).ok()
    join(cli, source, BOB).ok()
    # the agent comes back without its private state (a new container, another account): only the secret it
    # was shown
    restarted = other_user(cli, "restarted")
    join(restarted, source, ALICE).refused("TOOLS_SEAT")
    restarted.env["MOOT_PARTICIPANT_SECRET"] = first["participant_secret"]
    again = join(restarted, source, ALICE).ok()
    assert again["rejoined"] and again["participant_id"] == first["participant_id"]

    del restarted.env["MOOT_PARTICIPANT_SECRET"]  # kept now: the seed's next command passes only the id
    lock = restarted("duel", "claim-lock", "--duel-id", first["duel_id"], "--participant-id", first["participant_id"])
    assert lock.ok()["participant_id"] == first["participant_id"]


MINUTES = """# Minutes: cache

## Discussion Summary

Both roles reviewed the cache design.

## Final Consensus

Partition the cache per tenant.

## Unresolved Disagreements

None.

## Action Items

- architect: write the partitioning plan.
"""


def test_a_meeting_role_is_taken_and_the_minutes_written_only_by_the_agent_that_holds_the_seat(cli: Cli) -> None:
    agents = {name: other_user(cli, name) for name in ("moderator", "architect")}
    mallory = other_user(cli)
    agenda = cli.root / "agenda.md"
    agenda.write_text("Should the cache be shared across tenants?\n", encoding="utf-8")
    started = agents["moderator"](
        "roundtable", "start", "--name", "cache", "--speakers", "architect", "--max-rounds", "2",
        "--agenda", str(agenda),
    ).ok()  # fmt: skip

    speech = cli.root / "speech.md"
    shown = []
    for number in (1, 2):
        speech.write_text(f"Partition it ({number}).\n", encoding="utf-8")
        if number == 2:  # the role holds a seat now: its name alone no longer takes it
            mallory("roundtable", "take-floor", "--name", "cache", "--role", "architect").refused("TOOLS_SEAT")
        floor = agents["architect"]("roundtable", "take-floor", "--name", "cache", "--role", "architect").ok()
        shown.append(floor.get("participant_secret"))
        leaked = ["--name", "cache", "--role", "architect", "--lease-token", floor["lease_token"]]
        mallory("roundtable", "speak", *leaked, "--file", str(speech)).refused("TOOLS_SEAT")
        agents["architect"]("roundtable", "speak", *leaked, "--file", str(speech)).ok()

    mallory("roundtable", "take-floor", "--name", "cache", "--role", "moderator").refused("TOOLS_SEAT")
    floor = agents["moderator"]("roundtable", "take-floor", "--name", "cache", "--role", "moderator").ok()
    minutes = cli.root / "minutes.md"
    minutes.write_text(MINUTES, encoding="utf-8")
    leaked = ["--name", "cache", "--lease-token", floor["lease_token"], "--file", str(minutes)]
    mallory("roundtable", "minutes", *leaked).refused("TOOLS_SEAT")
    assert cli("roundtable", "status", "--name", "cache").ok()["status"] == "concluding"
    assert agents["moderator"]("roundtable", "minutes", *leaked).ok()["status"] == "closed"
    assert started["participant_secret"] and shown[0] and shown[1] is None  # each seat's secret, shown once


DIALOGUE_HEADER = """# Dialogue: API design
Started: 2026-01-31 14:00
Template: planning
Max rounds: 5

Participants:
  - proposer @ /home/dev/api
  - critic (partner)

---
"""
PROPOSER_1 = "## [proposer] Round 1 — 2026-01-31 14:05\n\nUse REST.\n\nStatus: AWAITING critic\n"
PROPOSER_2 = "## [proposer] Round 2 — 2026-01-31 14:15\n\nAnd cursors.\n\nStatus: AWAITING critic\n"
CRITIC_1 = "## [critic] Round 1 — 2026-01-31 14:09\n\nWhat about paging?\n\nStatus: AWAITING proposer\n"


def test_a_dialogue_role_claimed_once_is_claimed_and_written_only_with_its_secret(cli: Cli) -> None:
    record = cli.root / ".dialogues" / "api.md"
    record.parent.mkdir()
    record.write_text(DIALOGUE_HEADER, encoding="utf-8")
    agents = {name: other_user(cli, name) for name in ("proposer", "critic")}
    mallory = other_user(cli)
    dialogue = ["--file", ".dialogues/api.md"]

    def turn(role: str, text: str, token: str, agent: Cli) -> Result:
        path = cli.root / f"{role}.md"
        path.write_text(text, encoding="utf-8")
        return agent(
            "critique", "append", *dialogue, "--role", role, "--turn-file", str(path), "--lease-token", token
        )  # fmt: skip

    shown = []
    for role, text in (("proposer", PROPOSER_1), ("critic", CRITIC_1)):
        lock = agents[role]("critique", "claim", *dialogue, "--role", role).ok()
        shown.append(lock.get("participant_secret"))
        turn(role, text, lock["lease_token"], agents[role]).ok()
        agents[role]("critique", "release", *dialogue, "--role", role, "--lease-token", lock["lease_token"]).ok()

    mallory("critique", "claim", *dialogue, "--role", "proposer").refused("TOOLS_SEAT")
    lock = agents["proposer"]("critique", "claim", *dialogue, "--role", "proposer").ok()
    assert all(shown) and lock["participant_secret"] is None  # shown on a role's first claim only
    before = record.read_bytes()
    turn("proposer", PROPOSER_2, lock["lease_token"], mallory).refused("TOOLS_SEAT")
    mallory("critique", "release", *dialogue, "--role", "proposer", "--lease-token", lock["lease_token"]).refused(
        "TOOLS_SEAT"
    )
    assert record.read_bytes() == before
    assert turn("proposer", PROPOSER_2, lock["lease_token"], agents["proposer"]).ok()["turn_number"] == 3


@pytest.fixture
def second_user() -> Iterator[str]:
    """A second OS user, made for this test and removed after it."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd to create a second OS user")
    name = f"mootseat{os.getpid()}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True, timeout=60
    )
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False, timeout=60)


def test_another_os_user_cannot_use_a_seats_secret(second_user: str) -> None:
    shared = Path(tempfile.mkdtemp(prefix="moot-seats-"))  # outside the test's own private temp folders
    try:
        _another_user_is_refused(shared, second_user)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _another_user_is_refused(shared: Path, user: str) -> None:
    root = shared / "work"
    root.mkdir()
    source = write_source(root)
    # moot's own code, and its dependencies, on a path the other user can read (this interpreter may not be)
    path = os.pathsep.join([str(Path(moot.__file__).parents[1]), sysconfig.get_paths()["purelib"]])

    def moot_as(who: str | None, state: Path, *args: str) -> tuple[int, dict[str, object]]:
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": path, "HOME": str(shared), "XDG_STATE_HOME": str(state)}
        python = sys.executable if who is None else "/usr/bin/python3"
        done = subprocess.run(
            [python, "-s", "-m", "moot", *args],
            cwd=root,
            env=env,
            user=who,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.returncode, json.loads(done.stdout or "{}")

    mine = shared / "state-alice"
    ids = {}
    for who in (ALICE, BOB):
        code, joined = moot_as(
            None, shared / f"state-{who['name']}", "duel", "join", "--target", str(source), "--topic", TOPIC,
            "--participant-name", who["name"], "--harness", who["harness"], "--model-id", who["model"],
            "--run-id", "r",
        )  # fmt: skip
        assert code == 0, joined
        ids[who["name"]] = str(joined["participant_id"])
    duel_id = str(joined["duel_id"])
    for folder, _, files in os.walk(root):  # the work root and its ledger are shared; the private state is not
        os.chmod(folder, 0o777)
        for file in files:
            os.chmod(Path(folder) / file, 0o666)
    os.chmod(shared, 0o777)
    if subprocess.run(["/usr/bin/python3", "-s", "-c", "import moot.cli"], env={"PYTHONPATH": path}, user=user,
                      capture_output=True, timeout=120).returncode != 0:  # fmt: skip
        pytest.skip("no Python interpreter the second user may run has moot's dependencies")

    claim = ("duel", "claim-lock", "--duel-id", duel_id, "--participant-id", ids["alice"])
    for state in (shared / "state-mallory", mine):  # its own private state, then alice's (not readable to it)
        code, refused = moot_as(user, state, *claim)
        assert code == 1 and [r["rule"] for r in refused["rules"]] == ["TOOLS_SEAT"], refused
    kept = next(p for p in (mine / "moot" / "seats").iterdir() if not p.name.startswith("."))
    peek = subprocess.run(
        ["/usr/bin/python3", "-c", f"open({str(kept)!r}).read()"], user=user, capture_output=True, timeout=60
    )
    assert peek.returncode != 0 and b"PermissionError" in peek.stderr

    code, lock = moot_as(None, mine, *claim)  # alice's own user, with nothing but the seed's arguments
    assert code == 0 and lock["participant_id"] == ids["alice"], lock


# --- the seats moot keeps for a protocol whose tools keep none (a plugin's; see moot.tools.seats.kept_seat) ---


class _Keyring(dict[tuple[str, str], str]):
    """One OS user's kept secrets."""

    def get(self, debate_id: str, participant_id: str) -> str | None:  # type: ignore[override]
        return super().get((debate_id, participant_id))

    def put(self, debate_id: str, participant_id: str, secret: str) -> None:
        self[(debate_id, participant_id)] = secret


SEAT = ("/work/.estimates/q.md", "bo", "the estimate q.md")


def test_a_kept_seat_is_held_by_whoever_took_it_first_and_opens_to_its_secret(tmp_path: Path) -> None:
    from moot.errors import Refused
    from moot.tools.seats import RECORD_SEATS_DIR, kept_seat

    mine, theirs = _Keyring(), _Keyring()
    secret = kept_seat(tmp_path, SEAT, takes=True, claim="submit", keyring=mine, given=None)
    assert secret is not None and mine.get(SEAT[0], "bo") == secret
    assert kept_seat(tmp_path, SEAT, takes=True, claim="submit", keyring=mine, given=None) is None  # mine still
    assert secret not in "".join(p.read_text() for p in (tmp_path / RECORD_SEATS_DIR).rglob("*") if p.is_file())
    with pytest.raises(Refused, match="a seat someone else took") as taken:
        kept_seat(tmp_path, SEAT, takes=True, claim="submit", keyring=theirs, given=None)
    assert taken.value.payload()["rules"][0]["rule"] == "TOOLS_SEAT"
    with pytest.raises(Refused, match="a seat someone else took"):
        kept_seat(tmp_path, SEAT, takes=False, claim="submit", keyring=theirs, given="a guess")
    assert kept_seat(tmp_path, SEAT, takes=False, claim="submit", keyring=theirs, given=secret) is None
    with pytest.raises(Refused, match=r"'cy' in the estimate q\.md is not a seat you took; call submit as yourself"):
        kept_seat(tmp_path, (SEAT[0], "cy", SEAT[2]), takes=False, claim="submit", keyring=mine, given=None)


def test_a_seat_file_moot_cannot_read_as_its_own_keeps_the_seat_closed(tmp_path: Path) -> None:
    from moot.errors import Refused
    from moot.tools.seats import kept_seat

    mine = _Keyring()
    kept_seat(tmp_path, SEAT, takes=True, claim="submit", keyring=mine, given=None)
    (seat_file,) = [p for p in (tmp_path / ".moot" / "seats").rglob("*") if p.is_file()]
    planted = tmp_path / "planted"
    planted.write_text("anything\n")
    seat_file.unlink()
    seat_file.symlink_to(planted)  # a link is not followed: the seat is not free, and no secret opens it
    with pytest.raises(Refused, match="a seat someone else took"):
        kept_seat(tmp_path, SEAT, takes=True, claim="submit", keyring=_Keyring(), given=None)
    with pytest.raises(Refused, match="a seat someone else took"):
        kept_seat(tmp_path, SEAT, takes=True, claim="submit", keyring=mine, given=None)


def test_a_seat_opens_to_either_secret_and_keeps_a_given_one_and_a_refused_take_is_freed(tmp_path: Path) -> None:
    from moot.tools.seats import kept_seat, settle_taken

    mine, new_place = _Keyring(), _Keyring()
    secret = kept_seat(tmp_path, SEAT, takes=True, claim="submit", keyring=mine, given=None)
    assert secret is not None
    # a stale secret of another seat in the environment does not lock the holder out
    assert kept_seat(tmp_path, SEAT, takes=False, claim="submit", keyring=mine, given="stale") is None
    # given back once elsewhere, the secret is kept there: later calls need not give it again
    assert kept_seat(tmp_path, SEAT, takes=False, claim="submit", keyring=new_place, given=secret) is None
    assert kept_seat(tmp_path, SEAT, takes=False, claim="submit", keyring=new_place, given=None) is None

    cy = (SEAT[0], "cy", SEAT[2])
    taken = kept_seat(tmp_path, cy, takes=True, claim="submit", keyring=mine, given=None)
    assert taken is not None
    payload: dict[str, object] = {"ok": False}
    settle_taken(tmp_path, [(cy, taken)], payload, 1)  # the tool refused the call that took the seat
    assert "participant_secret" not in payload
    assert kept_seat(tmp_path, cy, takes=True, claim="submit", keyring=_Keyring(), given=None) is not None  # free


def test_a_fifo_planted_as_a_seat_file_keeps_the_seat_closed_and_does_not_hang(tmp_path: Path) -> None:
    from moot.errors import Refused
    from moot.tools.seats import RECORD_SEATS_DIR, kept_seat

    kept_seat(tmp_path, SEAT, takes=True, claim="submit", keyring=_Keyring(), given=None)
    (seat_file,) = [p for p in (tmp_path / RECORD_SEATS_DIR).rglob("*") if p.is_file()]
    seat_file.unlink()
    os.mkfifo(seat_file)
    with pytest.raises(Refused, match="a seat someone else took"):
        kept_seat(tmp_path, SEAT, takes=True, claim="submit", keyring=_Keyring(), given="x" * 43)

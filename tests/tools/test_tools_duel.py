"""Two outside agents run a Socratic duel through the installed ``moot`` CLI only: join, claim-lock,
append, release-lock; every way to break the rules is refused with exit 1 and leaves the artifact alone."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tools_helpers import ALICE, BOB, TOPIC, Cli, Duel, join, start_duel, write_source

from moot.detect import check_path

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend_cli(request: pytest.FixtureRequest, root: Path) -> Cli:
    if request.param == "sqlite":
        return Cli(root)
    schema = request.getfixturevalue("postgres_schema")
    return Cli(root, env={"MOOT_DATABASE_URL": schema.url})


def test_two_agents_complete_a_six_turn_duel(backend_cli: Cli) -> None:
    duel = start_duel(backend_cli)
    assert duel.debate_path.parent == backend_cli.root / "debates"
    assert not duel.debate_path.exists()  # created by the first lease holder's append, not by join
    for number in range(1, 7):
        me, peer = ("alice", "bob") if number % 2 else ("bob", "alice")
        lock = duel.claim(me).ok()
        assert lock["fencing_token"] == number and lock["next_step"] == "debating"
        if number == 1:
            held = duel.claim(peer).refused("TOOLS_LOCK_HELD")
            assert held["acquired"] is False and held["holder_participant_id"] == duel.ids[me]
            assert held["retry_after_seconds"] >= 1
        appended = duel.append(me, lock["lease_token"], duel.write_turn(number)).ok()
        assert appended["turn_number"] == number and appended["turn_count"] == number
        assert appended["artifact_created"] is (number == 1)
        if number < 6:
            assert appended["terminal_outcome"] is None and appended["next_speaker"] == peer
            assert duel.release(me, lock["lease_token"]).ok()["closed"] is False
    assert appended["terminal_outcome"] == "ACCEPTED_CONSENSUS" and appended["next_step"] == "closing"
    closed = duel.release("bob", lock["lease_token"], "--close", "--outcome", "ACCEPTED_CONSENSUS").ok()
    assert closed["closed"] is True and closed["next_step"] == "completed"

    status = duel.status()
    assert status["status"] == "closed" and status["outcome"] == "ACCEPTED_CONSENSUS"
    assert status["turn_count"] == 6 and status["lock"] is None
    assert status["artifact"]["valid"] and status["artifact"]["turns"] == 6
    report = check_path(duel.debate_path)
    assert report.exit_code == 0, report.violations
    assert report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "ACCEPTED_CONSENSUS"
    text = duel.debate_path.read_text(encoding="utf-8")
    assert "**Outcome**: ACCEPTED_CONSENSUS" in text and "| bob | codex | gpt-5 |" in text
    # Closed means closed: no more locks.
    duel.claim("alice").refused("TOOLS_DEBATE_CLOSED")


def test_refused_writes_leave_the_artifact_and_the_ledger_unchanged(cli: Cli) -> None:
    duel = start_duel(cli)
    lock = duel.claim("alice").ok()
    duel.append("alice", lock["lease_token"], duel.write_turn(1)).ok()
    duel.release("alice", lock["lease_token"]).ok()
    before = duel.artifact_bytes()

    def unchanged() -> None:
        assert duel.artifact_bytes() == before
        assert duel.status()["turn_count"] == 1

    bob = duel.claim("bob").ok()["lease_token"]
    # A bad turn: the unresolved item has no (blocking)/(non-blocking) marker; located in the turn file.
    bad = duel.turns[1].replace("(blocking)", "")
    refusal = duel.append("bob", bob, duel.write_turn(2, bad)).refused("DUEL_UNRESOLVED_MARKER")
    located = next(r for r in refusal["rules"] if r["rule"] == "DUEL_UNRESOLVED_MARKER")
    turn_file = cli.root / "turn-2.md"
    # Located in the turn file, below its heading (the artifact parser places marker problems near the heading).
    heading = next(
        i for i, line in enumerate(turn_file.read_text().splitlines(), start=1) if line.startswith("## Turn")
    )
    assert located["file"] == str(turn_file) and heading <= located["line"] <= len(bad.splitlines())
    unchanged()
    # An empty section is a protocol rule, refused the same way.
    empty = (
        duel.turns[1].split("**Agreements**")[0]
        + "**Agreements**\n\n**Novel Argument**"
        + duel.turns[1].split("**Novel Argument**")[1]
    )
    section = duel.append("bob", bob, duel.write_turn(2, empty)).refused("DUEL_SECTION_EMPTY")
    assert {r["file"] for r in section["rules"]} == {str(turn_file)} and section["rules"][0]["turn"] == 2
    unchanged()
    # Out of turn: alice writes (with the only token there is) while bob holds the lock.
    as_alice = duel.turns[1].replace(
        "## Turn 2 — bob (codex / gpt-5)", "## Turn 2 — alice (claude-code / claude-opus-4)"
    )
    duel.append("alice", bob, duel.write_turn(2, as_alice)).refused("TOOLS_LEASE")
    unchanged()
    # Bob cannot sign as alice, even with his own lease.
    signed_alice = duel.turns[1].replace("bob (codex / gpt-5)", "alice (claude-code / claude-opus-4)")
    duel.append("bob", bob, duel.write_turn(2, signed_alice)).refused("TOOLS_IDENTITY")
    unchanged()
    # A close without a token, with a wrong token, or with an outcome the turns do not reach.
    assert duel.release("bob", None, "--close", "--outcome", "DISSENT").refused("TOOLS_LEASE")["closed"] is False
    duel.release("bob", "not-the-token", "--close", "--outcome", "DISSENT").refused("TOOLS_LEASE")
    inconsistent = duel.release("bob", bob, "--close", "--outcome", "ACCEPTED_CONSENSUS")
    assert inconsistent.refused("DUEL_CONCLUSION_INCONSISTENT")["closed"] is False
    duel.release("bob", bob, "--close", "--outcome", "TIMEOUT").refused("TOOLS_PEER_PRESENT")
    unchanged()
    duel.release("bob", bob).ok()
    # Alice takes the lock again and tries a second turn in a row.
    alice = duel.claim("alice").ok()["lease_token"]
    duel.append("alice", alice, duel.write_turn(2, as_alice)).refused("DUEL_ALTERNATION")
    unchanged()
    duel.release("alice", alice).ok()
    # Someone edits accepted turn 1 in the artifact: bob's next append is refused and changes nothing.
    tampered = before.replace(b"per-tenant floor before rollout", b"per-tenant floor after rollout")
    assert tampered != before
    duel.debate_path.write_bytes(tampered)
    bob = duel.claim("bob").ok()["lease_token"]
    refusal = duel.append("bob", bob, duel.write_turn(2)).refused("PRIOR_TURN_MODIFIED")
    assert "turn 1" in refusal["error"].lower()
    assert duel.artifact_bytes() == tampered and duel.status()["turn_count"] == 1
    # The damage is a reason to invalidate the duel.
    closed = duel.release("bob", bob, "--close", "--outcome", "INVALIDATED").ok()
    assert closed["next_step"] == "invalidated"
    assert "**Outcome**: INVALIDATED" in duel.debate_path.read_text(encoding="utf-8")


def test_status_never_shows_a_token_and_a_third_participant_is_refused(cli: Cli) -> None:
    duel = start_duel(cli)
    full = join(cli, write_source(cli.root), {"name": "carol", "harness": "codex", "model": "m"})
    full.refused("TOOLS_DEBATE_FULL")
    assert "alice" in full.data["error"] and "bob" in full.data["error"]
    # The same name rejoining gets its participant back.
    again = join(cli, write_source(cli.root), ALICE).ok()
    assert again["rejoined"] and again["participant_id"] == duel.ids["alice"]
    lock = duel.claim("alice").ok()
    status = cli("duel", "status", "--duel-id", duel.duel_id)
    assert lock["lease_token"] not in status.stdout and "lease_token" not in status.stdout
    assert status.data["lock"]["holder_participant_id"] == duel.ids["alice"]
    assert status.data["participant_count"] == 2
    refreshed = cli(
        "duel", "refresh-lock", "--duel-id", duel.duel_id, "--participant-id", duel.ids["alice"],
        "--lease-token", lock["lease_token"],
    ).ok()  # fmt: skip
    assert refreshed["fencing_token"] == lock["fencing_token"] and refreshed["lease_token"] == lock["lease_token"]
    assert lock["lease_token"] not in cli("duel", "status", "--duel-id", duel.duel_id).stdout


def test_an_expired_lease_is_taken_over_and_its_holder_can_no_longer_write(cli: Cli) -> None:
    duel = start_duel(cli)
    stale = duel.claim("alice", "--ttl-seconds", "1").ok()
    time.sleep(1.2)
    taken = duel.claim("bob").ok()
    assert taken["fencing_token"] == stale["fencing_token"] + 1
    refusal = duel.append("alice", stale["lease_token"], duel.write_turn(1)).refused("TOOLS_LEASE")
    assert "claim the lock again" in refusal["error"]
    assert duel.artifact_bytes() is None  # not even created
    cli(
        "duel", "refresh-lock", "--duel-id", duel.duel_id, "--participant-id", duel.ids["alice"],
        "--lease-token", stale["lease_token"],
    ).refused("TOOLS_LEASE")  # fmt: skip
    # The fencing number is checked too: the new holder with a stale number is refused.
    first = duel.write_turn(1).read_text().replace("alice (claude-code / claude-opus-4)", "bob (codex / gpt-5)")
    turn = cli.root / "bob-1.md"
    turn.write_text(first, encoding="utf-8")
    cli(
        "duel", "append", "--duel-id", duel.duel_id, "--participant-id", duel.ids["bob"], "--lease-token",
        taken["lease_token"], "--fencing-token", str(stale["fencing_token"]), "--file", str(turn),
    ).refused("TOOLS_LEASE")  # fmt: skip
    assert duel.artifact_bytes() is None


def test_timeout_needs_the_bounded_wait_and_the_post_claim_recheck(cli: Cli) -> None:
    source = write_source(cli.root)
    alone = join(cli, source, ALICE).ok()
    assert alone["next_step"] == "waiting_for_participant"
    duel = Duel(cli, alone["duel_id"], {"alice": alone["participant_id"]}, Path(alone["debate_path"]), [])
    waiting = duel.claim("alice").refused("TOOLS_WAITING_FOR_PARTICIPANT")
    assert waiting["next_step"] == "waiting_for_participant" and waiting["retry_after_seconds"] == 30
    lock = duel.claim("alice", "--for-timeout").ok()
    assert lock["participant_count"] == 1 and lock["next_step"] == "closing"
    closed = duel.release("alice", lock["lease_token"], "--close", "--outcome", "TIMEOUT").ok()
    assert closed["closed"] is True
    report = check_path(duel.debate_path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "TIMEOUT"

    # A peer that joins during the wait turns the timeout claim back into a duel.
    other = cli.root / "other.md"
    other.write_text("# Other\n", encoding="utf-8")
    first = join(cli, other, ALICE, topic="Other topic").ok()
    join(cli, other, BOB, topic="Other topic").ok()
    rechecked = cli(
        "duel",
        "claim-lock",
        "--duel-id",
        first["duel_id"],
        "--participant-id",
        first["participant_id"],
        "--for-timeout",
    ).ok()
    assert rechecked["participant_count"] == 2 and rechecked["next_step"] == "debating"


def test_join_keeps_outside_names_inside_the_work_root(cli: Cli, tmp_path: Path) -> None:
    source = write_source(cli.root)
    for topic in ("../../etc/passwd", "/etc/passwd", "..", "a/../../b"):
        joined = join(cli, source, ALICE, topic=topic).ok()
        path = Path(joined["debate_path"])
        assert path.parent == cli.root / "debates" and ".." not in path.name and "/" not in joined["topic_slug"]
    join(cli, source, {"name": "eve\nmallory", "harness": "h", "model": "m"}).refused("TOOLS_UNSAFE_NAME", code=2)
    join(cli, source, {"name": "eve (x)", "harness": "h/x", "model": "m"}).refused("TOOLS_UNSAFE_NAME", code=2)


def test_symlinks_at_artifact_paths_are_refused(cli: Cli, tmp_path: Path) -> None:
    duel = start_duel(cli)
    outside = tmp_path / "outside.md"
    outside.write_text("precious\n", encoding="utf-8")
    duel.debate_path.parent.mkdir(parents=True, exist_ok=True)
    duel.debate_path.symlink_to(outside)
    lock = duel.claim("alice").ok()
    duel.append("alice", lock["lease_token"], duel.write_turn(1)).refused("FILE_SYMLINK", code=2)
    assert outside.read_text(encoding="utf-8") == "precious\n"
    assert duel.status()["turn_count"] == 0

    other = tmp_path / "other-root"
    other.mkdir()
    (other / "debates").symlink_to(tmp_path)
    join(Cli(other), write_source(other), ALICE).refused("FILE_SYMLINK", code=2)


def test_the_seeds_debate_dir_sets_the_work_root(cli: Cli, tmp_path: Path) -> None:
    source = write_source(cli.root)
    elsewhere = Cli(tmp_path)  # the agent runs from another directory, as the seed allows
    joined = elsewhere(
        "duel", "join", "--target", str(source), "--debate-dir", str(cli.root / "debates"), "--participant-name",
        "alice", "--harness", "codex", "--run-id", "r1",
    ).ok()  # fmt: skip
    assert joined["topic"] == TOPIC  # inferred from the source's first heading
    assert Path(joined["debate_path"]).parent == cli.root / "debates"
    assert (cli.root / ".moot" / "moot.db").exists() and not (tmp_path / ".moot").exists()
    status = Cli(tmp_path, env={"MOOT_ROOT": str(cli.root)})("duel", "status", "--duel-id", joined["duel_id"]).ok()
    assert status["participant_count"] == 1

"""``moot duel wait``: an agent waits for its turn with one command instead of polling status, and learns why the
wait ended (your_turn, ended, timed_out); status says who may write Turn 1 and what the loser of that race gets;
``claim-lock --export`` puts the lease token into the shell without parsing JSON."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tools_helpers import ALICE, BOB, MOOT, Cli, Duel, Result, example_turns, start_duel, write_source

from moot.tools.waiting import MAX_WAIT_SECONDS

AGENT = Path(__file__).with_name("duel_skill_agent.py")
SKILL = "claude-code/skills/moot-duel/SKILL.md"
AGENTS = "codex/AGENTS.md"


def wait(duel: Duel, who: str, seconds: float) -> Result:
    return duel.cli(
        "duel", "wait", "--duel-id", duel.duel_id, "--participant-id", duel.ids[who], "--timeout-seconds", str(seconds)
    )  # fmt: skip


def turn(duel: Duel, who: str, number: int) -> dict[str, Any]:
    """``who`` claims the lock, writes turn ``number`` and releases (closing at an outcome)."""
    token = duel.claim(who).ok()["lease_token"]
    appended = duel.append(who, token, duel.write_turn(number)).ok()
    extra = ("--close", "--outcome", appended["terminal_outcome"]) if appended["terminal_outcome"] else ()
    duel.release(who, token, *extra).ok()
    return appended


def test_before_turn_one_either_may_write_and_status_says_what_the_loser_gets(cli: Cli) -> None:
    duel = start_duel(cli)
    before = duel.status()
    assert before["may_write"] == ["alice", "bob"]
    assert "Nobody has written Turn 1" in before["whose_turn"] and "TOOLS_LOCK_HELD" in before["whose_turn"]
    # Both find it their turn at once.
    for who in ("alice", "bob"):
        started = time.monotonic()
        assert wait(duel, who, 30).ok()["waited"] == "your_turn"
        assert time.monotonic() - started < 10
    # The race: bob claims first; alice gets what the sentence promised.
    token = duel.claim("bob").ok()["lease_token"]
    lost = duel.claim("alice").refused("TOOLS_LOCK_HELD")
    assert lost["retry_after_seconds"] > 0
    assert duel.status()["may_write"] == ["alice", "bob"]  # still nobody wrote Turn 1, but bob holds the lock
    assert wait(duel, "alice", 1).ok()["waited"] == "timed_out"  # bob holds the lock
    bobs_first = duel.turns[0].replace("alice (claude-code / claude-opus-4)", "bob (codex / gpt-5)")
    duel.append("bob", token, duel.write_turn(1, bobs_first)).ok()
    duel.release("bob", token).ok()
    # The loser's prepared Turn 1 is refused; the status names it as the next writer.
    after = duel.status()
    assert after["may_write"] == ["alice"] and "alice's turn (Turn 2)" in after["whose_turn"]
    assert wait(duel, "alice", 30).ok()["waited"] == "your_turn"
    token = duel.claim("alice").ok()["lease_token"]
    alices_first = duel.turns[0]
    duel.append("alice", token, duel.write_turn(1, alices_first)).refused("DUEL_TURN_NUMBER")


def test_wait_returns_when_the_peer_appends_from_another_process(cli: Cli) -> None:
    duel = start_duel(cli)
    token = duel.claim("alice").ok()["lease_token"]  # alice holds the lock: not bob's turn yet
    started = time.monotonic()
    waiting = subprocess.Popen(
        [str(MOOT), "duel", "wait", "--duel-id", duel.duel_id, "--participant-id", duel.ids["bob"],
         "--timeout-seconds", "60"],
        cwd=cli.root, env=cli.environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(2.0)
    assert waiting.poll() is None, "wait returned while the peer still held the lock"
    duel.append("alice", token, duel.write_turn(1)).ok()
    duel.release("alice", token).ok()
    released = time.monotonic()
    out, err = waiting.communicate(timeout=60)
    answered = time.monotonic()
    assert waiting.returncode == 0, err
    data = json.loads(out)
    assert data["waited"] == "your_turn"
    assert data["artifact"]["turns"] == 1 and data["may_write"] == ["bob"]
    assert data["waited_seconds"] >= 2.0
    assert answered - released < 10  # it noticed the release, well before its 60 s timeout
    assert answered - started < 30


def test_wait_times_out_with_the_documented_result_and_the_cap_is_enforced(cli: Cli) -> None:
    duel = start_duel(cli)
    turn(duel, "alice", 1)
    started = time.monotonic()
    data = wait(duel, "alice", 1.5).ok()  # bob's turn: alice waits in vain
    assert data["waited"] == "timed_out" and data["waited_seconds"] >= 1.5
    assert 1.5 <= time.monotonic() - started < 15
    assert data["may_write"] == ["bob"] and data["next_step"] == "debating"
    assert wait(duel, "alice", 0).ok()["waited"] == "timed_out"  # 0 answers at once
    too_long = wait(duel, "alice", MAX_WAIT_SECONDS + 1)
    assert too_long.code == 2 and "--timeout-seconds" in too_long.data["error"]


def test_wait_says_ended_once_the_duel_is_closed(cli: Cli) -> None:
    duel = start_duel(cli)
    for number in range(1, 7):
        turn(duel, "alice" if number % 2 else "bob", number)
    for who in ("alice", "bob"):
        data = wait(duel, who, 30).ok()
        assert data["waited"] == "ended" and data["next_step"] == "completed" and data["may_write"] == []


def test_claim_lock_export_puts_the_token_into_the_shell(cli: Cli) -> None:
    duel = start_duel(cli)
    turn_file = duel.write_turn(1)
    ids = f"--duel-id {duel.duel_id} --participant-id {duel.ids['alice']}"
    script = (
        f'lock=$("{MOOT}" duel claim-lock {ids} --export) && eval "$lock" && '
        f'"{MOOT}" duel append {ids} --file {turn_file} && "{MOOT}" duel release-lock {ids}'
    )
    done = subprocess.run(["sh", "-c", script], cwd=cli.root, env=cli.environment(), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert duel.status()["artifact"]["turns"] == 1 and duel.status()["lock"] is None
    # Refused: nothing for the shell to evaluate, the sentence on stderr, the exit code of the refusal.
    token = duel.claim("bob").ok()["lease_token"]
    assert token
    refused = duel.claim("alice", "--export")
    assert refused.code == 1 and refused.stdout == "" and "is held by participant" in refused.stderr
    exported = duel.cli("duel", "refresh-lock", "--duel-id", duel.duel_id, "--participant-id", duel.ids["bob"],
                        "--lease-token", token, "--export")  # fmt: skip
    assert exported.code == 0 and exported.stdout == f"export MOOT_LEASE_TOKEN={token}\n"


def test_wait_has_its_documented_arguments(cli: Cli, root: Path) -> None:
    shown = cli("duel", "wait", "--help")
    assert shown.code == 0
    for flag in ("--duel-id", "--participant-id", "--timeout-seconds"):
        assert flag in shown.stdout
    assert "600" in shown.stdout


def test_two_agents_following_the_guides_command_line_flow_complete_a_duel(cli: Cli, tmp_path: Path) -> None:
    """Two processes type the guide's lines (wait, claim-lock --export, read, append, release-lock) into their
    shells, with no polling and no token parsing of their own, and finish the six-turn duel."""
    from moot import hosts

    source = write_source(cli.root)
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps(example_turns(source)), encoding="utf-8")
    generated = hosts.files()
    base = cli.environment()
    env = {**base, "MOOT_ROOT": str(cli.root), "PATH": f"{MOOT.parent}:{base.get('PATH', '')}"}
    agents = {}
    started = time.monotonic()
    for name, guide, model in (("alice", SKILL, ALICE["model"]), ("bob", AGENTS, BOB["model"])):
        home = tmp_path / name
        home.mkdir()
        (home / "guide.md").write_text(generated[guide], encoding="utf-8")
        agents[name] = subprocess.Popen(
            [sys.executable, str(AGENT), "guide.md", str(source), name, model, str(turns)],
            cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    reports = {}
    for name, agent in agents.items():
        out, err = agent.communicate(timeout=150)
        assert agent.returncode == 0, f"{name}: {out}{err}"
        reports[name] = json.loads(out.strip().splitlines()[-1])
    took = time.monotonic() - started
    assert sorted(r["turns"] for r in reports.values()) == [3, 3]
    assert all(r["waits"] <= 6 for r in reports.values()), reports  # one wait per turn of the peer, no polling
    assert reports["alice"]["duel_id"] == reports["bob"]["duel_id"]
    data = cli("duel", "status", "--duel-id", reports["alice"]["duel_id"]).ok()
    assert data["status"] == "closed" and data["outcome"] == "ACCEPTED_CONSENSUS" and data["artifact"]["turns"] == 6
    assert cli("check", data["debate_path"]).code == 0
    print(f"two agents finished a six-turn duel through the guide's flow in {took:.1f} s: {reports}")


def test_a_process_holds_a_bounded_number_of_waits_and_refuses_one_more_in_one_sentence() -> None:
    import threading

    from moot.errors import Unavailable
    from moot.tools.waiting import MAX_WAITING, wait_for

    release = threading.Event()

    def hold() -> None:
        wait_for(lambda: ("ended", None) if release.is_set() else (None, None), release.is_set, 30, poll=0.05)

    holders = [threading.Thread(target=hold) for _ in range(MAX_WAITING)]
    for holder in holders:
        holder.start()
    try:
        time.sleep(0.5)  # every holder is inside its wait
        with pytest.raises(Unavailable, match=f"already holds {MAX_WAITING} waits"):
            wait_for(lambda: (None, None), lambda: 0, 1)
    finally:
        release.set()
        for holder in holders:
            holder.join()
    assert wait_for(lambda: ("ended", None), lambda: 0, 1)[0] == "ended"  # the slots are given back

"""One duel across hosts: two work roots in separate temporary directories (separate "disks"), each with its
own copy of the source, sharing one PostgreSQL ledger, driven through the installed ``moot`` as two agents'
processes would drive it. Both hosts' records must come out byte-identical and pass ``moot check``, and a
SIGKILL in the middle of an append must neither lose nor duplicate a turn on either host.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tools_helpers import ALICE, BOB, MOOT, SOURCE_TEXT, Cli, example_turns, join, write_source


class Host:
    """One machine: its own work root, its own copy of the source, the shared ledger's URL."""

    def __init__(self, base: Path, url: str) -> None:
        self.root = base / "work"
        self.root.mkdir(parents=True)
        self.source = write_source(self.root)
        self.cli = Cli(self.root, env={"MOOT_DATABASE_URL": url})

    def record(self, joined: dict[str, Any]) -> Path:
        return Path(joined["debate_path"])

    def turn_file(self, number: int, text: str) -> Path:
        path = self.root.parent / f"turn-{number}.md"
        path.write_text(text, encoding="utf-8")
        return path

    def append_args(self, duel_id: str, participant: str, token: str, turn: Path) -> list[str]:
        return [
            "duel", "append", "--duel-id", duel_id, "--participant-id", participant, "--lease-token", token,
            "--file", str(turn),
        ]  # fmt: skip


@pytest.fixture
def hosts(tmp_path: Path, postgres_schema: Any) -> tuple[Host, Host]:
    return Host(tmp_path / "host-a", postgres_schema.url), Host(tmp_path / "host-b", postgres_schema.url)


def _claim(host: Host, duel_id: str, participant: str) -> dict[str, Any]:
    return host.cli("duel", "claim-lock", "--duel-id", duel_id, "--participant-id", participant).ok()


def _turn_headings(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("## Turn ")]


def _check(host: Host, path: Path) -> dict[str, Any]:
    done = host.cli("check", str(path), "--json")
    assert done.code == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    return report


def test_two_hosts_meet_in_one_duel_and_write_the_same_record(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    first = join(a.cli, a.source, ALICE).ok()
    second = join(b.cli, b.source, BOB).ok()
    assert second["duel_id"] == first["duel_id"] and second["participant_count"] == 2
    assert (first["source_path"], second["source_path"]) == (str(a.source), str(b.source))  # each host's copy
    duel_id, ids = first["duel_id"], {"alice": first["participant_id"], "bob": second["participant_id"]}
    texts = {"alice": example_turns(a.source), "bob": example_turns(b.source)}  # each cites its own copy
    record = {"alice": a.record(first), "bob": b.record(second)}
    for number in range(1, 7):
        me, host = ("alice", a) if number % 2 else ("bob", b)
        lock = _claim(host, duel_id, ids[me])
        if number > 1:  # the holder's record was brought up to date with the peer's turn by the claim
            assert len(_turn_headings(record[me])) == number - 1
        appended = host.cli(
            *host.append_args(duel_id, ids[me], lock["lease_token"], host.turn_file(number, texts[me][number - 1]))
        ).ok()
        assert appended["turn_count"] == number
        if number < 6:
            host.cli(
                "duel", "release-lock", "--duel-id", duel_id, "--participant-id", ids[me],
                "--lease-token", lock["lease_token"],
            ).ok()  # fmt: skip
    assert appended["terminal_outcome"] == "ACCEPTED_CONSENSUS"
    b.cli(
        "duel", "release-lock", "--duel-id", duel_id, "--participant-id", ids["bob"], "--lease-token",
        lock["lease_token"], "--close", "--outcome", "ACCEPTED_CONSENSUS",
    ).ok()  # fmt: skip
    status = a.cli("duel", "status", "--duel-id", duel_id).ok()  # host A's record catches up with the close
    assert status["status"] == "closed" and status["artifact"]["terminal_outcome"] == "ACCEPTED_CONSENSUS"

    assert record["alice"].read_bytes() == record["bob"].read_bytes()
    for host, path in ((a, record["alice"]), (b, record["bob"])):
        report = _check(host, path)
        assert report["errors"] == 0 and report["state"]["outcome"]["name"] == "ACCEPTED_CONSENSUS"
        assert report["state"]["turns"] == 6
    assert "`../cache-design.md`" in record["alice"].read_text(encoding="utf-8")  # no host's absolute path


def test_a_host_with_a_different_copy_of_the_source_is_refused_with_the_difference(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    first = join(a.cli, a.source, ALICE).ok()
    b.source.write_text(SOURCE_TEXT.replace("One global LRU list", "Two LRU lists"), encoding="utf-8")

    refused = join(b.cli, b.source, BOB).refused("TOOLS_SOURCE_MISMATCH")

    assert "line 42" in refused["error"] and "Two LRU lists" in refused["error"]
    assert "One global LRU list" in refused["error"]
    assert a.cli("duel", "status", "--duel-id", first["duel_id"]).ok()["participant_count"] == 1  # nobody seated
    by_id = b.cli(
        "duel", "join", "--duel-id", first["duel_id"], "--target", str(b.source), "--participant-name", "bob",
        "--harness", "codex", "--model-id", "gpt-5", "--run-id", "r",
    )  # fmt: skip
    by_id.refused("TOOLS_SOURCE_MISMATCH")


def test_joining_by_duel_id_needs_no_copy_of_the_source(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    first = join(a.cli, a.source, ALICE).ok()
    b.source.unlink()

    joined = b.cli(
        "duel", "join", "--duel-id", first["duel_id"], "--participant-name", "bob", "--harness", "codex",
        "--model-id", "gpt-5", "--run-id", "r",
    ).ok()  # fmt: skip

    assert joined["duel_id"] == first["duel_id"] and joined["participant_count"] == 2


def test_a_sigkill_mid_append_loses_and_duplicates_no_turn_on_either_host(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    first = join(a.cli, a.source, ALICE).ok()
    second = join(b.cli, b.source, BOB).ok()
    duel_id, ids = first["duel_id"], {"alice": first["participant_id"], "bob": second["participant_id"]}
    texts = {"alice": example_turns(a.source), "bob": example_turns(b.source)}
    record = {"alice": a.record(first), "bob": b.record(second)}
    kills = 0
    whole = 0.0  # how long an append takes on this machine, measured on turn 1
    for number in range(1, 7):
        me, host = ("alice", a) if number % 2 else ("bob", b)
        lock = _claim(host, duel_id, ids[me])
        args = host.append_args(duel_id, ids[me], lock["lease_token"], host.turn_file(number, texts[me][number - 1]))
        if number == 1:
            started = time.perf_counter()
            host.cli(*args).ok()
            whole = time.perf_counter() - started
        # Kill the appending process late in its run, a little later each turn: most of an append is the
        # interpreter starting, and the ledger commit and the record write come at its very end.
        process = subprocess.Popen([str(MOOT), *args], cwd=host.root, env=host.cli.environment())
        time.sleep(whole * (0.55 + 0.09 * number))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait(timeout=120)
        ledger_count = host.cli("duel", "status", "--duel-id", duel_id).ok()["turn_count"]
        assert ledger_count in (number - 1, number)  # all of the turn or none of it
        retried = host.cli(*args).ok()  # the agent sends the same turn again
        assert retried["turn_count"] == number
        assert retried["already_appended"] is (ledger_count == number)
        host.cli(
            "duel", "release-lock", "--duel-id", duel_id, "--participant-id", ids[me], "--lease-token",
            lock["lease_token"],
            *(["--close", "--outcome", "ACCEPTED_CONSENSUS"] if number == 6 else []),
        ).ok()  # fmt: skip
    assert kills >= 1, "no append was still running when its kill came; the machine is faster than the delays"
    a.cli("duel", "status", "--duel-id", duel_id).ok()
    b.cli("duel", "status", "--duel-id", duel_id).ok()
    assert record["alice"].read_bytes() == record["bob"].read_bytes()
    headings = _turn_headings(record["alice"])
    assert [h.split(" — ")[0] for h in headings] == [f"## Turn {n}" for n in range(1, 7)]  # none lost, none twice
    for host, path in ((a, record["alice"]), (b, record["bob"])):
        assert _check(host, path)["errors"] == 0


def test_events_emitted_on_one_host_are_read_on_another(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    a.cli(
        "emit", "--workflow", "socratic-duel", "--type", "status_change", "--run-id", "R", "--step", "debating",
        "--data", '{"status": "running"}',
    ).ok()  # fmt: skip
    b.cli(
        "emit", "--workflow", "socratic-duel", "--type", "btw_update", "--run-id", "R", "--data",
        '{"message": "host B took turn 2"}',
    ).ok()  # fmt: skip

    seen = {}
    for host in (a, b):
        done = host.cli("events", "--run-id", "R", "--json")
        assert done.code == 0, done.stderr
        seen[host.root] = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]

    assert seen[a.root] == seen[b.root]
    assert [(e["type"], e["data"]) for e in seen[a.root]] == [
        ("status_change", {"status": "running"}),
        ("btw_update", {"message": "host B took turn 2"}),
    ]

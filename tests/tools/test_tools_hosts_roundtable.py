"""One roundtable across hosts: three work roots in separate temporary directories (separate "disks"), one
PostgreSQL ledger, and three speakers taking the floor in turn through the installed ``moot`` as three
agents' processes would. Every host's meeting directory must come out byte-identical (speeches, ``turn.json``,
minutes, chain) and pass ``moot check``; a SIGKILL in the middle of a speech must neither lose nor
duplicate a speech on any host; an outside edit on one host is refused and changes no one's record.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from meeting_agent import MINUTES, speech
from tools_helpers import MOOT, Cli

from moot.core.chain import split_mark

AGENT = Path(__file__).with_name("meeting_agent.py")
ROLES = ("architect", "reviewer", "operator")
AGENDA = "Should the cache be partitioned per tenant?\n"


class Host:
    """One machine: its own work root and the shared ledger's URL."""

    def __init__(self, base: Path, url: str) -> None:
        self.root = base / "work"
        self.root.mkdir(parents=True)
        self.cli = Cli(self.root, env={"MOOT_DATABASE_URL": url})
        self.meeting = self.root / ".roundtable" / "cache"

    def text(self, name: str, text: str) -> Path:
        path = self.root.parent / name
        path.write_text(text, encoding="utf-8")
        return path

    def speak_args(self, role: str, token: str, round_: int) -> list[str]:
        return [
            "roundtable", "speak", "--name", "cache", "--role", role, "--lease-token", token,
            "--file", str(self.text(f"{role}-{round_}.md", speech(role, round_))),
        ]  # fmt: skip

    def files(self) -> dict[str, bytes]:
        """Every file of the meeting directory, the chain sidecar included.

        A write killed before its rename leaves its hidden ``.NAME.<hex>.tmp``: not part of the meeting, so
        not compared.
        """
        return {p.name: p.read_bytes() for p in sorted(self.meeting.iterdir()) if not p.name.endswith(".tmp")}


@pytest.fixture
def hosts(tmp_path: Path, postgres_schema: Any) -> list[Host]:
    return [Host(tmp_path / f"host-{n}", postgres_schema.url) for n in "abc"]


def _start(host: Host, rounds: int = 2) -> dict[str, Any]:
    return host.cli(
        "roundtable", "start", "--name", "cache", "--speakers", ",".join(ROLES), "--max-rounds", str(rounds),
        "--agenda", str(host.text("agenda.md", AGENDA)),
    ).ok()  # fmt: skip


def _checked(host: Host) -> dict[str, Any]:
    done = host.cli("check", str(host.meeting), "--json")
    assert done.code == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert isinstance(report, dict) and report["errors"] == 0
    return report


def _speeches(host: Host) -> list[str]:
    return sorted(p.name for p in host.meeting.glob("[0-9]*.md"))


EXPECTED = [f"{n:03d}_{ROLES[(n - 1) % 3]}.md" for n in range(1, 7)]


def test_three_speakers_on_three_hosts_write_the_same_meeting(hosts: list[Host]) -> None:
    a, b, c = hosts
    started = _start(a)
    refused = b.cli(
        "roundtable", "start", "--name", "cache", "--speakers", "x,y", "--max-rounds", "1",
        "--agenda", str(b.text("agenda.md", AGENDA)),
    ).refused("TOOLS_CONFLICT")  # fmt: skip
    assert "take-floor" in refused["error"] and not b.meeting.exists()

    agents = [
        subprocess.Popen(
            [
                sys.executable,
                str(AGENT),
                str(MOOT),
                str(host.root),
                "cache",
                role,
                *(["moderator"] if host is a else []),  # the host that started the meeting holds its seat
            ],
            cwd=host.root,
            env=host.cli.environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for host, role in zip(hosts, ROLES, strict=True)
    ]
    for agent in agents:
        out, err = agent.communicate(timeout=600)
        assert agent.returncode == 0, out + err
    for host in hosts:
        status = host.cli("roundtable", "status", "--name", "cache").ok()  # each host's copy catches up
        assert status["status"] == "closed" and status["meeting_id"] == started["meeting_id"]

    assert a.files() == b.files() == c.files()
    assert _speeches(a) == EXPECTED
    assert set(a.files()) == {"AGENDA.md", "turn.json", "MINUTES.md", ".moot.chain", *EXPECTED}
    assert a.files()["MINUTES.md"].decode("utf-8").startswith("# Minutes: cache")
    for host in hosts:
        report = _checked(host)
        assert report["state"]["turns"] == 7 and report["state"]["outcome"] is not None  # six speeches, the minutes


def test_a_sigkill_mid_speech_loses_and_duplicates_no_speech_on_any_host(hosts: list[Host]) -> None:
    started = _start(hosts[0])
    kills = 0
    whole = 0.0  # how long a speech takes on this machine, measured on the first
    for number in range(1, 7):
        host, role, round_ = hosts[(number - 1) % 3], ROLES[(number - 1) % 3], (number - 1) // 3 + 1
        floor = host.cli("roundtable", "take-floor", "--name", "cache", "--role", role).ok()
        args = host.speak_args(role, floor["lease_token"], round_)
        if number == 1:
            begun = time.perf_counter()
            host.cli(*args).ok()
            whole = time.perf_counter() - begun
            continue
        # Killed late in its run, a little later each time: most of a call is the interpreter starting,
        # and the ledger commit, the directory write and the release of the floor come at its very end.
        process = subprocess.Popen([str(MOOT), *args], cwd=host.root, env=host.cli.environment())
        time.sleep(whole * (0.5 + 0.1 * number))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait(timeout=120)
        retried = host.cli(*args)  # the agent sends the same speech again with its token
        if retried.code == 0:
            assert retried.data["sequence"] == number
        else:  # the killed call had committed and given the floor back: the token is spent
            retried.refused("TOOLS_LEASE")
        for peer in hosts:
            assert peer.cli("roundtable", "status", "--name", "cache").ok()["speeches"] == number
    assert kills >= 1, "no speech was still running when its kill came; the machine is faster than the delays"
    # the moderator's seat was taken on the first host: another host takes the floor in it with its secret
    moderator = hosts[2].cli(
        "roundtable", "take-floor", "--name", "cache", "--role", "moderator",
        "--participant-secret", started["participant_secret"],
    ).ok()  # fmt: skip
    hosts[2].cli(
        "roundtable", "minutes", "--name", "cache", "--lease-token", moderator["lease_token"],
        "--file", str(hosts[2].text("minutes.md", MINUTES)),
    ).ok()  # fmt: skip
    for host in hosts:
        host.cli("roundtable", "status", "--name", "cache").ok()
        assert _speeches(host) == EXPECTED  # none lost, none twice
        _checked(host)
    assert hosts[0].files() == hosts[1].files() == hosts[2].files()


def test_an_outside_edit_on_one_host_is_refused_there_and_reaches_no_other_host(hosts: list[Host]) -> None:
    a, b, _ = hosts
    _start(a)
    floor = a.cli("roundtable", "take-floor", "--name", "cache", "--role", "architect").ok()
    a.cli(*a.speak_args("architect", floor["lease_token"], 1)).ok()
    floor = b.cli("roundtable", "take-floor", "--name", "cache", "--role", "reviewer").ok()
    edited = b.meeting / EXPECTED[0]
    edited.write_text("## Position\n\nSomething nobody said.\n", encoding="utf-8")
    before = b.files()

    b.cli(*b.speak_args("reviewer", floor["lease_token"], 1)).refused("PRIOR_TURN_MODIFIED")

    assert b.files() == before  # the refused speech wrote nothing
    assert a.cli("roundtable", "status", "--name", "cache").ok()["speeches"] == 1  # nor reached the ledger
    assert _speeches(a) == EXPECTED[:1]
    kept, mark = split_mark((a.meeting / EXPECTED[0]).read_text(encoding="utf-8"))
    assert kept == speech("architect", 1) and mark is not None and mark.turns == 1

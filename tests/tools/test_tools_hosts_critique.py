"""One critique dialogue across hosts: two work roots in separate temporary directories, one PostgreSQL
ledger, the proposer on one host and the critic on the other, each appending through the installed ``moot``
under the dialogue's lease. Both hosts' files must come out byte-identical and pass ``moot check``; a SIGKILL
in the middle of an append must neither lose nor duplicate a turn; a host whose file was started apart is
refused with the difference.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tools_helpers import MOOT, Cli

from moot.protocols.critique.machine import CritiqueConfig
from moot.protocols.critique.record import create

RECORD = ".dialogues/rate-limiting.md"
TURNS = [
    ("proposer", "## [proposer] Round 1 — 2026-01-31 14:05\n\nA token bucket per API key.\n\nStatus: AWAITING critic\n"),
    ("critic", "## [critic] Round 1 — 2026-01-31 14:09\n\nHow do clients learn their budget?\n\nStatus: AWAITING proposer\n"),
    ("proposer", "## [proposer] Round 2 — 2026-01-31 14:14\n\nRateLimit-* headers on every response.\n\nStatus: PROPOSING_DONE\n"),
    ("critic", "## [critic] Round 2 — 2026-01-31 14:18\n\nAgreed.\n\nSummary: Token bucket per key with RateLimit-* headers.\n\nStatus: DONE\n"),
]  # fmt: skip


class Host:
    def __init__(self, base: Path, url: str) -> None:
        self.root = base / "work"
        self.root.mkdir(parents=True)
        self.cli = Cli(self.root, env={"MOOT_DATABASE_URL": url})
        self.record = self.root / RECORD

    def append_args(self, number: int, token: str) -> list[str]:
        role, text = TURNS[number - 1]
        turn = self.root.parent / f"turn-{number}.md"
        turn.write_text(text, encoding="utf-8")
        return [
            "critique",
            "append",
            "--file",
            RECORD,
            "--role",
            role,
            "--turn-file",
            str(turn),
            "--lease-token",
            token,
        ]


def _start(host: Host, started: str = "2026-01-31 14:00") -> None:
    host.record.parent.mkdir(parents=True)
    create(host.record, CritiqueConfig.from_template("planning", topic="Rate limiting", started=started))


def _checked(host: Host) -> dict[str, Any]:
    done = host.cli("check", str(host.record), "--json")
    assert done.code == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert isinstance(report, dict) and report["errors"] == 0
    return report


@pytest.fixture
def hosts(tmp_path: Path, postgres_schema: Any) -> tuple[Host, Host]:
    return Host(tmp_path / "host-a", postgres_schema.url), Host(tmp_path / "host-b", postgres_schema.url)


def test_two_hosts_take_turns_in_one_dialogue_through_a_sigkill(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    _start(a)  # only host A has the file: host B gets it from the ledger
    kills = 0
    whole = 0.0
    for number in range(1, 5):
        host = a if number % 2 else b
        role = TURNS[number - 1][0]
        lock = host.cli("critique", "claim", "--file", RECORD, "--role", role).ok()
        assert host.record.read_text(encoding="utf-8").count("## [") == number - 1  # caught up with the peer
        args = host.append_args(number, lock["lease_token"])
        if number == 1:
            begun = time.perf_counter()
            host.cli(*args).ok()
            whole = time.perf_counter() - begun
        else:
            process = subprocess.Popen([str(MOOT), *args], cwd=host.root, env=host.cli.environment())
            time.sleep(whole * (0.5 + 0.12 * number))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
            process.wait(timeout=120)
            retried = host.cli(*args).ok()  # the agent sends the same turn again
            assert retried["turn_number"] == number
        host.cli(
            "critique", "release", "--file", RECORD, "--role", role, "--lease-token", lock["lease_token"],
            *(["--close"] if number == 4 else []),
        ).ok()  # fmt: skip
    assert kills >= 1, "no append was still running when its kill came; the machine is faster than the delays"
    for host in hosts:
        status = host.cli("critique", "status", "--file", RECORD).ok()
        assert status["turns"] == 4 and status["outcome"] == "DONE"
    assert a.record.read_bytes() == b.record.read_bytes()
    assert [line for line in a.record.read_text(encoding="utf-8").splitlines() if line.startswith("## [")] == [
        text.splitlines()[0] for _, text in TURNS
    ]  # none lost, none twice
    for host in hosts:
        _checked(host)


def test_a_host_whose_dialogue_was_started_apart_is_refused_with_the_difference(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    _start(a)
    a.cli("critique", "claim", "--file", RECORD, "--role", "proposer").ok()
    _start(b, started="2026-01-31 15:30")
    before = b.record.read_bytes()

    refused = b.cli("critique", "claim", "--file", RECORD, "--role", "critic").refused("TOOLS_SOURCE_MISMATCH")

    assert "15:30" in refused["error"] and "14:00" in refused["error"]
    assert b.record.read_bytes() == before
    assert a.cli("critique", "status", "--file", RECORD).ok()["lock_role"] == "proposer"

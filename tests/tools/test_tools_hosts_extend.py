"""``moot critique extend`` on a dialogue shared across hosts: the header the ledger holds is raised under the
lease, so every host's file shows the new round limit and the dialogue continues on any host.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tools_helpers import Cli

from moot.protocols.critique.machine import CritiqueConfig
from moot.protocols.critique.record import create

RECORD = ".dialogues/rate-limiting.md"
TURNS = [
    ("proposer", "## [proposer] Round 1 — 2026-01-31 14:05\n\nA token bucket per API key.\n\nStatus: AWAITING critic\n"),
    ("critic", "## [critic] Round 1 — 2026-01-31 14:09\n\nHow do clients learn their budget?\n\nStatus: AWAITING proposer\n"),
    ("proposer", "## [proposer] Round 2 — 2026-01-31 14:14\n\nRateLimit-* headers on every response.\n\nStatus: AWAITING critic\n"),
]  # fmt: skip


class Host:
    def __init__(self, base: Path, url: str) -> None:
        self.root = base / "work"
        self.root.mkdir(parents=True)
        self.cli = Cli(self.root, env={"MOOT_DATABASE_URL": url})
        self.record = self.root / RECORD

    def turn(self, number: int) -> None:
        role, text = TURNS[number - 1]
        token = self.cli("critique", "claim", "--file", RECORD, "--role", role).ok()["lease_token"]
        turn = self.root.parent / f"turn-{number}.md"
        turn.write_text(text, encoding="utf-8")
        self.cli("critique", "append", "--file", RECORD, "--role", role, "--turn-file", str(turn),
                 "--lease-token", token).ok()  # fmt: skip
        self.cli("critique", "release", "--file", RECORD, "--role", role, "--lease-token", token).ok()

    def check(self) -> dict[str, Any]:
        done = self.cli("check", str(self.record), "--json")
        assert done.code == 0, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert isinstance(report, dict) and report["errors"] == 0
        return report


@pytest.fixture
def hosts(tmp_path: Path, postgres_schema: Any) -> tuple[Host, Host]:
    a, b = Host(tmp_path / "host-a", postgres_schema.url), Host(tmp_path / "host-b", postgres_schema.url)
    a.record.parent.mkdir(parents=True)
    create(a.record, CritiqueConfig.from_template("planning", topic="Rate limiting", started="2026-01-31 14:00",
                                                  max_rounds=1))  # fmt: skip
    a.turn(1)
    b.turn(2)  # host B's file comes from the ledger; the round limit is reached
    assert a.cli("critique", "status", "--file", RECORD).ok()["outcome"] == "MAX_ROUNDS"  # host A caught up
    return a, b


def test_extend_on_one_host_raises_the_limit_on_every_host(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    token = b.cli("critique", "claim", "--file", RECORD, "--role", "critic").ok()["lease_token"]

    extended = b.cli("critique", "extend", "--file", RECORD, "--role", "critic", "--lease-token", token,
                     "--rounds", "2").ok()  # fmt: skip
    b.cli("critique", "release", "--file", RECORD, "--role", "critic", "--lease-token", token).ok()

    assert extended["max_rounds"] == 3 and extended["leased"] is True
    assert "Max rounds: 3" in b.record.read_text(encoding="utf-8")
    status = a.cli("critique", "status", "--file", RECORD).ok()  # host A's file catches up from the ledger
    assert status["outcome"] is None and status["next_speaker"] == "proposer"
    assert a.record.read_bytes() == b.record.read_bytes()
    a.turn(3)  # the dialogue continues past the old limit, on the other host
    b.cli("critique", "status", "--file", RECORD).ok()
    assert a.record.read_bytes() == b.record.read_bytes()
    assert a.record.read_text(encoding="utf-8").count("## [") == 3
    for host in hosts:
        host.check()


def test_extend_on_a_claimed_dialogue_without_the_lease_is_refused_and_changes_nothing(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    before = (a.record.read_bytes(), b.record.read_bytes())

    refused = a.cli("critique", "extend", "--file", RECORD, "--role", "proposer").refused("TOOLS_LEASE")

    assert "--lease-token" in refused["error"]
    assert (a.record.read_bytes(), b.record.read_bytes()) == before
    assert a.record.read_bytes() == b.record.read_bytes() and b"Max rounds: 1\n" in a.record.read_bytes()


def test_extend_on_an_unclaimed_dialogue_raises_its_header(tmp_path: Path) -> None:
    host = Cli(tmp_path)
    record = tmp_path / RECORD
    record.parent.mkdir(parents=True)
    create(record, CritiqueConfig.from_template("planning", topic="Rate limiting", started="2026-01-31 14:00"))

    extended = host("critique", "extend", "--file", RECORD, "--role", "proposer").ok()

    assert extended["leased"] is False and f"Max rounds: {extended['max_rounds']}\n" in record.read_text("utf-8")
    assert host("critique", "extend", "--file", RECORD, "--role", "proposer", "--rounds", "0").code == 2

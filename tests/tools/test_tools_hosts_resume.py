"""``moot resume`` on a record the ledger shares across hosts: the engine would append turns the other hosts
never see, so the host's record is brought up to the ledger's bytes and the command names the agent tools
instead. A record the ledger does not hold resumes as before, and without a ledger nothing is created.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from meeting_agent import speech
from tools_helpers import ALICE, BOB, Cli, example_turns, join, write_source

from moot.protocols.critique.machine import CritiqueConfig
from moot.protocols.critique.record import create

RECORD = ".dialogues/rate-limiting.md"
TURN = "## [proposer] Round 1 — 2026-01-31 14:05\n\nA token bucket per API key.\n\nStatus: AWAITING critic\n"


class Host:
    def __init__(self, base: Path, env: dict[str, str]) -> None:
        self.root = base / "work"
        self.root.mkdir(parents=True)
        self.cli = Cli(self.root, env=env)
        self.record = self.root / RECORD

    def start(self) -> None:
        self.record.parent.mkdir(parents=True)
        create(self.record, CritiqueConfig.from_template("planning", topic="Rate limiting", started="2026-01-31 14:00"))


def _agreeing(path: Path) -> Path:
    """A script agent that finishes the dialogue in four turns."""
    steps = [
        ("proposer", "A token bucket per API key.", "AWAITING", ""),
        ("critic", "How do clients learn their budget?", "AWAITING", ""),
        ("proposer", "RateLimit-* headers on every response.", "PROPOSING_DONE", ""),
        ("critic", "Agreed.", "DONE", "Token bucket per key with RateLimit-* headers."),
    ]
    lines = [
        json.dumps({"role": role, "reply": json.dumps({"message": m, "status": s, "summary": summary})})
        for role, m, s, summary in steps
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_resume_on_a_shared_dialogue_catches_up_from_the_ledger_and_names_the_tools(
    tmp_path: Path, postgres_schema: Any
) -> None:
    env = {"MOOT_DATABASE_URL": postgres_schema.url}
    a, b = Host(tmp_path / "host-a", env), Host(tmp_path / "host-b", env)
    a.start()
    b.start()  # host B has the same dialogue, then falls behind
    token = a.cli("critique", "claim", "--file", RECORD, "--role", "proposer").ok()["lease_token"]
    turn = tmp_path / "turn.md"
    turn.write_text(TURN, encoding="utf-8")
    a.cli("critique", "append", "--file", RECORD, "--role", "proposer", "--turn-file", str(turn),
          "--lease-token", token).ok()  # fmt: skip
    assert b.record.read_bytes() != a.record.read_bytes()

    done = b.cli("resume", RECORD, "--agents", f"script:{_agreeing(tmp_path / 'script.jsonl')}")

    assert done.code == 2, done.stdout + done.stderr
    assert "shared through the moot ledger" in done.stderr and "moot critique claim" in done.stderr
    assert "Traceback" not in done.stderr
    assert b.record.read_bytes() == a.record.read_bytes()  # the ledger's bytes, and no engine turn after them
    assert b.record.read_text(encoding="utf-8").count("## [") == 1


def test_resume_on_a_shared_duel_catches_up_from_the_ledger_and_names_the_tools(
    tmp_path: Path, postgres_schema: Any
) -> None:
    env = {"MOOT_DATABASE_URL": postgres_schema.url}
    a, b = Host(tmp_path / "host-a", env), Host(tmp_path / "host-b", env)
    sources = {a: write_source(a.root), b: write_source(b.root)}
    first, second = join(a.cli, sources[a], ALICE).ok(), join(b.cli, sources[b], BOB).ok()
    duel_id = first["duel_id"]
    for number, (host, joined) in enumerate(((a, first), (b, second)), start=1):
        me = joined["participant_id"]
        token = host.cli("duel", "claim-lock", "--duel-id", duel_id, "--participant-id", me).ok()["lease_token"]
        turn = tmp_path / f"turn-{number}.md"
        turn.write_text(example_turns(sources[host])[number - 1], encoding="utf-8")
        host.cli("duel", "append", "--duel-id", duel_id, "--participant-id", me, "--lease-token", token,
                 "--file", str(turn)).ok()  # fmt: skip
        host.cli("duel", "release-lock", "--duel-id", duel_id, "--participant-id", me, "--lease-token",
                 token).ok()  # fmt: skip
    behind, ahead = Path(first["debate_path"]), Path(second["debate_path"])
    assert behind.read_bytes() != ahead.read_bytes()  # host A has turn 1 only

    done = a.cli("resume", str(behind), "--agents", "script:unused.jsonl")

    assert done.code == 2, done.stdout + done.stderr
    assert "moot duel claim-lock" in done.stderr and "Traceback" not in done.stderr
    assert behind.read_bytes() == ahead.read_bytes()


@pytest.mark.parametrize("ledger", ["none", "sqlite", "postgres"])
def test_an_engine_record_the_ledger_does_not_hold_still_resumes(
    tmp_path: Path, request: pytest.FixtureRequest, ledger: str
) -> None:
    env = {}
    if ledger == "postgres":
        env["MOOT_DATABASE_URL"] = request.getfixturevalue("postgres_schema").url
    host = Host(tmp_path, env)
    host.start()
    if ledger == "sqlite":  # this root's ledger holds another dialogue, not this one
        other = ".dialogues/other.md"
        create(host.root / other, CritiqueConfig.from_template("planning", topic="Other", started="2026-01-31 14:00"))
        host.cli("critique", "claim", "--file", other, "--role", "proposer").ok()

    done = host.cli("resume", RECORD, "--agents", f"script:{_agreeing(tmp_path / 'script.jsonl')}")

    assert done.code == 0, done.stdout + done.stderr
    text = host.record.read_text(encoding="utf-8")
    assert text.count("## [") == 4 and "Status: DONE" in text
    assert (host.root / ".moot" / "moot.db").exists() == (ledger == "sqlite")  # no ledger is created by resume


def test_resume_on_a_shared_meeting_catches_up_from_the_ledger_and_names_the_tools(
    tmp_path: Path, postgres_schema: Any
) -> None:
    env = {"MOOT_DATABASE_URL": postgres_schema.url}
    a, b = Host(tmp_path / "host-a", env), Host(tmp_path / "host-b", env)
    agenda = tmp_path / "agenda.md"
    agenda.write_text("Should the cache be partitioned per tenant?\n", encoding="utf-8")
    a.cli("roundtable", "start", "--name", "cache", "--speakers", "architect,reviewer", "--max-rounds", "2",
          "--agenda", str(agenda)).ok()  # fmt: skip
    b.cli("roundtable", "status", "--name", "cache").ok()  # host B's copy of the opening, then it falls behind
    token = a.cli("roundtable", "take-floor", "--name", "cache", "--role", "architect").ok()["lease_token"]
    spoken = tmp_path / "speech.md"
    spoken.write_text(speech("architect", 1), encoding="utf-8")
    a.cli("roundtable", "speak", "--name", "cache", "--role", "architect", "--lease-token", token,
          "--file", str(spoken)).ok()  # fmt: skip

    def files(host: Host) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((host.root / ".roundtable" / "cache").iterdir())}

    assert files(b) != files(a)

    done = b.cli("resume", ".roundtable/cache", "--agents", "script:unused.jsonl")

    assert done.code == 2, done.stdout + done.stderr
    assert "moot roundtable take-floor" in done.stderr and "Traceback" not in done.stderr
    assert files(b) == files(a)

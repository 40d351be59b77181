"""Helpers of the agent-tool tests: run the installed ``moot`` as an outside agent would, and the turns of
the hand-written six-turn duel (tests/duel/examples/valid/consensus-six-turns.md) as turn files."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import forked_moot
from moot.protocols.duel.record import parse_document

MOOT = Path(sys.executable).with_name("moot")
EXAMPLE = Path(__file__).resolve().parents[1] / "duel" / "examples" / "valid" / "consensus-six-turns.md"
EXAMPLE_SOURCE = "/srv/docs/cache-design.md"
TOPIC = "Shared cache across tenants"
# The example duel quotes its source at these lines; quotes are verified, so the source holds them there.
QUOTED_LINES = {
    8: "Tenant isolation comes first.",
    42: "One global LRU list serves all tenants.",
    60: "Ninety percent of reads hit the hottest tenth of keys.",
    77: "Memory is billed per tenant.",
    91: "Each tenant has a memory quota.",
}
SOURCE_TEXT = "# Shared cache across tenants\n\n## Eviction\n" + "".join(
    f"{QUOTED_LINES.get(number, '')}\n" for number in range(4, 95)
)
ALICE = {"name": "alice", "harness": "claude-code", "model": "claude-opus-4"}
BOB = {"name": "bob", "harness": "codex", "model": "gpt-5"}
# Variables that would point a test's moot at another ledger, root or lease.
_PRIVATE_ENV = (
    "MOOT_DATABASE_URL",
    "MOOT_ROOT",
    "MOOT_LEASE_TOKEN",
    "MOOT_PARTICIPANT_SECRET",
    "MOOT_LEASE_SECONDS",
    "MOOT_RETRY_AFTER_SECONDS",
)


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict[str, Any]:
        decoded = json.loads(self.stdout)
        assert isinstance(decoded, dict)
        return decoded

    @property
    def rules(self) -> list[str]:
        return [r["rule"] for r in self.data.get("rules", [])]

    def ok(self) -> dict[str, Any]:
        assert self.code == 0, f"moot exited {self.code}: {self.stdout}{self.stderr}"
        data = self.data
        assert data["ok"] is True
        return data

    def refused(self, rule: str, code: int = 1) -> dict[str, Any]:
        assert self.code == code, f"expected exit {code}, got {self.code}: {self.stdout}{self.stderr}"
        data = self.data
        assert data["ok"] is False and data["exit_code"] == code
        assert rule in self.rules, f"{rule} not among {self.rules}: {data['error']}"
        assert data["error"] and data["error"] in self.stderr  # the sentence is shown to a person too
        return data


@dataclass
class Cli:
    """The installed console script, run in ``root`` like an outside agent would run it."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if k not in _PRIVATE_ENV}
        # The per-user index of joined debates goes beside the test's work root, not into the real home.
        base["XDG_STATE_HOME"] = str(self.root.parent / "state")
        return {**base, **self.env}

    def __call__(self, *args: str, stdin: str | None = None) -> Result:
        done = forked_moot.run(args, cwd=self.root, env=self.environment(), input=stdin, timeout=120)
        return Result(done.returncode, done.stdout, done.stderr)


def example_turns(source: Path) -> list[str]:
    """The six accepted turns of the hand-written consensus duel, citing ``source`` instead of the example's."""
    document, _ = parse_document(EXAMPLE.read_text(encoding="utf-8"))
    assert document is not None and len(document.turn_texts) == 6
    return [text.replace(EXAMPLE_SOURCE, str(source)) + "\n" for text in document.turn_texts]


@dataclass
class Duel:
    """A duel two agents joined through the CLI."""

    cli: Cli
    duel_id: str
    ids: dict[str, str]
    debate_path: Path
    turns: list[str]

    def write_turn(self, number: int, text: str | None = None) -> Path:
        path = self.cli.root / f"turn-{number}.md"
        path.write_text(self.turns[number - 1] if text is None else text, encoding="utf-8")
        return path

    def claim(self, who: str, *extra: str) -> Result:
        return self.cli("duel", "claim-lock", "--duel-id", self.duel_id, "--participant-id", self.ids[who], *extra)

    def append(self, who: str, token: str | None, turn: Path) -> Result:
        token_args = ["--lease-token", token] if token else []
        return self.cli(
            "duel",
            "append",
            "--duel-id",
            self.duel_id,
            "--participant-id",
            self.ids[who],
            *token_args,
            "--file",
            str(turn),
        )

    def release(self, who: str, token: str | None, *extra: str) -> Result:
        token_args = ["--lease-token", token] if token else []
        return self.cli(
            "duel", "release-lock", "--duel-id", self.duel_id, "--participant-id", self.ids[who], *token_args, *extra
        )

    def status(self) -> dict[str, Any]:
        return self.cli("duel", "status", "--duel-id", self.duel_id).ok()

    def artifact_bytes(self) -> bytes | None:
        return self.debate_path.read_bytes() if self.debate_path.exists() else None


def write_source(root: Path) -> Path:
    source = root / "cache-design.md"
    source.write_text(SOURCE_TEXT, encoding="utf-8")
    return source


def join(cli: Cli, source: Path, who: dict[str, str], topic: str = TOPIC) -> Result:
    return cli(
        "duel", "join", "--target", str(source), "--topic", topic, "--participant-name", who["name"],
        "--harness", who["harness"], "--model-id", who["model"], "--run-id", f"run-{who['name']}",
    )  # fmt: skip


def start_duel(cli: Cli) -> Duel:
    source = write_source(cli.root)
    first = join(cli, source, ALICE).ok()
    second = join(cli, source, BOB).ok()
    assert first["duel_id"] == second["duel_id"]
    return Duel(
        cli=cli,
        duel_id=first["duel_id"],
        ids={"alice": first["participant_id"], "bob": second["participant_id"]},
        debate_path=Path(first["debate_path"]),
        turns=example_turns(source),
    )

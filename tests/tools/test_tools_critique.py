"""``moot critique append``: one Rule 2 turn, its Status checked by the protocol, appended durably; with or
without a lease."""

from __future__ import annotations

from pathlib import Path

from tools_helpers import Cli, Result

from moot.core.chain import chain_path
from moot.detect import check_path
from moot.protocols.critique.machine import CritiqueConfig
from moot.protocols.critique.record import create

RECORD = ".dialogues/api-design.md"
PROPOSER_1 = """---

## [proposer] Round 1 — 2026-01-31 14:05

Use REST with cursor pagination.

Status: AWAITING critic
"""
CRITIC_1 = """## [critic] Round 1 — 2026-01-31 14:09

What about rate limiting?

Status: AWAITING proposer
"""


def dialogue(root: Path) -> Path:
    path = root / RECORD
    path.parent.mkdir()
    create(path, CritiqueConfig.from_template("planning", topic="API design", started="2026-01-31 14:00"))
    return path


def append(cli: Cli, role: str, text: str, *extra: str) -> Result:
    turn = cli.root / f"{role}-turn.md"
    turn.write_text(text, encoding="utf-8")
    return cli("critique", "append", "--file", RECORD, "--role", role, "--turn-file", str(turn), *extra)


def test_turns_are_checked_and_appended_without_a_lease(cli: Cli) -> None:
    path = dialogue(cli.root)
    first = append(cli, "proposer", PROPOSER_1).ok()
    assert first["turn_number"] == 1 and first["next_speaker"] == "critic" and not first["leased"]
    before = path.read_bytes()
    # A turn whose header names another role than the one appending.
    append(cli, "critic", PROPOSER_1).refused("TOOLS_IDENTITY")
    # Status must be the last line, and must await the other role.
    append(cli, "critic", CRITIC_1 + "\nP.S. one more thing\n").refused("CRITIQUE_STATUS_LAST")
    append(cli, "critic", CRITIC_1.replace("AWAITING proposer", "AWAITING critic")).refused("CRITIQUE_AWAITING")
    # The same role twice in a row.
    append(cli, "proposer", PROPOSER_1.replace("14:05", "14:06")).refused("CRITIQUE_ALTERNATION")
    assert path.read_bytes() == before
    second = append(cli, "critic", CRITIC_1).ok()
    assert second["turn_number"] == 2 and second["round"] == 1
    assert check_path(path).exit_code == 0 and chain_path(path).exists()
    # An edit to an accepted turn stops further appends.
    path.write_text(
        path.read_text(encoding="utf-8").replace("cursor pagination", "offset pagination"), encoding="utf-8"
    )
    append(cli, "proposer", PROPOSER_1.replace("Round 1", "Round 2").replace("14:05", "14:20")).refused(
        "PRIOR_TURN_MODIFIED"
    )


def test_a_claimed_dialogue_needs_the_lease(cli: Cli) -> None:
    path = dialogue(cli.root)
    append(cli, "proposer", PROPOSER_1).ok()
    lock = cli("critique", "claim", "--file", RECORD, "--role", "critic").ok()
    status = cli("critique", "status", "--file", RECORD)
    assert lock["lease_token"] not in status.stdout and status.data["lock_role"] == "critic"
    append(cli, "critic", CRITIC_1).refused("TOOLS_LEASE")
    done = append(cli, "critic", CRITIC_1, "--lease-token", lock["lease_token"]).ok()
    # The lease-less history (turn 1) is adopted by the first leased write, then turn 2 is recorded.
    assert done["leased"] and done["adopted_turns"] == [1] and done["turn_number"] == 2
    assert cli("critique", "status", "--file", RECORD).ok()["turns"] == 2
    cli("critique", "release", "--file", RECORD, "--role", "critic", "--lease-token", lock["lease_token"]).ok()
    assert check_path(path).exit_code == 0


def test_dialogue_paths_stay_under_dialogues(cli: Cli, tmp_path: Path) -> None:
    dialogue(cli.root)
    outside = tmp_path / "outside.md"
    outside.write_text("# Dialogue: x\n", encoding="utf-8")
    turn = cli.root / "t.md"
    turn.write_text(PROPOSER_1, encoding="utf-8")
    for target in ("../outside.md", str(outside), ".dialogues/../../outside.md", "notes/x.md"):
        cli("critique", "append", "--file", target, "--role", "proposer", "--turn-file", str(turn)).refused(
            "TOOLS_UNSAFE_NAME", code=2
        )
    (cli.root / ".dialogues" / "linked.md").symlink_to(outside)
    cli("critique", "append", "--file", ".dialogues/linked.md", "--role", "proposer", "--turn-file", str(turn)).refused(
        "FILE_SYMLINK", code=2
    )
    assert outside.read_text(encoding="utf-8") == "# Dialogue: x\n"

"""A SIGKILL at any point of an accepted turn's writes never leaves the turn without its usage row, nor a row
that claims a turn the record lacks once the debate is resumed: each turn the record holds has exactly one
accepted row in ``moot log``, for ordinary turns and for the sealed answers of a council."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fault_helpers import LONG_AGENT, accepted_per_turn, moot, usage_rows

from moot.detect import check_path
from moot.engine.loop import NOT_WRITTEN
from moot.records import find_records

RECORD = ".dialogues/adopt-a-monorepo.md"
CRITIQUE = ["critique", "--topic", "Adopt a monorepo", "--max-rounds", "3", "--quiet", "--agents", LONG_AGENT]
COUNCIL_RECORD = ".council/should-tenants-share-one-cache.md"
MEMBERS = [arg for name in ("ada", "bo", "cy") for arg in ("--member", f"{name}={LONG_AGENT}")]
COUNCIL = ["council", "--question", "Should tenants share one cache?", *MEMBERS, "--chairman", LONG_AGENT, "--quiet"]


@pytest.mark.parametrize("moment", ["before", "after"])
def test_a_kill_around_a_turns_commit_keeps_exactly_one_accepted_row_per_turn(sigkill_root: Path, moment: str) -> None:
    killed = moot("run", *CRITIQUE, cwd=sigkill_root, fault=f"kill:{moment}:2")
    assert killed.returncode == -9, killed.stderr
    record = sigkill_root / RECORD
    on_disk = check_path(record).summary
    assert on_disk is not None and on_disk.turns == (2 if moment == "after" else 1)
    # Every turn the record holds has its row, before any resume.
    assert all(accepted_per_turn(record)[turn] == 1 for turn in range(1, on_disk.turns + 1)), usage_rows(record)

    resumed = moot("resume", RECORD, "--quiet", cwd=sigkill_root)
    assert resumed.returncode == 0, resumed.stderr
    assert accepted_per_turn(record) == dict.fromkeys(range(1, 7), 1)
    if moment == "before":  # the row written before the kill no longer claims turn 2
        assert [row["error"] for row in usage_rows(record) if row.get("error")] == [NOT_WRITTEN]
    shown = moot("log", RECORD, "--json", cwd=sigkill_root)
    assert sum(row["accepted"] for row in json.loads(shown.stdout)) == 6


def test_a_kill_before_a_sealed_answer_is_committed_leaves_no_second_accepted_row(sigkill_root: Path) -> None:
    killed = moot("run", *COUNCIL, cwd=sigkill_root, fault="kill:sealed:bo")
    assert killed.returncode == -9, killed.stderr
    record = sigkill_root / COUNCIL_RECORD
    resumed = moot("resume", COUNCIL_RECORD, "--quiet", cwd=sigkill_root)
    assert resumed.returncode == 0, resumed.stderr
    summary = check_path(record).summary
    assert summary is not None and summary.outcome is not None and summary.outcome.name == "SYNTHESIZED"
    # Three answers, three reviews, one synthesis: bo's answer was asked again, and only that one counts.
    assert accepted_per_turn(record) == dict.fromkeys(range(1, 8), 1), usage_rows(record)


# The other protocols, each killed just before or just after its turn 2 reaches the record: (args, turns at the end).
OTHERS = {
    "duel": (["duel", "design.md"], 6),
    "agora": (["agora", "--topic", "Adopt a monorepo", "--max-turns", "12"], 9),
    "roundtable": (
        ["roundtable", "--topic", "Cache design", "--speakers", "architect,reviewer", "--max-rounds", "1"],
        3,
    ),
}


@pytest.mark.parametrize("moment", ["before", "after"])
@pytest.mark.parametrize("protocol", list(OTHERS))
def test_every_protocol_keeps_one_accepted_row_per_turn_across_a_kill(
    sigkill_root: Path, protocol: str, moment: str
) -> None:
    args, turns = OTHERS[protocol]
    (sigkill_root / "design.md").write_text("# Shared cache\n\n## Goals\nIsolation first.\n", encoding="utf-8")
    killed = moot("run", *args, "--quiet", "--agents", LONG_AGENT, cwd=sigkill_root, fault=f"kill:{moment}:2")
    assert killed.returncode == -9, killed.stderr
    (record,) = find_records(sigkill_root)
    resumed = moot("resume", str(record), "--quiet", cwd=sigkill_root)
    assert resumed.returncode in (0, 1), resumed.stderr  # 1: the protocol's own outcome without consensus
    assert accepted_per_turn(record) == dict.fromkeys(range(1, turns + 1), 1), usage_rows(record)

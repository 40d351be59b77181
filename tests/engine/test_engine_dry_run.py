"""`moot run NAME --dry-run` prices each built-in protocol from its driver's call plan: who is asked, how often,
in which order, with which turn budget. (Prompt sizes follow each protocol's prompts, so they are not pinned.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from engine_helpers import run_moot

# (the protocol's arguments and agents, then per role in the order listed: calls and completion tokens)
PLANS = {
    "critique": (
        ["--topic", "Adopt a monorepo", "--max-rounds", "3", "--agents", "local"],
        [("proposer", 3, 960), ("critic", 3, 960)],
    ),
    "duel": (["doc.md", "--max-turns", "3", "--agents", "local"], [("advocate", 2, 1280), ("skeptic", 1, 640)]),
    "agora": (
        [
            "--topic",
            "Tabs",
            "--position",
            "tabs=Tabs",
            "--position",
            "spaces=Spaces",
            "--max-turns",
            "7",
            "--agents",
            "local",
        ],
        [("tabs", 3, 300), ("spaces", 2, 200), ("mediator", 2, 200)],
    ),
    "roundtable": (
        ["--topic", "Cache design", "--speakers", "a,b,c", "--max-rounds", "2", "--agents", "local"],
        [("a", 2, 960), ("b", 2, 960), ("c", 2, 960), ("moderator", 1, 480)],
    ),
    "council": (
        ["--question", "What is 2+2?", "--member", "m1=local", "--member", "m2=local", "--member", "m3=local"],
        [("m1", 3, 1200), ("m2", 2, 800), ("m3", 2, 800)],
    ),
}
ROW = re.compile(
    r"^  (\S+)\s+\S+\s+(\d+) call\(s\), ~([\d,]+) prompt(?: \([\d,]+ cached\))? \+ ~[\d,]+ completion tokens, "
    r"~\$0; at most ([\d,]+) \+ ([\d,]+), \$0$"
)


@pytest.mark.parametrize("protocol", sorted(PLANS))
def test_a_dry_run_asks_each_role_as_its_protocol_plans(tmp_path: Path, protocol: str) -> None:
    (tmp_path / "doc.md").write_text("# Design\n\nWe should adopt a monorepo.\n", encoding="utf-8")
    arguments, expected = PLANS[protocol]
    done = run_moot("run", protocol, *arguments, "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rows = [match.groups() for line in lines[1:-1] if (match := ROW.match(line))]
    assert [(role, int(calls), int(most.replace(",", ""))) for role, calls, _, _, most in rows] == expected
    assert all(0 < int(prompt.replace(",", "")) <= int(most.replace(",", "")) for _, _, prompt, most, _ in rows)
    calls = sum(calls for _, calls, _ in expected)
    assert lines[-1].startswith(f"  total: {calls} call(s)")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["doc.md"]  # nothing written


def test_an_auto_dry_run_expects_the_vote_and_shows_the_escalation_apart(tmp_path: Path) -> None:
    # The vote asks each member once; only a split panel goes on to the reviews and the synthesis (4 more calls).
    members = ["--member", "m1=local", "--member", "m2=local", "--member", "m3=local"]
    done = run_moot("run", "auto", "--question", "What is 2+2?", *members, "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rows = {line.split()[0]: line for line in lines[1:4]}
    assert all(" 1 call(s), ~" in rows[role] for role in ("m1", "m2", "m3")), rows
    assert "; at most 3 call(s), " in rows["m1"] and "; at most 2 call(s), " in rows["m2"]
    total = re.fullmatch(
        r"  total: 3 call\(s\), ~([\d,]+) tokens, ~\$0; at most 7 call\(s\), ([\d,]+) tokens, \$0", lines[4]
    )
    assert total is not None, lines[4]
    split = re.fullmatch(r"  if the panel splits: 4 more call\(s\), ~([\d,]+) more tokens, ~\$0 more .*", lines[5])
    assert split is not None, lines[5]
    voted, escalation = (int(found.group(1).replace(",", "")) for found in (total, split))
    assert 0 < voted < escalation  # the reviews read every answer: a split costs more than the vote
    as_json = run_moot("run", "auto", "--question", "What is 2+2?", *members, "--dry-run", "--json", cwd=tmp_path)
    shown = json.loads(as_json.stdout)
    assert (shown["total"]["calls"], shown["total"]["max_calls"]) == (3, 7)
    assert [(part["when"], part["calls"]) for part in shown["contingent"]] == [("the panel splits", 4)]
    assert sorted(path.name for path in tmp_path.iterdir()) == []  # nothing written

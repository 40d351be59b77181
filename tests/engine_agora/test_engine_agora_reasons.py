"""``--require-reasons``: a drone that changes its stance without new evidence is sent back, and ``moot check`` holds
a record to the rule on the record alone; without the option nothing changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import forked_moot
from moot.detect import check_path
from moot.engine.specs import build_driver
from moot.protocols.agora import record

AGENT = f"cmd:{sys.executable} {Path(__file__).parents[1] / 'reliability' / 'protocol_agent.py'}"
EXAMPLES = Path(__file__).parents[1] / "agora" / "examples"
REASONS_LINE = "- Require reasons: yes"


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return forked_moot.run(args, cwd=cwd, timeout=300, env=env)


def attempts(path: Path) -> list[tuple[int, str, list[str]]]:
    """(turn, role, the rules its reply broke) per attempt, in order."""
    log = path.with_name(f".{path.name}.usage.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in log if line.strip()]
    return [(row["turn"], row["role"], [v["rule"] for v in row.get("violations", [])]) for row in rows]


def evidence_of(path: Path, number: int) -> list[dict[str, Any]]:
    parsed, _ = record.parse(path.read_text(encoding="utf-8"))
    assert parsed is not None
    return [item.model_dump() for item in parsed.turns[number - 1].evidence]


def debate(tmp_path: Path, *options: str) -> tuple[dict[str, Any], Path]:
    done = moot("run", "agora", "--topic", "Adopt a monorepo", "--agents", AGENT, "--json", *options, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    return result, tmp_path / result["artifact"]


def test_a_switch_without_new_evidence_is_sent_back_and_the_repaired_turn_is_accepted(tmp_path: Path) -> None:
    # The scripted drones propose, counter until the mediator proposes a compromise, then approve it: each
    # approve leaves the drone's own proposal, so it needs a reason; the drone gives one when sent back.
    result, path = debate(tmp_path, "--require-reasons")
    assert (result["outcome"], result["turns"]) == ("CONSENSUS", 9)
    assert REASONS_LINE in path.read_text(encoding="utf-8").splitlines()
    tried = attempts(path)
    assert tried[7:] == [
        (8, "advocate", ["AGORA_STANCE_REASON"]),
        (8, "advocate", []),
        (9, "skeptic", ["AGORA_STANCE_REASON"]),
        (9, "skeptic", []),
    ]
    assert all(not rules for _, _, rules in tried[:7])  # proposals, counters and the mediator need no reason
    assert [item["source"] for item in evidence_of(path, 8)] == ["review notes"]
    assert check_path(path).exit_code == 0


def test_without_the_option_nothing_changes(tmp_path: Path) -> None:
    result, path = debate(tmp_path)
    assert (result["outcome"], result["turns"]) == ("CONSENSUS", 9)
    assert not any(line.startswith("- Require reasons") for line in path.read_text(encoding="utf-8").splitlines())
    assert all(not rules for _, _, rules in attempts(path))  # the same switches, accepted at once
    assert evidence_of(path, 8) == []
    assert check_path(path).exit_code == 0


def test_check_reports_a_hand_made_violation_at_its_line() -> None:
    path = EXAMPLES / "invalid" / "AGORA_STANCE_REASON.md"
    done = moot("check", str(path), cwd=path.parent)
    assert done.returncode == 1
    # Turn 4 approves the proposal its author countered, citing only turn 1's item (in other case and spacing).
    expected = (
        f"{path}:38: error AGORA_STANCE_REASON (turn 4): skeptic changes its stance (it approves proposal-advocate, "
        "which it countered) without a new reason; add an evidence item that no earlier turn cites."
    )
    assert expected in done.stdout
    # The same turns without the header line break no rule.
    text = path.read_text(encoding="utf-8").replace(REASONS_LINE + "\n", "")
    assert record.parse(text)[0] is not None
    off = path.parent.parent / "off.md"
    try:
        off.write_text(text, encoding="utf-8")
        assert check_path(off).violations == []
    finally:
        off.unlink()


def test_a_batch_line_and_a_spec_take_the_option(tmp_path: Path) -> None:
    line = {"protocol": "agora", "topic": "Adopt a monorepo", "require_reasons": True, "agents": AGENT}
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({**line, "root": str(tmp_path)}) + "\n", encoding="utf-8")
    done = moot("run", "--batch", str(batch), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    row = json.loads(done.stdout.splitlines()[-1])
    assert row["outcome"] == "CONSENSUS"
    assert REASONS_LINE in (tmp_path / row["artifact"]).read_text(encoding="utf-8").splitlines()
    driver = build_driver({**line, "topic": "Tabs or spaces"}, tmp_path, "2026-11-27T09:00:00Z")
    assert driver.config.require_reasons  # type: ignore[attr-defined]


def test_a_drone_that_counters_the_proposal_it_backed_needs_a_reason(tmp_path: Path) -> None:
    head = (EXAMPLES / "invalid" / "AGORA_STANCE_REASON.md").read_text(encoding="utf-8").split("## Turn 2")[0]
    turns = [
        ("skeptic", {"signal": "approve", "message": "Strict parsing it is.", "target": "turn-1"}),
        ("advocate", {"signal": "defer", "message": "Let us hear the skeptic once more.", "target": None}),
        ("skeptic", {"signal": "counter", "message": "On second thought, no.", "target": "proposal-advocate"}),
    ]
    text = head
    for number, (role, reply) in enumerate(turns, start=2):
        body = json.dumps({**reply, "confidence": 0.6, "evidence": []})
        text += f"## Turn {number} — {role}\n\n```json\n{body}\n```\n\n"
    path = tmp_path / "debate.md"
    path.write_text(text, encoding="utf-8")
    # Turn 2 approves before the skeptic backed anything; turn 4 then counters what it approved.
    found = [(v.rule, v.turn) for v in check_path(path).violations]
    assert ("AGORA_STANCE_REASON", 4) in found and ("AGORA_STANCE_REASON", 2) not in found


def test_in_a_grounded_debate_evidence_the_sources_verify_is_reason_enough(tmp_path: Path) -> None:
    # A grounded record's items must verify in its sources (CITATION_* otherwise), so re-citing a verified fact
    # that convinced the drone counts; the same turns without sources need an item no earlier turn cites.
    (tmp_path / "notes.md").write_text("Two outages came from silently accepted input.\n", encoding="utf-8")
    item = {"source": "notes.md:1", "content": "Two outages came from silently accepted input.", "confidence": 0.8}
    text = (EXAMPLES / "invalid" / "AGORA_STANCE_REASON.md").read_text(encoding="utf-8")
    parts = text.split("```json\n")
    for index in (1, 4):  # turn 1 and turn 4 cite the same line of notes.md
        reply = json.loads(parts[index].split("\n```")[0])
        parts[index] = json.dumps({**reply, "evidence": [item]}) + "\n```" + parts[index].split("\n```", 1)[1]
    ungrounded = "```json\n".join(parts)
    grounded = ungrounded.replace("- Participants:", "- Sources: `notes.md`\n- Participants:")
    for name, body, broken in (("grounded.md", grounded, False), ("ungrounded.md", ungrounded, True)):
        path = tmp_path / name
        path.write_text(body, encoding="utf-8")
        rules = [v.rule for v in check_path(path).violations if v.is_error]
        assert ("AGORA_STANCE_REASON" in rules) is broken, (name, rules)
        assert not [rule for rule in rules if rule != "AGORA_STANCE_REASON"], rules

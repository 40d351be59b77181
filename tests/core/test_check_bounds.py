"""``moot check`` on records near the 16 MiB cap that repeat a valid record's turns by the thousand: it finishes
(a duel's and a council's took minutes, each turn checked against every earlier one) and says exactly what is
wrong with them; past a protocol's last possible turn, a hundred turns are named one by one and the rest together."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from moot.core.files import MAX_ARTIFACT_BYTES
from moot.core.machine import TURNS_PAST_THE_END

EXAMPLES = Path(__file__).resolve().parents[1]
# Generous for a loaded machine; the quadratic checks took far longer on these records.
FINISHES_WITHIN_S = 180


def near_the_cap(example: str, target: Path, turn: str, stop: str) -> int:
    """``example``'s header, then its turns again and again (renumbered) up to 64 KiB under the cap; returns how
    many turns were written."""
    text = (EXAMPLES / example).read_text(encoding="utf-8").split(stop)[0]
    starts = [m.start() for m in re.finditer(turn, text, re.MULTILINE)]
    header, turns = text[: starts[0]], [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    parts, size = [header], len(header.encode())
    while size < MAX_ARTIFACT_BYTES - 64 * 1024:
        piece = re.sub(r"Turn \d+", f"Turn {len(parts)}", turns[(len(parts) - 1) % len(turns)], count=1)
        parts.append(piece)
        size += len(piece.encode())
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(parts), encoding="utf-8")
    return len(parts) - 1


def checked(record: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "moot", "check", "--json", str(record)],
        capture_output=True,
        text=True,
        timeout=FINISHES_WITHIN_S,
    )
    assert done.returncode == 1, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def rules(report: dict[str, object]) -> dict[str, int]:
    found: dict[str, int] = {}
    for violation in report["violations"]:  # type: ignore[attr-defined]
        found[violation["rule"]] = found.get(violation["rule"], 0) + 1
    return found


def test_a_duel_of_thousands_of_turns_is_checked_and_each_turn_past_the_limit_is_named(tmp_path: Path) -> None:
    record = tmp_path / "debates" / "2026-04-25-shared-cache.md"
    written = near_the_cap("duel/examples/valid/consensus-six-turns.md", record, "^## Turn ", "## Terminal Conclusion")
    report = checked(record)
    found = rules(report)
    assert found["DUEL_MAX_TURNS"] == written - 6  # one per turn past the sixth, none for the first six
    assert report["state"]["turns"] == written  # type: ignore[index]
    turns = sorted(v["turn"] for v in report["violations"] if v["rule"] == "DUEL_MAX_TURNS")  # type: ignore[attr-defined]
    assert turns == list(range(7, written + 1))


def test_a_council_repeating_its_answers_thousands_of_times_is_checked_and_stays_in_stage_one(tmp_path: Path) -> None:
    record = tmp_path / ".council" / "shared-cache.md"
    written = near_the_cap("council/examples/valid/synthesized-two-members.md", record, "^## Stage 1", "## Stage 2")
    report = checked(record)
    # The two members answered; every later answer is out of place and does not count as one. A council of two
    # holds at most six sections: the hundred after those are named one by one, the rest in one violation.
    assert rules(report) == {"COUNCIL_STAGE_ORDER": 6 - 2 + TURNS_PAST_THE_END + 1}
    rest = report["violations"][-1]  # type: ignore[index]
    assert rest["message"].startswith(f"{written - 6 - TURNS_PAST_THE_END:,} more sections, from this line on")
    assert rest["line"] is not None
    summary = report["state"]
    assert summary["detail"]["valid_answers"] == 2 and summary["round"] == 2  # type: ignore[index]


def test_an_agora_debate_of_thousands_of_turns_after_its_consensus_is_checked(tmp_path: Path) -> None:
    record = tmp_path / ".agora" / "dispatch.md"
    written = near_the_cap("agora/examples/valid/consensus-fact-based.md", record, "^## Turn ", "## Outcome")
    report = checked(record)
    # Consensus at turn 4 of at most 20: the turns up to a hundred past the limit are named one by one, the rest
    # in one violation, and every turn is counted.
    assert rules(report) == {"AGORA_AFTER_OUTCOME": 20 + TURNS_PAST_THE_END - 4 + 1}
    rest = report["violations"][-1]  # type: ignore[index]
    assert rest["message"] == (
        f"turns {20 + TURNS_PAST_THE_END + 1:,} to {written:,} also come after the debate's end (its limit is 20 "
        "turns); remove them."
    )
    assert report["state"]["outcome"]["name"] == "CONSENSUS"  # type: ignore[index]
    assert report["state"]["turns"] == written  # type: ignore[index]

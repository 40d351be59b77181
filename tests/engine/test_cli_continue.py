"""``moot continue RECORD --question …``: a follow-up is a new deliberation of the same protocol and panel that
carries the earlier question and answer, names the earlier record, and is listed beside it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from engine_helpers import run_moot

from moot.detect import check_path
from moot.followup import followups

AGENT = f"cmd:{sys.executable} {Path(__file__).parents[1] / 'reliability' / 'protocol_agent.py'}"
MEMBERS = [arg for name in ("ada", "bo", "cy") for arg in ("--member", f"{name}={AGENT}")]
FIRST = {
    "council": ["council", "--question", "Should tenants share one cache?", *MEMBERS],
    "critique": ["critique", "--topic", "Adopt a monorepo", "--max-rounds", "4", "--agents", AGENT],
}


@pytest.mark.parametrize("protocol", list(FIRST))
def test_a_follow_up_starts_from_the_answer_with_the_same_panel_and_both_records_check(
    protocol: str, tmp_path: Path
) -> None:
    first = run_moot("run", *FIRST[protocol], "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    earlier = tmp_path / json.loads(first.stdout)["artifact"]
    answer = json.loads(run_moot("show", str(earlier), "--json", cwd=tmp_path).stdout)["decision"]["decided"]["text"]

    later_run = run_moot("continue", str(earlier), "--question", "What would make that wrong?", "--json", cwd=tmp_path)
    assert later_run.returncode == 0, later_run.stderr
    later = tmp_path / json.loads(later_run.stdout)["artifact"]
    text = later.read_text(encoding="utf-8")
    follows = earlier.relative_to(tmp_path).as_posix()
    assert later != earlier and "What would make that wrong?" in text and follows in text and answer in text
    assert check_path(later).exit_code == 0 and check_path(earlier).exit_code == 0  # the earlier one untouched
    assert [row["record"] for row in followups(earlier)] == [later.relative_to(tmp_path).as_posix()]
    shown = run_moot("show", str(earlier), cwd=tmp_path).stdout
    assert "follow-up:" in shown and "What would make that wrong?" in shown


def test_a_record_without_an_answer_or_a_protocol_without_questions_is_refused_in_one_sentence(tmp_path: Path) -> None:
    short = run_moot("run", "critique", "--topic", "T", "--max-rounds", "1", "--agents", "cmd:false", cwd=tmp_path)
    assert short.returncode != 0
    record = next((tmp_path / ".dialogues").glob("*.md"))
    refused = run_moot("continue", str(record), "--question", "And then?", cwd=tmp_path)
    assert (
        refused.returncode == 2 and "has no answer to follow up" in refused.stderr and "Traceback" not in refused.stderr
    )

    (tmp_path / "design.md").write_text("# Cache\n\n## Goals\nFast.\n", encoding="utf-8")
    run_moot("run", "duel", "design.md", "--agents", "cmd:false", cwd=tmp_path)
    duel = next((tmp_path / "debates").glob("*.md"))
    refused = run_moot("continue", str(duel), "--question", "And then?", cwd=tmp_path)
    assert refused.returncode == 2 and "takes no follow-up question" in refused.stderr


def test_what_a_deliberation_left_open_goes_into_its_follow_up_question() -> None:
    from moot.followup import follow_up_question, open_items

    example = Path(__file__).parents[1] / "agora" / "examples" / "valid" / "timeout.md"
    left_open = open_items("agora", example)
    assert len(left_open) == 2  # mono's open proposal, poly's blocking counter
    asked = follow_up_question("Which one now?", ".agora/timeout.md", "Mono or poly?", "No answer yet.", left_open)
    assert asked.startswith("Which one now?") and "(.agora/timeout.md)" in asked
    assert all(item in asked for item in left_open) and "It left open: " in asked


def test_an_agora_without_an_answer_says_how_to_go_on(tmp_path: Path) -> None:
    # Its TIMEOUT is final (resume refuses it): the way on is a new debate with a higher limit.
    (tmp_path / ".agora").mkdir()
    ended = tmp_path / ".agora" / "timeout.md"
    ended.write_bytes((Path(__file__).parents[1] / "agora" / "examples" / "valid" / "timeout.md").read_bytes())
    refused = run_moot("continue", str(ended), "--question", "And then?", cwd=tmp_path)
    assert refused.returncode == 2 and "it ended TIMEOUT" in refused.stderr
    assert "`moot run agora --max-turns N`" in refused.stderr and "resume it" not in refused.stderr

    # Halted at moot's own turn timeout: resume it with a longer one.
    topic = ["--topic", "Strategy or Decorator?", "--agents", "cmd:sleep 5", "--turn-timeout", "1"]
    assert run_moot("run", "agora", *topic, cwd=tmp_path).returncode == 1
    halted = tmp_path / ".agora" / "strategy-or-decorator.md"
    refused = run_moot("continue", str(halted), "--question", "And then?", cwd=tmp_path)
    assert refused.returncode == 2 and "turn timeout of 1 s" in refused.stderr and "--turn-timeout 60" in refused.stderr
    assert f"`moot resume {halted}`" in refused.stderr

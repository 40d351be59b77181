"""A subject too long for a deliberation, from the command line and a batch file: one sentence naming the limit,
exit 2, and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from engine_helpers import run_moot

from moot.limits import MAX_SUBJECT_CHARS

LONG = "Should we cache? " * (MAX_SUBJECT_CHARS // 17 + 1)  # just over the limit


def test_a_topic_over_the_limit_is_refused_in_one_sentence_and_writes_nothing(
    tmp_path: Path, agreeing_script: Path
) -> None:
    done = run_moot("run", "critique", "--topic", LONG, "--agents", f"script:{agreeing_script}", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    message = done.stderr.strip()
    assert message.count("\n") == 0 and f"{len(LONG):,} characters" in message
    assert f"limit of {MAX_SUBJECT_CHARS:,}" in message and "shorten" in message
    assert not (tmp_path / ".dialogues").exists()
    # At the limit it runs.
    fits = run_moot("run", "critique", "--topic", LONG[:MAX_SUBJECT_CHARS], "--agents", f"script:{agreeing_script}",
                    cwd=tmp_path)  # fmt: skip
    assert fits.returncode == 0, fits.stderr


def test_a_batch_line_with_a_question_over_the_limit_is_reported_and_leaves_no_record(tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    line = {"protocol": "council", "question": LONG, "members": [["a", "script:x"], ["b", "script:y"]]}
    batch.write_text(json.dumps(line) + "\n", encoding="utf-8")
    done = run_moot("run", "--batch", str(batch), cwd=tmp_path)
    reported = json.loads(done.stdout.splitlines()[0])
    assert f"limit of {MAX_SUBJECT_CHARS:,} for a question" in reported["error"]
    assert not (tmp_path / ".council").exists()

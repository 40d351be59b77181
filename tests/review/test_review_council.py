"""`moot review --council` on a real git repository made in the test, with subprocess council members."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_review import repo

import forked_moot
from moot.detect import check_path

__all__ = ["repo"]  # the fixture, shared with test_review

MEMBER = f"cmd:{sys.executable} {Path(__file__).with_name('council_reviewer.py')}"


def review(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return forked_moot.run(["review", *args], cwd=repo, timeout=600, env={**os.environ, **(env or {})})


def test_a_council_that_ranks_the_blocking_review_first_requests_changes(repo: Path) -> None:
    members = [arg for name in ("strict", "lenient", "calm") for arg in ("--member", f"{name}={MEMBER}")]
    done = review(repo, "HEAD~1..HEAD", *members, "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "changes_requested" and report["outcome"] == "SYNTHESIZED"
    assert report["artifact"].startswith(".git/moot/.council/review-of-") and report["turns"] == 7
    comment = report["comment"]
    assert comment.startswith("## moot review (council): changes requested")
    assert "Verdict: changes requested" in comment and "Borda points" in comment
    assert "**lenient** held: a milder view" in comment  # the chairman named the dissent
    record = repo / report["artifact"]
    assert check_path(record).exit_code == 0
    text = record.read_text()
    assert "+    return requests <= cap" in text and "the cap is a parameter" in text  # the diff and the log
    saved = record.with_name(f".{record.name}.review.json")
    assert json.loads(saved.read_text())["verdict"] == "changes_requested"


def test_three_default_reviewers_that_all_approve_exit_0_and_a_second_review_gets_its_own_record(repo: Path) -> None:
    first = review(repo, "--council", "--agents", MEMBER)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("## moot review (council): approve")
    assert "reviewer-a (cmd:" in first.stdout and "reviewer-c (cmd:" in first.stdout
    again = review(repo, "--council", "--agents", MEMBER, "--json")
    assert again.returncode == 0, again.stderr
    records = sorted(p for p in (repo / ".git" / "moot" / ".council").glob("*.md") if not p.name.startswith("."))
    assert len(records) == 2
    assert json.loads(again.stdout)["artifact"] == str(next(r for r in records if "-2-" in r.name).relative_to(repo))


def test_a_synthesis_without_a_verdict_is_an_error_exit_2(repo: Path) -> None:
    done = review(repo, "--council", "--agents", MEMBER, "--json", env={"COUNCIL_REVIEWER_NO_VERDICT": "1"})
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["verdict"] is None and report["outcome"] == "SYNTHESIZED"
    assert "the review failed: the chairman's final answer states no verdict" in done.stderr


def test_council_usage_errors_exit_2_and_leave_nothing(repo: Path) -> None:
    rounds = review(repo, "--council", "--max-rounds", "2", "--agents", MEMBER)
    assert rounds.returncode == 2 and "a council has no rounds" in rounds.stderr
    alone = review(repo, "--member", f"solo={MEMBER}")
    assert alone.returncode == 2 and "at least two members" in alone.stderr
    malformed = review(repo, "--member", "solo")
    assert malformed.returncode == 2 and "NAME=SPEC" in malformed.stderr and "Traceback" not in malformed.stderr
    assert not (repo / ".git" / "moot").exists()


def test_a_degraded_council_does_not_approve_and_says_why_in_json_comment_and_exit_code(repo: Path) -> None:
    broken = f"cmd:{sys.executable} {Path(__file__).parents[1] / 'engine_council' / 'council_member.py'} fail"
    members = ["--member", f"lenient={MEMBER}", "--member", f"calm={MEMBER}", "--member", f"broken={broken}"]
    done = review(repo, "HEAD~1..HEAD", *members, "--json")
    assert done.returncode == 1, done.stderr  # as for changes requested
    report = json.loads(done.stdout)
    assert report["outcome"] == "SYNTHESIZED" and "Verdict: approve" in report["comment"]  # the chairman approved
    assert report["verdict"] == "changes_requested" and report["approved"] is False
    assert report["degraded"] == "broken gave no valid answer (2 of 3 answered)"
    assert "not approved: the council is degraded (broken gave no valid answer" in report["not_approved"]
    assert report["reason"] == report["not_approved"]
    assert report["comment"].startswith("## moot review (council): changes requested")
    assert "**Not approved: the council is degraded (broken gave no valid answer" in report["comment"]
    assert "not approved" in done.stderr

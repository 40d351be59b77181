"""`moot review` on a real git repository made in the test, with script agents and the embedded model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import forked_moot
from forked_moot import MOOT
from moot.detect import check_path
from moot.protocols.critique.review import start_review
from moot.review import collect_change


def reply(message: str, status: str = "AWAITING", summary: str = "") -> str:
    return json.dumps({"message": message, "status": status, "summary": summary})


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "Dev")
    (repo / "rate.py").write_text("def limit(requests):\n    return requests < 100\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rate limit: a fixed cap")
    (repo / "rate.py").write_text("def limit(requests, cap=100):\n    return requests <= cap\n")
    git(repo, "commit", "-q", "-am", "rate limit: the cap is a parameter")
    return repo


def script(tmp_path: Path, rows: list[tuple[str, str]]) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps({"role": role, "reply": text}) + "\n" for role, text in rows))
    return f"script:{path}"


def review(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return forked_moot.run(["review", *args], cwd=repo, timeout=600)


APPROVING = [
    ("author", reply("The cap becomes a parameter with the old default, and the bound is now inclusive.")),
    ("reviewer", reply("Inclusive at the cap matches the documented limit; no blocking issue.", "PROPOSING_DONE")),
    ("author", reply("Agreed.", "DONE", "Approved: the cap is a parameter, inclusive at 100 by default.")),
]


def test_an_approving_review_exits_0_with_the_stable_json(repo: Path, tmp_path: Path) -> None:
    done = review(repo, "HEAD~1..HEAD", "--agents", script(tmp_path, APPROVING), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "approve"
    assert {"verdict", "comment", "artifact"} <= report.keys()
    assert report["comment"].startswith("## moot review: approve")
    assert "the bound is now inclusive" in report["comment"] and "Approved: the cap is a parameter" in report["comment"]
    record = repo / report["artifact"]
    assert check_path(record).exit_code == 0
    assert "Template: review" in record.read_text()
    saved = record.with_name(f".{record.name}.review.json")
    assert json.loads(saved.read_text())["verdict"] == "approve"
    assert record.with_name(f".{record.name}.review.md").read_text() == report["comment"]


def test_a_review_with_blocking_issues_exits_1(repo: Path, tmp_path: Path) -> None:
    rows = [
        ("author", reply("The cap is a parameter now.")),
        ("reviewer", reply("Blocking: rate.py line 2 changes < to <=, letting request 100 through; add a test.")),
    ]
    done = review(repo, "HEAD~1..HEAD", "--agents", script(tmp_path, rows), "--max-rounds", "1", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "changes_requested" and report["outcome"] == "MAX_ROUNDS"
    assert (
        "## moot review: changes requested" in report["comment"] and "letting request 100 through" in report["comment"]
    )
    # The way on that the comment names works: a new review of the same range with more rounds (the diff is the
    # review run's own, so a resumed dialogue would go on without it).
    base, head = git(repo, "rev-parse", "--short", "HEAD~1").strip(), git(repo, "rev-parse", "--short", "HEAD").strip()
    again = f"moot review {base}..{head} --max-rounds 6"
    assert f"`{again}`" in report["comment"] and again in report["reason"] and "moot resume" not in report["comment"]
    longer = review(repo, *again.split()[2:], "--agents", script(tmp_path, APPROVING), "--json")
    assert longer.returncode == 0 and json.loads(longer.stdout)["range"] == f"{base}..{head}", longer.stderr


def test_without_json_the_comment_is_printed_and_the_exit_code_is_the_verdict(repo: Path, tmp_path: Path) -> None:
    rows = [
        ("author", reply("The cap is a parameter now.")),
        ("reviewer", reply("We cannot agree on the boundary; a person must decide.", "STUCK")),
    ]
    done = review(repo, "HEAD~1..HEAD", "--agents", script(tmp_path, rows))
    assert done.returncode == 1
    assert done.stdout.startswith("## moot review: changes requested") and "STUCK" in done.stdout


def test_a_participant_that_fails_is_an_error_exit_2(repo: Path, tmp_path: Path) -> None:
    rows = [("author", "not a turn")] * 3
    done = review(repo, "HEAD~1..HEAD", "--agents", script(tmp_path, rows), "--json", "--repairs", "0")
    assert done.returncode == 2
    assert json.loads(done.stdout)["verdict"] is None and "the review failed" in done.stderr


def one_sentence(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused review prints: exit 2, no traceback, none of git's usage text."""
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "<revision>" not in done.stderr and "Use '--'" not in done.stderr and "fatal:" not in done.stderr
    return done.stderr


def test_usage_errors_exit_2(repo: Path, tmp_path: Path) -> None:
    outside = one_sentence(review(tmp_path, "--agents", script(tmp_path, APPROVING)))
    assert "is not inside a git repository" in outside and "range" not in outside
    empty = review(repo, "HEAD..HEAD", "--agents", script(tmp_path, APPROVING))
    assert empty.returncode == 2 and "nothing to review" in empty.stderr
    bad = one_sentence(review(repo, "nope..HEAD", "--agents", script(tmp_path, APPROVING)))
    assert "'nope' in 'nope..HEAD' names no commit here" in bad
    assert "'main~7' names no commit here" in one_sentence(review(repo, "main~7", "--agents", script(tmp_path, [])))
    option = one_sentence(review(repo, "--agents", script(tmp_path, []), "--", "--output=x..HEAD"))
    assert "'--output=x' in '--output=x..HEAD' names no commit here" in option  # never an option of git's
    unknown = review(repo, "--agents", "nonsense:x")
    assert unknown.returncode == 2 and "nonsense" in unknown.stderr
    assert not (repo / ".git" / "moot").exists()  # a refused review leaves no record behind
    assert git(repo, "status", "--porcelain") == "" and not (tmp_path / "x..HEAD").exists()


def test_a_review_leaves_the_repository_clean_and_keeps_its_records_in_the_git_dir(repo: Path, tmp_path: Path) -> None:
    for _ in range(2):
        done = review(repo, "HEAD~1..HEAD", "--agents", script(tmp_path, APPROVING), "--json")
        assert done.returncode == 0, done.stderr
        assert git(repo, "status", "--porcelain", "--ignored") == ""
    record = repo / json.loads(done.stdout)["artifact"]
    assert record.parent == repo / ".git" / "moot" / ".dialogues" and check_path(record).exit_code == 0
    listed = subprocess.run([*MOOT, "ls", ".git/moot", "--json"], cwd=repo, capture_output=True, text=True)
    assert len(json.loads(listed.stdout)) == 2  # the second review of the range got its own record
    elsewhere = tmp_path / "reviews"
    done = review(repo, "HEAD~1..HEAD", "--agents", script(tmp_path, APPROVING), "--records", str(elsewhere), "--json")
    assert done.returncode == 0 and Path(json.loads(done.stdout)["artifact"]).parent == elsewhere / ".dialogues"


def test_the_first_commit_is_reviewed_against_the_empty_tree(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    none = one_sentence(review(fresh, "--agents", script(tmp_path, APPROVING)))
    assert "has no commit yet" in none
    (fresh / "rate.py").write_text("def limit(requests):\n    return requests < 100\n")
    git(fresh, "add", "-A")
    git(fresh, "-c", "user.email=dev@example.com", "-c", "user.name=Dev", "commit", "-q", "-m", "rate limit")
    done = review(fresh, "--agents", script(tmp_path, APPROVING), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["range"].endswith("(the first commit)") and report["files"] == 1
    assert git(fresh, "status", "--porcelain") == ""


def test_default_range_is_the_uncommitted_change_else_the_last_commit(repo: Path) -> None:
    last = collect_change(repo, None)
    assert "the cap is a parameter" in last.log and "+    return requests <= cap" in last.diff
    (repo / "rate.py").write_text("def limit(requests, cap=50):\n    return requests <= cap\n")
    pending = collect_change(repo, None)
    assert pending.label.startswith("uncommitted changes against") and "cap=50" in pending.diff
    one_commit = collect_change(repo, "HEAD")
    assert one_commit.diff == last.diff


def test_both_roles_see_the_diff_and_only_the_author_the_commit_messages(repo: Path) -> None:
    driver = start_review(
        repo, collect_change(repo, "HEAD~1..HEAD"), diff_limit=10_000, max_rounds=2, started="2026-11-24 21:30"
    )
    author, reviewer = driver.request_for("author"), driver.request_for("reviewer")
    assert "+    return requests <= cap" in author.prompt and "+    return requests <= cap" in reviewer.prompt
    assert "the cap is a parameter" in author.prompt and "the cap is a parameter" not in reviewer.prompt
    assert "no blocking issue remains" in (reviewer.system or "")


@pytest.mark.slow
def test_a_review_by_the_embedded_model_ends_in_a_verdict(repo: Path) -> None:
    done = review(repo, "HEAD~1..HEAD", "--agents", "local", "--max-rounds", "1", "--json")
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] in ("approve", "changes_requested")
    assert report["comment"].startswith("## moot review:") and report["turns"] >= 2
    assert check_path(repo / report["artifact"]).exit_code == 0

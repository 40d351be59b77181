"""The council strategy of `moot eval`, offline: real subprocess agents whose every preference is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eval_run import AGENT, by_name, moot

from moot.errors import UserError
from moot.eval.strategies import parse_strategy, read_ranking

# The chairman (the first member) and bad2 answer one too many; good answers right. In review, bad and bad2
# rank the wrong answers first and good the right ones: good is shown only wrong answers and gives way.
TEAM = ["--agent", f"bad={AGENT}", "--agent", f"good={AGENT}", "--agent", f"bad2={AGENT}"]
TASKS = ["--tasks", "arithmetic", "--difficulty", "2", "--limit", "4", "--seed", "3"]


def test_a_council_talks_its_one_right_member_round_and_sc_match_spends_what_it_spent(tmp_path: Path) -> None:
    log = tmp_path / "asked.jsonl"
    args = ["eval", *TASKS, "--strategy", "council:3", "--strategy", "sc:match", *TEAM, "--json"]
    done = moot(*args, cwd=tmp_path, env={"EVAL_SOLVER_LOG": str(log)})
    assert done.returncode == 0, done.stderr
    rows = by_name(json.loads(done.stdout))
    council = rows["council:3"]
    assert (council["n"], council["accuracy"], council["unanswered"], council["no_quorum"]) == (4, 0.0, 0, 0)
    # Each task: good changes its right answer to the others' wrong one when it reviews (toward the majority
    # of the others and toward the chairman's answer); nobody else changes; all end on one answer.
    assert council["flips"] == {"correct_to_incorrect": 4, "incorrect_to_correct": 0}
    assert council["conformity"] == {
        "changes": 4,
        "toward_majority": 4,
        "toward_chairman": 4,
        "collapsed_tasks": 4,
        "unanimous_at_end": 4,
        "synthesis_is_top_ranked": 4,
        "synthesis_is_first_majority": 4,
    }
    # sc:match samples the first agent K times, K chosen so it spends what the council spent per task.
    matched = rows["sc:match"]
    assert matched["k"] >= 5
    assert matched["mean_tokens"] == pytest.approx(council["mean_tokens"], rel=0.15)
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    reviews = [a["prompt"] for a in asked if "Ranking: Answer A" in a["prompt"]]
    syntheses = [a for a in asked if a["prompt"].startswith("You chair a council.")]
    assert len(reviews) == 3 * 4 and len(syntheses) == 4
    # A reviewer sees two anonymous answers, never a member's name; the chairman (bad) sees the Borda ranking.
    assert all("Answer B:" in p and "Answer C:" not in p and "m1" not in p and "bad" not in p for p in reviews)
    assert {a["role"] for a in syntheses} == {"bad"}
    assert all("The aggregate ranking:\n1. m" in a["prompt"] and "Borda points" in a["prompt"] for a in syntheses)
    results = [json.loads(line) for line in (tmp_path / "moot-eval" / "results.jsonl").read_text().splitlines()]
    record = next(r for r in results if r["kind"] == "task" and r["strategy"] == "council:3")
    assert record["council"]["reviews"]["m2"][0] in ("m1", "m3")  # good put a wrong answer first: all were wrong
    assert record["council"]["ranking"][-1] == ["m2", 0]  # ranked last by both others
    # Run again: everything is recorded, nobody is asked anything.
    again = moot(*args, cwd=tmp_path, env={"EVAL_SOLVER_LOG": str(log)})
    assert again.returncode == 0, again.stderr
    assert len(log.read_text().splitlines()) == len(asked)
    assert "| council:3 |" in (tmp_path / "moot-eval" / "report.md").read_text()


def test_council_strategy_names_and_their_errors() -> None:
    assert parse_strategy("council").agents == 3 and parse_strategy("council:5").kind == "council"
    with pytest.raises(UserError, match="2 to 26 members"):
        parse_strategy("council:1")


def test_a_review_is_read_from_its_last_ranking_line() -> None:
    assert read_ranking("A is wrong.\nRanking: Answer B, Answer A", 2) == [1, 0]
    assert read_ranking("Ranking: A\nOn second thought:\nranking: c, a, b", 3) == [2, 0, 1]
    assert read_ranking("Ranking: Answer B", 2) is None  # every shown answer, once
    assert read_ranking("Ranking: Answer B, Answer B", 2) is None
    assert read_ranking("B is best, then A.", 2) is None

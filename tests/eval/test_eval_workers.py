"""`moot eval --workers N`: the tasks dealt to N processes give the lines and the report of one process."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from test_eval_run import AGENT, STRATEGIES, TASKS, TEAM, check_known_outcomes, moot

from moot.eval.run import EvalOptions, run_eval

TIMING = {"latency_s", "wall_s", "mean_wall_s", "at"}  # what differs between any two runs, one process or several


def untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if key not in TIMING and key != "files"}
    if isinstance(value, list):
        return [untimed(item) for item in value]
    return value


def lines(directory: Path) -> Counter[str]:
    text = (directory / "moot-eval" / "results.jsonl").read_text()
    return Counter(json.dumps(untimed(json.loads(line)), sort_keys=True) for line in text.splitlines())


def test_two_workers_give_the_report_and_the_lines_of_one_and_a_resume_asks_only_what_is_missing(
    tmp_path: Path,
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    alone = moot("eval", *TASKS, *STRATEGIES, *TEAM, "--concurrency", "2", "--json", cwd=one)
    assert alone.returncode == 0, alone.stderr
    # Half done first (single only, one process), then everything with two workers: a resume.
    first = moot("eval", *TASKS, "--strategy", "single", *TEAM, "--json", cwd=two)
    assert first.returncode == 0, first.stderr
    asked_first = sum(1 for line in lines(two).elements() if '"kind": "call"' in line)
    log = two / "asked.jsonl"
    shared = moot(
        "eval", *TASKS, *STRATEGIES, *TEAM, "--concurrency", "2", "--workers", "2", "--json",
        cwd=two, env={"EVAL_SOLVER_LOG": str(log)},
    )  # fmt: skip
    assert shared.returncode == 0, shared.stderr
    summary = json.loads(shared.stdout)
    check_known_outcomes(summary)
    assert untimed(summary) == untimed(json.loads(alone.stdout))
    assert untimed(json.loads((two / "moot-eval" / "report.json").read_text())) == untimed(summary)
    sessions = '"kind": "session"'
    assert +Counter({k: n for k, n in lines(two).items() if sessions not in k}) == +Counter(
        {k: n for k, n in lines(one).items() if sessions not in k}
    )  # the same lines, each once (only their order differs)
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    every_call = sum(1 for line in lines(two).elements() if '"kind": "call"' in line)
    assert len(asked) == every_call - asked_first  # nothing recorded by the first run was asked again
    # two worker processes asked the agents in each phase: every strategy, then sc:match once its K is fitted
    assert len({row["asker"] for row in asked}) == 4


def test_the_progress_of_every_worker_reaches_the_caller(tmp_path: Path) -> None:
    options = EvalOptions(
        tasks="arithmetic", strategies=["single", "sc:2"], agents={"agent": AGENT}, out=tmp_path / "out",
        limit=4, workers=2,
    )  # fmt: skip
    totals: list[int] = []
    done: list[None] = []
    summary = run_eval(options, on_start=totals.append, on_task_done=lambda: done.append(None))
    assert totals == [8] and len(done) == 8
    assert [row["n"] for row in summary["strategies"]] == [4, 4]

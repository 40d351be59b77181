"""`moot eval` end to end, offline: real subprocess agents (cmd:), the report files, resume after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from moot.eval.store import Store

SOLVER = Path(__file__).with_name("eval_solver.py")
AGENT = f"cmd:{sys.executable} {SOLVER}"
TEAM = ["--agent", f"good={AGENT}", "--agent", f"bad={AGENT}", "--agent", f"bad2={AGENT}"]
STRATEGIES = ["--strategy", "single", "--strategy", "sc:2", "--strategy", "vote", "--strategy", "debate:3x1"]
TASKS = ["--tasks", "arithmetic", "--difficulty", "2", "--limit", "6", "--seed", "7"]
CALLS = 6 * (1 + 2 + 3 + 3 * 2)


def moot(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moot", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def by_name(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in summary["strategies"]}


def check_known_outcomes(summary: dict[str, Any]) -> None:
    """good answers right, bad and bad2 one too many; in a debate the bad ones adopt good's answer."""
    rows = by_name(summary)
    assert summary["n_tasks"] == 6 and summary["baseline"] == "sc:2"
    assert [(n, rows[n]["accuracy"], rows[n]["n"]) for n in rows] == [
        ("single", 1.0, 6),
        ("sc:2", 1.0, 6),
        ("vote", 0.0, 6),  # good is outvoted by the two bad agents
        ("debate:3x1", 1.0, 6),  # ... but the debate converts them
    ]
    assert rows["vote"]["ci95"] == pytest.approx([0.0, 0.3903], abs=1e-4)
    assert rows["vote"]["mcnemar"] == {
        "against": "sc:2",
        "only_baseline_correct": 6,
        "only_this_correct": 0,
        "p_value": pytest.approx(2 / 64),
        "test": "exact binomial",
    }
    assert rows["debate:3x1"]["flips"] == {"correct_to_incorrect": 0, "incorrect_to_correct": 12}
    assert rows["debate:3x1"]["conformity"]["unanimous_at_end"] == 6
    assert rows["sc:2"]["mean_tokens"] == pytest.approx(2 * rows["single"]["mean_tokens"], rel=0.05)
    assert all(row["tokens_estimated"] for row in rows.values())  # commands report no usage


def test_eval_end_to_end_writes_json_report_and_plot(tmp_path: Path) -> None:
    done = moot("eval", *TASKS, *STRATEGIES, *TEAM, "--concurrency", "4", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    check_known_outcomes(summary)
    out = tmp_path / "moot-eval"
    assert json.loads((out / "report.json").read_text()) == summary
    report = (out / "report.md").read_text()
    assert "| vote | 0.0% [0.0%, 39.0%] |" in report and "6:0, p = 0.0312" in report
    plot = (out / "accuracy-tokens.svg").read_text()
    assert plot.lstrip().startswith("<?xml") and "<svg" in plot and "debate:3x1" in plot
    # A second run finds every answer recorded and asks nobody anything.
    log = tmp_path / "asked.jsonl"
    again = moot("eval", *TASKS, *STRATEGIES, *TEAM, "--json", cwd=tmp_path, env={"EVAL_SOLVER_LOG": str(log)})
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["strategies"] == summary["strategies"]
    assert not log.exists()


def test_eval_resumes_after_sigkill_without_asking_a_recorded_call_again(tmp_path: Path) -> None:
    log = tmp_path / "asked.jsonl"
    env = {**os.environ, "EVAL_SOLVER_LOG": str(log), "EVAL_SOLVER_DELAY": "0.3"}
    args = [sys.executable, "-m", "moot", "eval", *TASKS, *STRATEGIES, *TEAM, "--json"]
    process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = tmp_path / "moot-eval" / "results.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if results.exists() and results.read_text().count('"kind": "task"') >= 8:
            break
        time.sleep(0.1)
    assert process.poll() is None, "the eval finished before it could be killed; make the solver slower"
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(3)  # an agent command in flight runs in its own session and may still write its log line
    recorded_calls = sum(1 for line in results.read_text().splitlines() if '"kind": "call"' in line)
    asked_before = len(log.read_text().splitlines())
    assert recorded_calls <= asked_before <= recorded_calls + 1  # one at a time: at most one call was in flight
    done = moot("eval", *TASKS, *STRATEGIES, *TEAM, "--json", cwd=tmp_path, env={"EVAL_SOLVER_LOG": str(log)})
    assert done.returncode == 0, done.stderr
    check_known_outcomes(json.loads(done.stdout))
    # 6 single + 12 sc:2 + 18 vote + 36 debate calls in all: the rerun asked exactly the ones not recorded.
    asked_after = len(log.read_text().splitlines()) - asked_before
    assert asked_after == CALLS - recorded_calls


def test_a_line_torn_by_a_kill_is_cut_off_and_the_next_append_reads_back(tmp_path: Path) -> None:
    whole = {"kind": "call", "strategy": "single", "task": "t1", "call": "s1", "answer": "3"}
    (tmp_path / "results.jsonl").write_text(json.dumps(whole) + "\n" + '{"kind": "call", "strat')
    store = Store(tmp_path)
    store.open({"tasks": "x"})
    assert list(store.calls) == [("single", "t1", "s1")]
    store.append({**whole, "task": "t2"})
    reopened = Store(tmp_path)
    reopened.open({"tasks": "x"})
    assert list(reopened.calls) == [("single", "t1", "s1"), ("single", "t2", "s1")]


def test_without_matplotlib_everything_but_the_plot_is_written(tmp_path: Path) -> None:
    args = ["eval", "--tasks", "arithmetic", "--limit", "2", "--strategy", "single", "--agents", AGENT]
    blocked = f"import sys; sys.modules['matplotlib'] = None; from moot.cli import main; main({args!r})"
    done = subprocess.run([sys.executable, "-c", blocked], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "no plot: pip install 'moot[eval]'" in done.stdout and "| single |" in done.stdout
    out = tmp_path / "moot-eval"
    assert (out / "report.json").is_file() and (out / "report.md").is_file()
    assert not (out / "accuracy-tokens.svg").exists()

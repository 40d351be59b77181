"""`moot eval` end to end, offline: real subprocess agents (cmd:), the verdicts, resume, failures and costs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import forked_moot
from moot.agents import AgentReply, FunctionAgent
from moot.agents.base import AgentRequest
from moot.eval.runner import call
from moot.eval.store import Store
from moot.eval.tasks import NUMBER

SOLVER = Path(__file__).with_name("eval_solver.py")
AGENT = f"cmd:{sys.executable} {SOLVER}"
TEAM = ["--agent", f"good={AGENT}", "--agent", f"bad={AGENT}", "--agent", f"bad2={AGENT}"]
STRATEGIES = ["--strategy", "single", "--strategy", "sc:2", "--strategy", "vote", "--strategy", "debate:3x1"]
TASKS = ["--tasks", "arithmetic", "--difficulty", "2", "--limit", "6", "--seed", "7"]


def moot(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return forked_moot.run(args, cwd=cwd, timeout=600, env={**os.environ, **(env or {})})


def by_name(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in summary["strategies"]}


def results(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "moot-eval" / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def check_known_outcomes(summary: dict[str, Any]) -> None:
    """good answers right, bad and bad2 one too many; in a debate the bad ones adopt good's answer."""
    rows = by_name(summary)
    assert summary["n_tasks"] == 6
    assert [(n, rows[n]["accuracy"], rows[n]["n"]) for n in rows] == [
        ("single", 1.0, 6),
        ("sc:2", 1.0, 6),
        ("vote", 0.0, 6),  # good is outvoted by the two bad agents
        ("debate:3x1", 1.0, 6),  # ... but the debate converts them
        ("sc:match=debate:3x1", 0.0, 6),  # added: its openings (1 right, 2 wrong) and fresh samples, outvoted
    ]
    assert rows["sc:match=debate:3x1"]["added"] and not rows["debate:3x1"]["added"]
    assert rows["vote"]["ci95"] == pytest.approx([0.0, 0.3903], abs=1e-4)
    debate = rows["debate:3x1"]
    assert debate["label"] == "debate:3x1 (free-text baseline)"
    assert [r["accuracy"] for r in debate["rounds"]] == [0.0, 1.0] and debate["round0_vote_accuracy"] == 0.0
    flips = debate["flips"]
    assert (flips["incorrect_to_correct"], flips["from_other"], flips["correct_to_incorrect"]) == (12, 12, 0)
    assert flips["per_model"]["bad"]["incorrect_to_correct"] == 6 and flips["per_model"]["good"]["from_correct"] == 6
    assert all(row["cost"]["estimated"] for row in rows.values())  # commands report no usage


def verdicts_of(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["baseline"]: row for row in summary["verdicts"]}


def test_the_debate_is_compared_with_single_its_vote_and_the_self_consistency_of_its_cost(tmp_path: Path) -> None:
    done = moot("eval", *TASKS, *STRATEGIES, *TEAM, "--concurrency", "4", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    check_known_outcomes(summary)
    verdicts = verdicts_of(summary)
    assert list(verdicts) == ["single", "best member (good)", "its round-0 vote", "sc:match=debate:3x1"]
    against_sc = verdicts["sc:match=debate:3x1"]
    assert (against_sc["difference"], against_sc["only_deliberation"], against_sc["only_baseline"]) == (1.0, 6, 0)
    assert against_sc["p_value"] == pytest.approx(2 / 64) and against_sc["p_holm"] == pytest.approx(
        4 * 2 / 64
    )  # two at 2/64 of four
    assert against_sc["ci95"][0] > 0 and against_sc["verdict"].startswith("no detectable difference")  # n = 6
    assert verdicts["single"]["verdict"] == "no detectable difference from single at n = 6 (could detect ±47 points)"
    (split,) = summary["split"]
    assert (split["voting"]["difference"], split["discussion"]["difference"]) == (-1.0, 1.0)
    out = tmp_path / "moot-eval"
    assert json.loads((out / "report.json").read_text()) == summary
    report = (out / "report.md").read_text()
    assert "## Verdicts" in report and "| debate:3x1 | sc:match=debate:3x1 | +100.0 [" in report
    plot = (out / "eval.svg").read_text()
    assert "<svg" in plot and "debate:3x1 vs sc:match=debate:3x1" in plot
    assert "self-consistency, K = 1, 3, …" in plot  # the scaling curve, with the debate placed by its cost
    # A second run finds every answer recorded and asks nobody anything.
    log = tmp_path / "asked.jsonl"
    again = moot("eval", *TASKS, *STRATEGIES, *TEAM, "--json", cwd=tmp_path, env={"EVAL_SOLVER_LOG": str(log)})
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["strategies"] == summary["strategies"]
    assert not log.exists()


def test_k_is_fitted_once_per_deliberation_recorded_and_kept_when_the_run_grows(tmp_path: Path) -> None:
    debates = ["--strategy", "debate:3x1", "--strategy", "debate:2x1"]
    base = ["eval", "--tasks", "arithmetic", *debates, *TEAM, "--json", "--match", "calls"]
    first = moot(*base, "--limit", "3", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    match = by_name(summary)["sc:match=debate:3x1"]["match"]
    # 6 calls: 3 openings shared, then a single answer's 1 call each; it spends exactly the debate's calls.
    assert (match["k"], match["tasks"], match["measure"], match["realised_ratio"]) == (6, 3, "calls", 1.0)
    # The second debate is matched to its own cost: 2 openings and 2 more calls.
    assert by_name(summary)["sc:match=debate:2x1"]["match"]["k"] == 4
    against = {(v["deliberation"], v["kind"]): v["baseline"] for v in summary["verdicts"]}
    assert against[("debate:2x1", "matched self-consistency")] == "sc:match=debate:2x1"
    assert against[("debate:3x1", "matched self-consistency")] == "sc:match=debate:3x1"
    # Shared openings: the matched samples begin with the debate's own round-0 answers, never asked again.
    for task in (r for r in results(tmp_path) if r["kind"] == "task" and r["strategy"] == "sc:match=debate:3x1"):
        debate = next(
            r
            for r in results(tmp_path)
            if r["kind"] == "task" and (r["strategy"], r["task"]) == ("debate:3x1", task["task"])
        )
        assert task["samples"][:3] == [held["answer"] for held in debate["rounds"][0].values()]
        asked = {r["call"] for r in results(tmp_path) if r["kind"] == "call" and r["strategy"] == task["strategy"]
                 and r["task"] == task["task"]}  # fmt: skip
        assert asked == {"s4", "s5", "s6"}
    more = moot(*base, "--limit", "5", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    row = by_name(json.loads(more.stdout))["sc:match=debate:3x1"]
    assert (row["n"], row["k"], row["match"]["tasks"]) == (5, 6, 3)  # the first fit holds
    fits = [r for r in results(tmp_path) if r["kind"] == "fit"]
    assert sorted((f["strategy"], f["k"]) for f in fits) == [("sc:match=debate:2x1", 4), ("sc:match=debate:3x1", 6)]


def test_a_failed_call_is_unreadable_and_asked_again_when_the_agent_is_fixed(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.touch()
    args = ["eval", "--tasks", "arithmetic", "--limit", "3", "--strategy", "single", "--agent", f"good={AGENT}"]
    env = {"EVAL_SOLVER_FAIL": str(broken)}
    done = moot(*args, "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["strategies"]
    assert (row["accuracy"], row["unanswered"], row["failed_calls"], row["cost"]["calls"]) == (0.0, 3, 3, 1.0)
    assert row["cost"]["tokens"] > 0  # a failed call costs what was sent
    broken.unlink()
    fixed = moot(*args, "--json", cwd=tmp_path, env=env)
    (row,) = json.loads(fixed.stdout)["strategies"]
    assert (row["accuracy"], row["failed_calls"]) == (1.0, 0)


def test_an_infrastructure_failure_is_missing_data_and_is_retried(tmp_path: Path) -> None:
    args = ["eval", "--tasks", "arithmetic", "--limit", "2", "--strategy", "single", "--strategy", "vote"]
    team = ["--agent", f"good={AGENT}", "--agent", f"bad={AGENT}", "--json"]
    done = moot(*args, *team, "--timeout", "2", cwd=tmp_path, env={"EVAL_SOLVER_HANG": "bad"})
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    rows = by_name(summary)
    assert (rows["single"]["missing"], rows["vote"]["missing"], summary["n_tasks"]) == (0, 2, 0)
    assert {m["strategy"] for m in summary["missing_this_run"]} == {"vote"}
    assert "did not answer within 2 s" in summary["missing_this_run"][0]["why"]
    assert not [r for r in results(tmp_path) if r["kind"] == "task" and r["strategy"] == "vote"]
    again = moot(*args, *team, "--timeout", "2", cwd=tmp_path)
    rows = by_name(json.loads(again.stdout))
    assert (rows["vote"]["missing"], rows["vote"]["n"], rows["vote"]["accuracy"]) == (0, 2, 1.0)  # a tie: good first


def test_a_truncated_reply_is_counted(tmp_path: Path) -> None:
    def cut(request: AgentRequest) -> AgentReply:
        return AgentReply(text="3 + 4 =", prompt_tokens=9, completion_tokens=4, latency_s=0.1, model="m",
                          finish_reason="length")  # fmt: skip

    store = Store(tmp_path)
    store.open({})
    where = {"kind": "call", "strategy": "single", "task": "t", "replicate": 1, "call": "s1"}
    request = AgentRequest(prompt="What is the result of 3+4?")
    record = asyncio.run(call(FunctionAgent(cut), request, NUMBER, "agent", where, store))
    assert record["truncated"] and record["answer"] == "4" and (record["prompt_tokens"], record["usd"]) == (9, None)
    assert store.calls[("single", "t", 1, "s1")]["truncated"]


def test_replicates_repeat_every_strategy_with_other_seeds(tmp_path: Path) -> None:
    done = moot(
        "eval", "--tasks", "arithmetic", "--limit", "3", "--strategy", "single", "--strategy", "debate:2x1",
        *TEAM[:4], "--replicates", "2", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["replicates"] == 2 and by_name(summary)["single"]["n"] == 6  # 3 tasks × 2 replicates
    assert all(row["test"] == "paired t" for row in summary["verdicts"])
    seeds = {(r["call"], r["replicate"]) for r in results(tmp_path) if r["kind"] == "call" and r["task"].endswith("-0")}
    assert ("s1", 1) in seeds and ("s1", 2) in seeds


def test_eval_resumes_after_sigkill_without_asking_a_recorded_call_again(tmp_path: Path) -> None:
    log = tmp_path / "asked.jsonl"
    env = {**os.environ, "EVAL_SOLVER_LOG": str(log), "EVAL_SOLVER_DELAY": "0.3"}
    args = [sys.executable, "-m", "moot", "eval", *TASKS, *STRATEGIES, *TEAM, "--json"]
    process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results_path = tmp_path / "moot-eval" / "results.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if results_path.exists() and results_path.read_text().count('"kind": "task"') >= 8:
            break
        time.sleep(0.1)
    assert process.poll() is None, "the eval finished before it could be killed; make the solver slower"
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(3)  # an agent command in flight runs in its own session and may still write its log line
    recorded_calls = sum(1 for line in results_path.read_text().splitlines() if '"kind": "call"' in line)
    asked_before = len(log.read_text().splitlines())
    assert recorded_calls <= asked_before <= recorded_calls + 1  # one at a time: at most one call was in flight
    done = moot("eval", *TASKS, *STRATEGIES, *TEAM, "--json", cwd=tmp_path, env={"EVAL_SOLVER_LOG": str(log)})
    assert done.returncode == 0, done.stderr
    check_known_outcomes(json.loads(done.stdout))
    every_call = {(r["strategy"], r["task"], r["call"]) for r in results(tmp_path) if r["kind"] == "call"}
    assert len(log.read_text().splitlines()) - asked_before == len(every_call) - recorded_calls


def test_a_line_torn_by_a_kill_is_cut_off_and_the_next_append_reads_back(tmp_path: Path) -> None:
    whole = {"kind": "call", "strategy": "single", "task": "t1", "call": "s1", "answer": "3"}
    (tmp_path / "results.jsonl").write_text(json.dumps(whole) + "\n" + '{"kind": "call", "strat')
    store = Store(tmp_path)
    store.open({"tasks": "x"})
    assert list(store.calls) == [("single", "t1", 1, "s1")]
    store.append({**whole, "task": "t2"})
    reopened = Store(tmp_path)
    reopened.open({"tasks": "x"})
    assert list(reopened.calls) == [("single", "t1", 1, "s1"), ("single", "t2", 1, "s1")]


def test_without_matplotlib_everything_but_the_plot_is_written(tmp_path: Path) -> None:
    args = ["eval", "--tasks", "arithmetic", "--limit", "2", "--strategy", "single", "--agents", AGENT]
    blocked = f"import sys; sys.modules['matplotlib'] = None; from moot.cli import main; main({args!r})"
    done = subprocess.run([sys.executable, "-c", blocked], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "no plot: pip install 'moot[eval]'" in done.stdout and "| single |" in done.stdout
    out = tmp_path / "moot-eval"
    assert (out / "report.json").is_file() and (out / "report.md").is_file()
    assert not (out / "eval.svg").exists()


def test_without_a_terminal_each_finished_task_prints_a_progress_line(tmp_path: Path) -> None:
    # A bar shows nothing in a pipe or a log: an eval of minutes was silent there until its report.
    done = moot("eval", "--tasks", "arithmetic", "--limit", "3", "--strategy", "single", *TEAM, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("eval: ")]
    assert lines[0] == "eval: 3 task(s) to run"
    assert [line.split(" · ")[0] for line in lines[1:]] == [f"eval: {n}/3 tasks done" for n in (1, 2, 3)]
    assert json.loads(done.stdout)["strategies"]  # stdout keeps only the report

"""``moot eval`` with ``protocol:auto`` beside single, matched self-consistency and the council, on a planted
panel of scripted members that agree on some tasks and split on others."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

AGENT = Path(__file__).with_name("auto_agent.py")
# Each member's answer per task: all agree on t1 and t3 (t3 wrongly), two of three agree on t2 (rightly),
# everyone differs on t4.
TASKS = {"t1": "7", "t2": "9", "t3": "21", "t4": "15"}
PLANS = {
    "ann": {"[t1]": "7", "[t2]": "9", "[t3]": "20", "[t4]": "14"},
    "ben": {"[t1]": "7.0", "[t2]": "8", "[t3]": "20", "[t4]": "15"},
    "cat": {"[t1]": "$7", "[t2]": "9", "[t3]": "20", "[t4]": "16"},
}


def test_eval_reports_auto_beside_single_sc_and_council_and_votes_where_the_panel_agrees(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    lines = [
        {"id": t, "question": f"[{t}] How many marbles are left in the jar?", "answer": a} for t, a in TASKS.items()
    ]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    agents = []
    for name, plan in PLANS.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(plan), encoding="utf-8")
        agents += ["--agent", f"{name}=cmd:{sys.executable} {AGENT} 0 --plan {tmp_path / f'{name}.json'}"]
    strategies = ["single", "sc:match", "protocol:council", "protocol:auto"]
    args = ["eval", "--tasks", str(tasks), *(a for s in strategies for a in ("--strategy", s)), *agents, "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "moot", *args, "--out", str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads((tmp_path / "out" / "report.json").read_text())["strategies"]}
    assert {"single", "protocol:council", "protocol:auto"} <= set(rows)
    assert any(name.startswith("sc:match") for name in rows)
    # The vote decides t1 (12/12.0/$12 are one answer) and t3; t2 and t4 escalate to the council.
    outcomes = {}
    for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("kind") == "task" and row["strategy"] == "protocol:auto":
            outcomes[row["task"]] = (row["outcome"], row["correct"])
    assert outcomes == {
        "t1": ("VOTED", True),
        "t2": ("SYNTHESIZED", True),
        "t3": ("VOTED", False),
        "t4": ("SYNTHESIZED", False),
    }
    # Three calls where the vote decides, seven where it escalates: 5 on average, against the council's 7.
    assert rows["protocol:auto"]["cost"]["calls"] == 5.0 and rows["protocol:council"]["cost"]["calls"] == 7.0
    assert rows["protocol:auto"]["correct"] == rows["protocol:council"]["correct"] == 2
    assert "protocol:auto" in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")

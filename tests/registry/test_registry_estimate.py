"""A protocol whose positions are numbers, written as a third party writes one (tests/registry/plugin/moot_estimate)
and registered only through its entry point in a fresh process: it passes the conformance kit, `moot eval` scores
its answer, and its estimates are the numeric positions of the conformity metrics."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from test_registry_plugin import PLUGIN_DIR, moot, python

ESTIMATOR = Path(__file__).with_name("estimator.py")
AGENT = f"cmd:{sys.executable} {ESTIMATOR}"


@pytest.fixture
def estimate_env(tmp_path: Path) -> dict[str, str]:
    """The package and its entry point (a dist-info on the path), and the scripted estimator."""
    info = tmp_path / "site" / "moot_estimate-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: moot-estimate\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[moot.protocols]\nestimate = moot_estimate:PLUGIN\n", encoding="utf-8")
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(PLUGIN_DIR), str(ESTIMATOR.parent)])}


def test_the_estimate_package_passes_the_conformance_kit(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    code = (
        "import json, sys; from pathlib import Path; from moot.testing import Scenario, conformance\n"
        "from estimator import reply\n"
        "spec = {'protocol': 'estimate', 'question': 'How many moons has Mars?', 'estimators': ['ada', 'bo', 'cy']}\n"
        "scenario = Scenario('estimate', spec, lambda r: reply(r.role, r.prompt), 'ESTIMATED', turns=6)\n"
        "print(json.dumps(conformance(scenario, Path(sys.argv[1]))))\n"
    )
    done = python("-c", code, str(tmp_path / "kit"), cwd=tmp_path, env=estimate_env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []  # tamper evidence included: its record carries the chain's marks


def test_moot_eval_scores_the_estimate_of_a_numeric_task(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    panel = [arg for name in ("p1", "p2", "p3") for arg in ("--agent", f"{name}={AGENT}")]
    tasks = ["--tasks", "arithmetic", "--difficulty", "2", "--limit", "3", "--seed", "3"]
    done = moot("eval", *tasks, "--strategy", "protocol:estimate", *panel, "--json", cwd=tmp_path, env=estimate_env)
    assert done.returncode == 0, done.stderr
    row = {row["name"]: row for row in json.loads(done.stdout)["strategies"]}["protocol:estimate"]
    assert row["accuracy"] == 1.0  # the last round's median, exact
    assert [r["answers"] for r in row["rounds"]] == [9, 9]  # three estimators, two rounds, three tasks
    assert row["flips"]["incorrect_to_correct"] == 6 and row["flips"]["correct_to_incorrect"] == 0  # p1, p3 corrected
    assert row["conformity"]["changes"] == 6 and row["conformity"]["unanimous_at_end"] == 3


def test_its_numeric_estimates_are_the_positions_of_the_conformity_metrics(
    tmp_path: Path, estimate_env: dict[str, str]
) -> None:
    names = ["--estimator", "ada", "--estimator", "bo", "--estimator", "cy"]
    question = ["--question", "What is the result of 3+4*5?"]
    done = moot("run", "estimate", *question, *names, "--agents", AGENT, "--json", cwd=tmp_path, env=estimate_env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reason"] == "the last round's median is 23"
    (record,) = (tmp_path / ".estimates").glob("*.md")
    shown = moot("show", str(record), "--json", cwd=tmp_path, env=estimate_env)
    assert shown.returncode == 0, shown.stderr
    estimate = json.loads(shown.stdout)["conformity"]["estimate"]
    assert estimate["participants"]["ada"] == {"positions": [21, 23], "changes": 1}  # numbers stay numbers
    assert estimate["participants"]["cy"] == {"positions": [26, 23], "changes": 1}
    assert [(c["from"], c["to"]) for c in estimate["changes"]] == [(21, 23), (26, 23)]
    assert (estimate["initial_distinct"], estimate["final_distinct"], estimate["collapsed"]) == (3, 1, True)

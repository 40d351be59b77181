"""The GitHub Action's review and gate steps, and the pre-commit hook's entry, run as they would be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from test_review import APPROVING, git, reply, repo, script

INTEGRATIONS = Path(__file__).resolve().parents[2] / "integrations"
BIN = str(Path(sys.executable).parent)  # where the moot console script is installed

__all__ = ["repo"]  # the fixture, shared with test_review


def action_step(step_id_or_name: str) -> dict[str, object]:
    action = yaml.safe_load((INTEGRATIONS / "github-action" / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    return next(s for s in action["runs"]["steps"] if step_id_or_name in (s.get("id"), s.get("name")))


def run_step(step: dict[str, object], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **env}
    return subprocess.run(["bash", "-e", "-c", str(step["run"])], cwd=cwd, env=full, capture_output=True, text=True)


def test_the_action_reviews_the_pull_request_range_and_writes_its_outputs(repo: Path, tmp_path: Path) -> None:
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    outputs = tmp_path / "github_output"
    env = {
        "BASE_SHA": base,
        "HEAD_SHA": head,
        "AGENTS": script(tmp_path, APPROVING),
        "MAX_ROUNDS": "3",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(outputs),
    }
    done = run_step(action_step("review"), env, repo)
    assert done.returncode == 0, done.stderr
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert values["exit-code"] == "0" and values["verdict"] == "approve"
    assert (repo / values["artifact"]).is_file()
    assert (tmp_path / "moot-review.md").read_text().startswith("## moot review: approve")


def test_the_action_gate_fails_on_changes_requested_only_when_asked() -> None:
    gate = action_step("Gate on the verdict")
    here = Path.cwd()
    assert run_step(gate, {"CODE": "0", "FAIL_ON_CHANGES": "true"}, here).returncode == 0
    assert run_step(gate, {"CODE": "1", "FAIL_ON_CHANGES": "true"}, here).returncode == 1
    assert run_step(gate, {"CODE": "1", "FAIL_ON_CHANGES": "false"}, here).returncode == 0
    assert run_step(gate, {"CODE": "2", "FAIL_ON_CHANGES": "false"}, here).returncode == 2


def test_the_pre_commit_hook_reviews_the_staged_change(repo: Path, tmp_path: Path) -> None:
    hooks = yaml.safe_load((INTEGRATIONS / "pre-commit" / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "moot-review")
    assert hook["pass_filenames"] is False
    (repo / "rate.py").write_text("def limit(requests, cap=10):\n    return requests <= cap\n")
    git(repo, "add", "rate.py")
    blocking = [
        ("author", reply("Lower the default cap to 10.")),
        ("reviewer", reply("Blocking: a cap of 10 rejects most clients; keep 100.")),
    ]
    # The hook takes its agents from the project's moot.toml (untracked, so not part of the change).
    (repo / "moot.toml").write_text(f'agents = "{script(tmp_path, blocking)}"\n')
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    entry = [*hook["entry"].split(), "--max-rounds", "1", "--json"]
    done = subprocess.run(entry, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # the commit would be blocked
    report = json.loads(done.stdout)
    assert report["range"].startswith("uncommitted changes against") and "cap of 10" in report["comment"]

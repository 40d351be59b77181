from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MOOT = [sys.executable, "-m", "moot"]


def reply(message: str, status: str = "AWAITING", summary: str = "") -> str:
    return json.dumps({"message": message, "status": status, "summary": summary})


def write_script(path: Path, entries: list[dict[str, str] | str]) -> Path:
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n", encoding="utf-8")
    return path


def run_moot(*args: str, cwd: Path, timeout: float = 300, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [*MOOT, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, input=stdin or "", env=env
    )


@pytest.fixture
def agreeing_script(tmp_path: Path) -> Path:
    """proposer proposes, critic pushes back, proposer proposes done, critic confirms."""
    return write_script(
        tmp_path / "script.jsonl",
        [
            {"role": "proposer", "reply": reply("Move all services into one repository with one CI pipeline.")},
            {"role": "critic", "reply": reply("CI time grows with every service; how do you keep builds fast?")},
            {
                "role": "proposer",
                "reply": reply("Build only what changed, using the dependency graph.", "PROPOSING_DONE"),
            },
            {
                "role": "critic",
                "reply": reply("Agreed.", "DONE", "One repository, one pipeline, builds scoped to changed services."),
            },
        ],
    )

"""A whole debate through acp: with an ACP agent process that answers from a real llama.cpp server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from moot.detect import check_path

AGENT = Path(__file__).parents[1] / "acp_client" / "acp_test_agent.py"


@pytest.mark.slow
def test_a_critique_through_acp_with_a_real_model_ends_in_a_valid_record(llama_server: str, tmp_path: Path) -> None:
    spec = f"acp:{sys.executable} {AGENT} --llama {llama_server} --log {tmp_path / 'log.jsonl'}"
    args = ["run", "critique", "--topic", "Adopt a monorepo", "--max-rounds", "2", "--turn-timeout", "600"]
    done = subprocess.run(
        [sys.executable, "-m", "moot", *args, "--agents", spec, "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1800,
        env=os.environ,
    )
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report["turns"] >= 2, (
        tmp_path / "log.jsonl"
    ).read_text()  # the model's turns arrived through ACP and were accepted
    assert check_path(tmp_path / report["artifact"]).exit_code == 0
    prompts = [
        row for row in map(json.loads, (tmp_path / "log.jsonl").read_text().splitlines()) if row["event"] == "prompt"
    ]
    assert {row["role"] for row in prompts} == {"proposer", "critic"}

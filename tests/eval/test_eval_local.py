"""`moot eval` on the embedded model: real token counts and a complete report (small: 2 tasks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from moot.agents.llama_server import embedded_model_missing

pytestmark = pytest.mark.slow


def test_eval_on_the_embedded_model(tmp_path: Path) -> None:
    missing = embedded_model_missing()
    if missing is not None:
        pytest.skip(missing)
    args = ["eval", "--tasks", "arithmetic", "--difficulty", "1", "--limit", "2", "--max-tokens", "24"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "moot",
            *args,
            "--strategy",
            "single",
            "--strategy",
            "sc:2",
            "--agents",
            "local",
            "--json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    single, sc = json.loads(done.stdout)["strategies"]
    assert single["n"] == sc["n"] == 2
    assert not single["tokens_estimated"] and single["mean_tokens"] > 0  # llama.cpp reports its usage
    assert sc["mean_tokens"] > single["mean_tokens"]
    calls = [json.loads(line) for line in (tmp_path / "moot-eval" / "results.jsonl").read_text().splitlines()]
    samples = [c["text"] for c in calls if c["kind"] == "call" and c["strategy"] == "sc:2" and c["task"].endswith("-0")]
    assert len(samples) == 2 and samples[0] != samples[1]  # each sample has its own seed

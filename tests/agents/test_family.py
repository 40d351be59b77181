"""A panel of one model family is named before it runs; pairs and unknown agents are not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from moot.agents.family import model_family, one_family_warning


@pytest.mark.parametrize(
    ("spec", "family"),
    [
        ("openai:gpt-4o-mini", "OpenAI GPT"),
        ("openai:o3-mini@https://gateway.example/v1", "OpenAI GPT"),
        ("anthropic:claude-haiku-4-5", "Anthropic Claude"),
        ("openai:meta-llama/Llama-3.3-70B-Instruct@http://127.0.0.1:8080/v1", "Meta Llama"),
        ("ollama:qwen2.5:7b", "Qwen"),
        ("local", "SmolLM"),
        ("local:/models/other.gguf", None),  # any GGUF: moot cannot tell
        ("cmd:python agent.py", None),
        ("human", None),
        ("openai:my-finetune", None),
    ],
)
def test_the_family_of_a_spec(spec: str, family: str | None) -> None:
    assert model_family(spec) == family


def test_only_a_panel_of_one_known_family_is_warned_about() -> None:
    same = {"ada": "openai:gpt-4o-mini", "bo": "openai:gpt-4o", "cy": "openai:o3-mini"}
    warning = one_family_warning(same)
    assert warning is not None and "one model family (OpenAI GPT)" in warning
    assert one_family_warning({**same, "cy": "anthropic:claude-haiku-4-5"}) is None
    assert one_family_warning({"proposer": "local", "critic": "local"}) is None  # a pair, not a panel
    assert one_family_warning({**same, "cy": "human"}) is None  # a person may be anything


def test_moot_run_says_so_before_a_council_of_one_family_runs(tmp_path: Path) -> None:
    members = [
        arg for m in ("ada=openai:gpt-4o-mini", "bo=openai:gpt-4o", "cy=openai:o3-mini") for arg in ("--member", m)
    ]
    done = subprocess.run(
        [sys.executable, "-m", "moot", "run", "council", "--question", "Shard?", *members, "--dry-run"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, "OPENAI_API_KEY": "sk-test"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "one model family (OpenAI GPT)" in done.stderr

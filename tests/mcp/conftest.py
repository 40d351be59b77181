"""Fixtures of the MCP tests: a temp work root. The turn texts come from the agent-tool tests' helpers
(tests/tools/tools_helpers.py), imported rather than copied."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work

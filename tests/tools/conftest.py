"""Fixtures of the agent-tool tests: a temp work root, the installed ``moot`` console script, and the
ledger suite's PostgreSQL schema fixture (reused, not copied: the same skip-locally / fail-in-CI rule).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from tools_helpers import Cli

LEDGER_TESTS = Path(__file__).resolve().parents[1] / "ledger"
sys.path.insert(0, str(LEDGER_TESTS))  # its conftest imports ledger_helpers, as the ledger suite does
_spec = importlib.util.spec_from_file_location("ledger_suite_conftest", LEDGER_TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_ledger_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ledger_suite)

postgres_schema = _ledger_suite.postgres_schema


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def cli(root: Path) -> Cli:
    """``moot`` run as a separate process in the work root, on its SQLite ledger."""
    return Cli(root)

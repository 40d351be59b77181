"""What the contention test borrows from tests/ledger.

tests/ledger holds the contention workers and the checks of what they left (``ledger_stress``), and the
``store`` fixture that runs a test on SQLite and on PostgreSQL (skipped locally without
MOOT_TEST_DATABASE_URL, failing under CI). They are imported here under the module names pytest gives them
there, so spawned workers can import them too; the ledger's conftest is loaded under a name of its own,
because every conftest is called ``conftest``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

LEDGER_TESTS = Path(__file__).resolve().parents[1] / "ledger"
if str(LEDGER_TESTS) not in sys.path:
    sys.path.append(str(LEDGER_TESTS))  # spawned children inherit sys.path, so they find ledger_stress too


def _load_ledger_conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ledger_conftest", LEDGER_TESTS / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ledger_conftest = _load_ledger_conftest()
store = _ledger_conftest.store  # SQLite and PostgreSQL, each in a fresh store
postgres_schema = _ledger_conftest.postgres_schema  # what ``store`` asks for on PostgreSQL

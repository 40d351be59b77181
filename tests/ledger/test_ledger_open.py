"""open_ledger picks the backend; the SQLite file's settings; failures a user would meet."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from ledger_helpers import join

from moot.errors import InvalidInputError, LedgerUnavailableError
from moot.ledger import Ledger, ledger_path, open_ledger
from moot.ledger.sqlite import SqliteLedger


def test_a_work_root_gets_its_ledger_in_dot_moot(tmp_path: Path) -> None:
    with open_ledger(tmp_path) as ledger:
        assert isinstance(ledger, SqliteLedger)
        join(ledger, tmp_path, "alice")

    db = tmp_path / ".moot" / "moot.db"
    assert ledger_path(tmp_path) == db and db.is_file()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT COUNT(*) FROM participants").fetchone() == (1,)
    finally:
        conn.close()


def test_a_db_file_path_is_used_as_is(tmp_path: Path) -> None:
    with open_ledger(tmp_path / "state" / "ledger.db") as ledger:
        join(ledger, tmp_path, "alice")

    assert (tmp_path / "state" / "ledger.db").is_file()
    assert not (tmp_path / "state" / ".moot").exists()


def test_a_closed_ledger_says_so(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    ledger.close()
    ledger.close()  # harmless

    with pytest.raises(LedgerUnavailableError, match="This ledger is closed; open a new one"):
        ledger.read_events()


def test_an_unknown_url_scheme_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="scheme 'mysql' are not supported; use a postgresql:// URL"):
        open_ledger("mysql://user@localhost/db")


def test_an_unreachable_postgres_is_one_clear_sentence_without_the_password() -> None:
    with pytest.raises(LedgerUnavailableError) as caught:
        open_ledger("postgresql://moot:s3cret@127.0.0.1:1/moot_test?connect_timeout=2")

    message = str(caught.value)
    assert "moot@127.0.0.1:1/moot_test" in message
    assert "check MOOT_DATABASE_URL" in message
    assert "s3cret" not in message


def test_a_file_that_is_not_a_database_is_reported(tmp_path: Path) -> None:
    bogus = tmp_path / "ledger.db"
    bogus.write_bytes(b"this is not sqlite" * 100)

    with pytest.raises(LedgerUnavailableError, match=r"ledger\.db failed .*; check the file"):
        open_ledger(bogus)


def test_a_writer_waits_for_the_busy_timeout_then_reports_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    SqliteLedger(db).close()
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with SqliteLedger(db, busy_timeout_seconds=0.2) as ledger:
            ledger.read_events()  # readers are not blocked in WAL mode
            with pytest.raises(LedgerUnavailableError, match=r"stayed locked by another process for 0.2 s"):
                join(ledger, tmp_path, "alice")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_a_ledger_is_a_context_manager(tmp_path: Path) -> None:
    with open_ledger(tmp_path) as ledger:
        assert isinstance(ledger, Ledger)
    with pytest.raises(LedgerUnavailableError):
        ledger.read_events()


def test_under_ci_a_missing_postgres_url_fails_instead_of_skipping() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MOOT_TEST_DATABASE_URL"} | {"CI": "1"}
    test = f"{Path(__file__).with_name('test_ledger_events.py')}::test_an_event_is_stored_with_every_field"

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", test],  # one process: no workers
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 1, result.stdout
    assert "1 passed, 1 error" in result.stdout  # sqlite passed; postgres errored in its fixture
    assert "CI is set but MOOT_TEST_DATABASE_URL is not" in result.stdout

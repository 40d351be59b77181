"""Conformance: versioned schema migrations."""

from __future__ import annotations

import pytest
from ledger_helpers import Store, raw_transaction

from moot.errors import LedgerUnavailableError
from moot.ledger import LATEST_VERSION, DebateState
from moot.ledger.migrations import MIGRATIONS, apply_migrations


def versions(store: Store) -> list[int]:
    with raw_transaction(store) as tx:
        return [row[0] for row in tx.all("SELECT version FROM schema_version ORDER BY version")]


def test_migrations_are_numbered_one_to_n() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert LATEST_VERSION == len(MIGRATIONS) >= 2


def test_a_new_store_gets_every_migration_once(store: Store) -> None:
    assert store.open().schema_version == LATEST_VERSION

    store.open()  # opening again applies nothing

    assert versions(store) == list(range(1, LATEST_VERSION + 1))


def test_a_version_1_store_is_migrated_and_keeps_its_data(store: Store) -> None:
    with raw_transaction(store) as tx:
        assert apply_migrations(tx, "sqlite" if store.backend == "sqlite" else "postgres", "t", target=1) == 1
        tx.run(
            "INSERT INTO debates (id, protocol, source_path, topic, topic_slug, artifact_path, status, seats,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("old", "socratic-duel", "/src/a.md", "A", "a", "debates/a.md", "debating", 2, "2026-01-01T00:00:00Z"),
        )
    assert versions(store) == [1]

    ledger = store.open()

    assert ledger.schema_version == LATEST_VERSION
    assert versions(store) == list(range(1, LATEST_VERSION + 1))
    debate = ledger.get_debate("old")
    assert (debate.topic_slug, debate.status) == ("a", DebateState.DEBATING)
    event = ledger.append_event(workflow="w", type="status_change", run_id="r", step="s", data={"status": "running"})
    assert ledger.read_events() == [event]  # the events table came with migration 2


def test_a_store_migrated_by_a_newer_moot_is_refused(store: Store) -> None:
    store.open()
    with raw_transaction(store) as tx:
        tx.run("INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)", (99, "future", "t"))

    with pytest.raises(LedgerUnavailableError, match=f"version 99 but this moot knows only up to {LATEST_VERSION}"):
        store.open()


def test_a_version_2_store_keeps_its_debates_findable_and_its_digest_only_turns(store: Store) -> None:
    dialect = "sqlite" if store.backend == "sqlite" else "postgres"
    digest = "a" * 64
    with raw_transaction(store) as tx:
        assert apply_migrations(tx, dialect, "t", target=2) == 2
        tx.run(
            "INSERT INTO debates (id, protocol, source_path, topic, topic_slug, artifact_path, status, seats,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("old", "socratic-duel", "/src/a.md", "A", "a", "debates/a.md", "debating", 2, "2026-01-01T00:00:00Z"),
        )
        tx.run(
            "INSERT INTO participants (id, debate_id, seat, name, harness, model, run_id, joined_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            ("p1", "old", 1, "alice", "codex", "m", "r", "2026-01-01T00:00:00Z"),
        )
        tx.run(
            "INSERT INTO turns (debate_id, turn, digest, chain, participant_id, fencing, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("old", 1, digest, digest, "p1", 1, "2026-01-01T00:00:00Z"),
        )

    ledger = store.open()

    found = ledger.find_debate("/src/a.md", "a")  # an older moot's identity: the real path
    assert found is not None and (found.id, found.source_key, found.source_digest) == ("old", "/src/a.md", None)
    record = ledger.record("old")
    assert [(t.turn, t.digest, t.body) for t in record.turns] == [(1, digest, None)]
    assert record.conclusion is None and [p.name for p in record.participants] == ["alice"]

"""Versioned schema migrations, one list for both dialects.

Each migration is numbered; ``schema_version`` has one row per applied migration. ``apply_migrations``
runs inside the backend's write transaction (which the backend serialises across processes), applies the
missing ones in order, and is a no-op when the schema is current. Never edit a released migration: add
the next number.

The DDL is shared; only three type spellings differ per dialect and are filled in from constants below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from moot.errors import LedgerUnavailableError
from moot.ledger.sqltx import Tx

Dialect = Literal["sqlite", "postgres"]

_TYPES: dict[Dialect, dict[str, str]] = {
    "sqlite": {"serial": "INTEGER PRIMARY KEY AUTOINCREMENT", "json": "TEXT"},
    "postgres": {"serial": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "json": "JSONB"},
}


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]

    def sql(self, dialect: Dialect) -> list[str]:
        return [statement.format(**_TYPES[dialect]) for statement in self.statements]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "debates, participants, leases, turn digests, conclusions",
        (
            """CREATE TABLE debates (
                id TEXT PRIMARY KEY,
                protocol TEXT NOT NULL,
                source_path TEXT NOT NULL,
                topic TEXT NOT NULL,
                topic_slug TEXT NOT NULL,
                artifact_path TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('waiting_for_participant', 'debating', 'closed')),
                outcome TEXT,
                seats INTEGER NOT NULL CHECK (seats >= 2),
                fencing BIGINT NOT NULL DEFAULT 0,
                created_at TEXT NOT NULL,
                closed_at TEXT
            )""",
            # one active debate per (protocol, real source path, topic slug)
            """CREATE UNIQUE INDEX debates_one_active ON debates (protocol, source_path, topic_slug)
                WHERE status <> 'closed'""",
            """CREATE TABLE participants (
                id TEXT PRIMARY KEY,
                debate_id TEXT NOT NULL REFERENCES debates (id),
                seat INTEGER NOT NULL CHECK (seat >= 1),
                name TEXT NOT NULL,
                harness TEXT NOT NULL,
                model TEXT NOT NULL,
                run_id TEXT NOT NULL,
                joined_at TEXT NOT NULL,
                UNIQUE (debate_id, name),
                UNIQUE (debate_id, seat)
            )""",
            """CREATE TABLE leases (
                debate_id TEXT PRIMARY KEY REFERENCES debates (id),
                holder_id TEXT NOT NULL REFERENCES participants (id),
                token_sha256 TEXT NOT NULL,
                fencing BIGINT NOT NULL,
                acquired_at TEXT NOT NULL,
                expires_at TEXT NOT NULL
            )""",
            """CREATE TABLE turns (
                debate_id TEXT NOT NULL REFERENCES debates (id),
                turn INTEGER NOT NULL CHECK (turn >= 1),
                digest TEXT NOT NULL,
                chain TEXT NOT NULL,
                participant_id TEXT NOT NULL REFERENCES participants (id),
                fencing BIGINT NOT NULL,
                recorded_at TEXT NOT NULL,
                PRIMARY KEY (debate_id, turn)
            )""",
            """CREATE TABLE conclusions (
                debate_id TEXT PRIMARY KEY REFERENCES debates (id),
                outcome TEXT NOT NULL,
                reason TEXT NOT NULL,
                summary TEXT NOT NULL,
                participant_id TEXT NOT NULL REFERENCES participants (id),
                fencing BIGINT NOT NULL,
                recorded_at TEXT NOT NULL
            )""",
        ),
    ),
    Migration(
        2,
        "workflow events and the audit log of writes made under a lease",
        (
            """CREATE TABLE events (
                id {serial},
                workflow TEXT NOT NULL,
                type TEXT NOT NULL,
                run_id TEXT NOT NULL,
                step TEXT NOT NULL,
                unit TEXT,
                harness TEXT,
                data {json} NOT NULL,
                close_run BOOLEAN NOT NULL,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX events_by_run ON events (run_id, id)",
            """CREATE TABLE lease_writes (
                id {serial},
                debate_id TEXT NOT NULL REFERENCES debates (id),
                fencing BIGINT NOT NULL,
                holder_id TEXT NOT NULL,
                action TEXT NOT NULL,
                written_at TEXT NOT NULL,
                lease_expires_at TEXT NOT NULL
            )""",
            "CREATE INDEX lease_writes_by_debate ON lease_writes (debate_id, id)",
        ),
    ),
    Migration(
        3,
        "the debate itself: turn and conclusion text, a host-independent source identity, released leases kept",
        (
            # one active debate per (protocol, source identity, topic slug); older rows keep their real path
            "ALTER TABLE debates ADD COLUMN source_key TEXT NOT NULL DEFAULT ''",
            "UPDATE debates SET source_key = source_path",
            "ALTER TABLE debates ADD COLUMN source_digest TEXT",
            "ALTER TABLE debates ADD COLUMN source_text TEXT",
            "DROP INDEX debates_one_active",
            """CREATE UNIQUE INDEX debates_one_active_source ON debates (protocol, source_key, topic_slug)
                WHERE status <> 'closed'""",
            # NULL: a turn or conclusion recorded by an older moot, whose text is only in a host's file
            "ALTER TABLE turns ADD COLUMN body TEXT",
            "ALTER TABLE conclusions ADD COLUMN body TEXT",
            # a released lease keeps its row, so that a claim is one conditional upsert of that row
            "ALTER TABLE leases ADD COLUMN released_at TEXT",
        ),
    ),
    Migration(
        4,
        "records kept as several files: the files a debate opens with, and where each turn's text goes",
        (
            # JSON {file name: text}: the record's files before its first turn (a meeting's AGENDA.md, turn.json)
            "ALTER TABLE debates ADD COLUMN opening TEXT",
            # JSON {"file": name, "also": {file name: text}}: the file that holds the turn's text and the other
            # files the turn rewrote (a meeting's turn.json); NULL for a record kept as one file
            "ALTER TABLE turns ADD COLUMN files TEXT",
        ),
    ),
    Migration(
        5,
        "participant secrets: a SHA-256 of each seat's secret, which join returns once",
        (
            # NULL: a seat an older moot gave out without a secret; the next rejoin under its name takes it
            "ALTER TABLE participants ADD COLUMN secret_sha256 TEXT",
        ),
    ),
    Migration(
        6,
        "shared batches: the lines of a batch file, each run by one host at a time under a lease",
        (
            # id: the SHA-256 of the batch file, so that every host given the same file joins the same batch
            """CREATE TABLE batches (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                lines INTEGER NOT NULL,
                created_at TEXT NOT NULL
            )""",
            # claims counts the hosts that took the line: a finish names the claim it ends, so a host whose lease
            # ran out (and whose line another host took) cannot mark it done; result is the line's JSON row
            """CREATE TABLE batch_lines (
                batch_id TEXT NOT NULL REFERENCES batches (id),
                line INTEGER NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('waiting', 'running', 'done')),
                host TEXT,
                claims INTEGER NOT NULL DEFAULT 0,
                lease_expires_at TEXT,
                finished_at TEXT,
                result TEXT,
                PRIMARY KEY (batch_id, line)
            )""",
        ),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version


def current_version(tx: Tx) -> int:
    row = tx.one("SELECT MAX(version) FROM schema_version")
    return int(row[0]) if row is not None and row[0] is not None else 0


def apply_migrations(tx: Tx, dialect: Dialect, now_iso: str, *, target: int = LATEST_VERSION) -> int:
    """Bring the schema to ``target`` (default: latest) and return the version reached."""
    tx.run(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        "version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    version = current_version(tx)
    if version > LATEST_VERSION:
        raise LedgerUnavailableError(
            f"The ledger schema is at version {version} but this moot knows only up to {LATEST_VERSION}; "
            "upgrade moot to use this ledger."
        )
    for migration in MIGRATIONS:
        if version < migration.version <= target:
            for statement in migration.sql(dialect):
                tx.run(statement)
            tx.run(
                "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.description, now_iso),
            )
            version = migration.version
    return version

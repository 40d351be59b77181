"""Helpers shared by the ledger tests (fixtures live in conftest.py)."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from moot.ledger import JoinResult, Lease, Ledger, ledger_path, open_ledger
from moot.ledger.models import Clock
from moot.ledger.sqltx import Tx


class FakeClock:
    def __init__(self, start: datetime = datetime(2026, 4, 25, 10, 0, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def with_search_path(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query), ("options", f"-csearch_path={schema}")]
    return urlunsplit(parts._replace(query=urlencode(query)))


# The secret each seat's join returned, by participant id (ids are unique), so that a test can act as that
# participant: secret_of(duel.alice) is what alice's agent kept.
_SECRETS: dict[str, str] = {}


def seated(result: JoinResult) -> JoinResult:
    """``result``, with the secret of the seat it took remembered for :func:`secret_of`."""
    if result.secret is not None:
        _SECRETS[result.participant.id] = result.secret
    return result


def secret_of(participant_id: str) -> str:
    """The secret the join that seated ``participant_id`` returned."""
    return _SECRETS[participant_id]


def join(
    ledger: Ledger, root: Path, name: str, *, slug: str = "caching", seats: int = 2, secret: str | None = None
) -> JoinResult:
    source = root / "source.md"
    source.write_text("# Caching\n", encoding="utf-8")
    return seated(
        ledger.join(
            source_path=source,
            topic="Caching",
            topic_slug=slug,
            participant_name=name,
            harness="codex",
            model="unknown-model",
            run_id=f"run-{name}",
            artifact_dir=root / "debates",
            seats=seats,
            participant_secret=secret,
        )
    )


@dataclass(frozen=True)
class Duel:
    debate_id: str
    alice: str
    bob: str


def granted(result: object) -> Lease:
    assert isinstance(result, Lease), f"expected a lease, got {result!r}"
    return result


@dataclass
class Store:
    """A fresh, empty store; ``target`` is what ``open_ledger`` (also in other processes) takes."""

    backend: str
    target: str
    root: Path
    opened: list[Ledger] = field(default_factory=list)

    def open(self, clock: Clock | None = None) -> Ledger:
        ledger = open_ledger(self.target, clock=clock)
        self.opened.append(ledger)
        return ledger

    def close_all(self) -> None:
        for ledger in self.opened:
            ledger.close()


@dataclass
class PostgresSchema:
    """A throwaway schema; ``url`` points the ledger at it through ``search_path``."""

    admin_url: str
    name: str = field(default_factory=lambda: f"moot_test_{uuid.uuid4().hex[:12]}")

    @property
    def url(self) -> str:
        return with_search_path(self.admin_url, self.name)

    def execute(self, statement: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL(statement).format(sql.Identifier(self.name)))


@contextmanager
def raw_transaction(store: Store) -> Iterator[Tx]:
    """A transaction on the store without the ledger, as an older moot would have left it."""
    if store.backend == "sqlite":
        path = ledger_path(store.target)
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield Tx(conn.execute)
            conn.execute("COMMIT")
        finally:
            conn.close()
    else:
        import psycopg

        with psycopg.connect(store.target) as pg:  # commits on a clean exit
            yield Tx(pg.execute, format_placeholders=True)

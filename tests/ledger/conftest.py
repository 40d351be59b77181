"""Every ledger test that takes ``store`` (or ``ledger``) runs on both backends: one conformance suite.

PostgreSQL needs ``MOOT_TEST_DATABASE_URL`` (``.ci/postgres.sh`` prints it). When it is unset the PostgreSQL
half is skipped locally but FAILS when the environment variable ``CI`` is set; an unreachable server always
fails. Each PostgreSQL test runs in a schema of its own, dropped afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from ledger_helpers import Duel, FakeClock, PostgresSchema, Store, join

from moot.ledger import Ledger

BACKENDS = ["sqlite", "postgres"]


def postgres_url() -> str:
    url = os.environ.get("MOOT_TEST_DATABASE_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail(
                "CI is set but MOOT_TEST_DATABASE_URL is not; run .ci/postgres.sh and export the URL it prints."
            )
        pytest.skip("MOOT_TEST_DATABASE_URL is unset; run .ci/postgres.sh to test the PostgreSQL ledger too")
    return url


@pytest.fixture
def postgres_schema() -> Iterator[PostgresSchema]:
    url = postgres_url()
    try:
        import psycopg
    except ModuleNotFoundError:
        pytest.fail("MOOT_TEST_DATABASE_URL is set but psycopg is missing; pip install 'psycopg[binary]'.")
    schema = PostgresSchema(url)
    try:
        schema.execute("CREATE SCHEMA {}")
    except psycopg.Error as exc:
        pytest.fail(f"PostgreSQL at MOOT_TEST_DATABASE_URL is unreachable ({exc}); run .ci/postgres.sh.")
    try:
        yield schema
    finally:
        schema.execute("DROP SCHEMA {} CASCADE")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    target = str(tmp_path / "work") if request.param == "sqlite" else request.getfixturevalue("postgres_schema").url
    store = Store(request.param, target, tmp_path)
    try:
        yield store
    finally:
        store.close_all()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ledger(store: Store, clock: FakeClock) -> Ledger:
    return store.open(clock)


@pytest.fixture
def duel(ledger: Ledger, tmp_path: Path) -> Duel:
    alice = join(ledger, tmp_path, "alice")
    bob = join(ledger, tmp_path, "bob")
    return Duel(alice.debate.id, alice.participant.id, bob.participant.id)

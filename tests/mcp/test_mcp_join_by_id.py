"""Joining a duel by its id through ``moot mcp`` (the official SDK client): a participant on another host,
with its own work root and no copy of the source, takes the seat a peer shared, on one PostgreSQL ledger."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp_helpers import ALICE, BOB, call, connect, join, refused, write_source

LEDGER_TESTS = Path(__file__).resolve().parents[1] / "ledger"
sys.path.insert(0, str(LEDGER_TESTS))  # the ledger suite's PostgreSQL fixture: skip locally, fail in CI
_spec = importlib.util.spec_from_file_location("ledger_suite_conftest", LEDGER_TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_ledger_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ledger_suite)
postgres_schema = _ledger_suite.postgres_schema


def test_a_participant_on_another_host_joins_by_duel_id_without_the_source(
    tmp_path: Path, postgres_schema: Any
) -> None:
    roots = [tmp_path / f"host-{n}" / "work" for n in "ab"]
    for root in roots:
        root.mkdir(parents=True)
    source = write_source(roots[0])  # only host A has the document
    env = {"MOOT_DATABASE_URL": postgres_schema.url}

    async def scenario() -> None:
        async with connect(roots[0], env=env) as alice, connect(roots[1], env=env) as bob:
            first = await join(alice, source, ALICE)
            who = {"participant_name": BOB["name"], "harness": BOB["harness"], "run_id": "run-bob"}
            await refused(bob, "join", "TOOLS_BAD_INPUT", **who)  # neither a source nor a duel id
            second = await call(bob, "join", duel_id=first["duel_id"], model_id=BOB["model"], **who)
            assert second["duel_id"] == first["duel_id"] and second["participant_count"] == 2
            assert Path(second["debate_path"]).is_relative_to(roots[1])  # the record goes to bob's own root
            status = await call(alice, "status", duel_id=first["duel_id"])
            assert [p["name"] for p in status["participants"]] == [ALICE["name"], BOB["name"]]
            # the connection acts as the participant it joined as: bob may claim the lock as himself
            lock = await call(bob, "claim_lock", duel_id=first["duel_id"], participant_id=second["participant_id"])
            assert lock["participant_id"] == second["participant_id"]

    anyio.run(scenario)

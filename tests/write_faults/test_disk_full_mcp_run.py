"""A debate started over MCP meets a full disk mid-run (a real small tmpfs, filled by another program while a turn
is asked): the record stays as it was, the run's error says what is wrong and which tool continues it, and
``resume_debate`` finishes the debate once space is freed."""

from __future__ import annotations

from pathlib import Path

import anyio
from fault_helpers import LONG_AGENT
from mcp_helpers import call, connect

from moot.detect import check_path


def test_a_debate_that_meets_a_full_disk_over_mcp_names_resume_debate_and_resumes_once_space_is_freed(
    small_disk: Path, tmp_path: Path
) -> None:
    calls = tmp_path / "calls"
    env = {
        "MOOT_DATABASE_URL": str(tmp_path / "ledger.db"),
        "MOOT_TEST_FILL_AT": "3",
        "MOOT_TEST_DISK": str(small_disk),
        "MOOT_TEST_CALLS": str(calls),
    }

    async def scenario() -> None:
        async with connect(small_disk, "--allow-agent", "cmd", env=env) as session:
            started = await call(
                session,
                "start_debate",
                protocol="critique",
                topic="Adopt a monorepo",
                agents=LONG_AGENT,
                options={"max_rounds": 3},
            )
            debate = started["debate_id"]
            failed = await call(session, "debate_status", debate_id=debate, wait_seconds=120)
            assert failed["state"] == "failed" and failed["turns"] == 2, failed
            assert failed["error"].startswith("disk full: ") and "resume_debate" in failed["error"], failed["error"]
            record = small_disk / debate
            assert check_path(record).exit_code == 0
            before = record.read_bytes()
            (small_disk / "filler").unlink()
            assert record.read_bytes() == before
            await call(session, "resume_debate", debate_id=debate, agents=LONG_AGENT)
            ended = await call(session, "debate_status", debate_id=debate, wait_seconds=120)
            assert ended["state"] == "ended" and ended["turns"] == 6, ended

    anyio.run(scenario)

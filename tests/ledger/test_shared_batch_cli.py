"""`moot run --batch FILE --ledger postgresql://…` on two hosts (two work roots, two processes) sharing one batch.

Real PostgreSQL (skipped without MOOT_TEST_DATABASE_URL, as the ledger's other PostgreSQL tests), real moot
processes, real scripted participants (cmd:) that take a while per turn.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from ledger_helpers import PostgresSchema

from moot.detect import check_path

AGENT = Path(__file__).parents[1] / "reliability" / "protocol_agent.py"
DEBATES = 8


def write_batch(tmp_path: Path) -> Path:
    lines = [
        {"protocol": "critique", "topic": f"Topic {n}", "max_rounds": 2, "agents": f"cmd:{sys.executable} {AGENT}"}
        for n in range(1, DEBATES + 1)
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return batch


def host(root: Path, batch: Path, url: str, *extra: str) -> subprocess.Popen[str]:
    root.mkdir()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MOOT_TEST_AGENT_SLEEP": "0.4:7"}
    return subprocess.Popen(
        [sys.executable, "-m", "moot", "run", "--batch", str(batch), "--ledger", url, "--concurrency", "1", *extra],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def finish(process: subprocess.Popen[str]) -> tuple[list[dict[str, Any]], str]:
    out, err = process.communicate(timeout=600)
    return [json.loads(line) for line in out.splitlines()], err


def claims(url: str) -> dict[int, tuple[str, int]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT line, status, claims FROM batch_lines").fetchall()
    return {line: (status, count) for line, status, count in rows}


def test_two_hosts_share_a_batch_and_run_every_debate_exactly_once(
    tmp_path: Path, postgres_schema: PostgresSchema
) -> None:
    batch, url = write_batch(tmp_path), postgres_schema.url
    first, second = host(tmp_path / "a", batch, url), host(tmp_path / "b", batch, url)
    (rows_a, err_a), (rows_b, err_b) = finish(first), finish(second)
    assert first.returncode == 0 and second.returncode == 0, err_a + err_b
    lines_a, lines_b = {row["line"] for row in rows_a}, {row["line"] for row in rows_b}
    assert lines_a and lines_b  # both hosts did some
    assert not lines_a & lines_b and lines_a | lines_b == set(range(1, DEBATES + 1))  # each exactly once
    assert len(rows_a) + len(rows_b) == DEBATES
    for root, rows in ((tmp_path / "a", rows_a), (tmp_path / "b", rows_b)):
        records = sorted(path.name for path in (root / ".dialogues").glob("*.md"))
        assert records == sorted(Path(row["artifact"]).name for row in rows)  # each host keeps what it ran
        assert all(row["outcome"] == "DONE" and check_path(root / row["artifact"]).exit_code == 0 for row in rows)
    assert f"this host ran {len(rows_a)} of the batch's {DEBATES} debates" in err_a
    assert f"the batch: {DEBATES} done, 0 running, 0 waiting" in err_b
    assert claims(url) == {line: ("done", 1) for line in range(1, DEBATES + 1)}


def test_a_debate_of_a_host_that_died_is_finished_by_the_other_after_the_lease(
    tmp_path: Path, postgres_schema: PostgresSchema
) -> None:
    batch, url = write_batch(tmp_path), postgres_schema.url
    doomed = host(tmp_path / "a", batch, url, "--lease", "4")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not any(status == "running" for status, _ in claims_or_none(url)):
        time.sleep(0.05)
    os.killpg(doomed.pid, signal.SIGKILL)  # the host and its participant commands, mid-debate
    rows_a, _ = finish(doomed)
    abandoned = {line for line, (status, _) in claims(url).items() if status == "running"}
    assert len(abandoned) == 1
    started = time.monotonic()
    survivor = host(tmp_path / "b", batch, url, "--lease", "4")
    rows_b, err_b = finish(survivor)
    assert survivor.returncode == 0, err_b
    assert time.monotonic() - started >= 2  # it waited for the dead host's lease to run out
    lines_a, lines_b = {row["line"] for row in rows_a}, {row["line"] for row in rows_b}
    assert abandoned <= lines_b and not lines_a & lines_b and lines_a | lines_b == set(range(1, DEBATES + 1))
    (line,) = abandoned
    assert claims(url)[line] == ("done", 2)  # taken twice, done once
    assert f"the batch: {DEBATES} done, 0 running, 0 waiting" in err_b


def claims_or_none(url: str) -> list[tuple[str, int]]:
    """The lines' states, or none while the first host has not yet created the batch's tables."""
    try:
        return list(claims(url).values())
    except psycopg.errors.UndefinedTable:
        return []

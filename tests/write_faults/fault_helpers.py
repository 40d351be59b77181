"""Helpers of the write-fault tests (a plain module, not collected): fill a disk, make it read-only, run moot
with one fault at an exact point of its run, and read the usage log.

``fault_runner.py`` is ``moot`` itself with one fault injected where the engine commits a turn; the fault is
real (a SIGKILL of the process, a disk filled to the last byte), only its moment is chosen.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import forked_moot

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "fault_runner.py"
LONG_AGENT = f"cmd:{sys.executable} {HERE / 'long_agent.py'}"
FAULT_ENV = "MOOT_TEST_FAULT"  # WHAT:WHERE:TURN, read by fault_runner.py
SNAPSHOT_ENV = "MOOT_TEST_SNAPSHOT"  # where fault_runner.py copies the record just before the fault


def fill(disk: Path) -> Path:
    """Write a file on ``disk`` until no byte is left; returns it (delete it to free the space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1 << 8, 1):  # large blocks, then the last bytes of a page
            while True:
                try:
                    os.write(fd, b"x" * size)
                except OSError:
                    break
    finally:
        os.close(fd)
    return filler


def remount(disk: Path, mode: str) -> None:
    """``mode`` "ro" or "rw": the same file system, read-only or writable again."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(disk)], check=True, capture_output=True)


def moot(*args: str, cwd: Path, fault: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """``moot ARGS`` in ``cwd``; with ``fault`` (WHAT:WHERE:TURN), through fault_runner.py."""
    variables = {**os.environ, **env, **({FAULT_ENV: fault} if fault else {})}
    if not fault:
        return forked_moot.run(args, cwd=cwd, timeout=300, env=variables)
    command = [sys.executable, str(RUNNER), *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, env=variables)


def one_sentence(stderr: str) -> str:
    """The single line moot printed, without its prefix; fails on a traceback or several lines."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("moot: "), stderr
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    return lines[0].removeprefix("moot: ")


def usage_rows(record: Path) -> list[dict[str, Any]]:
    from moot.records import read_attempts

    return read_attempts(record)


def accepted_per_turn(record: Path) -> Counter[int]:
    return Counter(int(row["turn"]) for row in usage_rows(record) if row.get("accepted"))


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

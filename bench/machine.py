"""The facts a reader needs to weigh the figures: machine, versions, date."""

from __future__ import annotations

import os
import platform
import sqlite3
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ["moot", "autogen-agentchat", "autogen-ext", "langgraph", "debate", "llama-cpp-python", "psycopg", "mcp"]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def postgres_version(url: str | None) -> str:
    if not url:
        return "not used (MOOT_TEST_DATABASE_URL unset)"
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=5) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "unknown"
    except Exception as exc:  # a report, not a check: say what happened
        return f"unreachable ({type(exc).__name__})"


def describe(command: str) -> dict[str, Any]:
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "postgresql": postgres_version(os.environ.get("MOOT_TEST_DATABASE_URL")),
        "packages": {name: version(name) for name in PACKAGES},
        # Others' work on a shared machine slows every figure; the 15-minute figure spans most of a run.
        "load_average": [round(value, 2) for value in os.getloadavg()],
    }

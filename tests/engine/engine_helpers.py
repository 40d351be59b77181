"""Helpers shared by the engine tests (a plain module, not collected)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import forked_moot

MOOT = [sys.executable, "-m", "moot"]


def reply(message: str, status: str = "AWAITING", summary: str = "") -> str:
    return json.dumps({"message": message, "status": status, "summary": summary})


def write_script(path: Path, entries: list[dict[str, str] | str]) -> Path:
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n", encoding="utf-8")
    return path


def run_moot(*args: str, cwd: Path, timeout: float = 300, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return forked_moot.run(args, cwd=cwd, timeout=timeout, input=stdin, env=env)

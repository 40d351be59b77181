"""Helpers shared by the engine tests (a plain module, not collected)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pexpect

import forked_moot
from forked_moot import MOOT


def reply(message: str, status: str = "AWAITING", summary: str = "") -> str:
    return json.dumps({"message": message, "status": status, "summary": summary})


def write_script(path: Path, entries: list[dict[str, str] | str]) -> Path:
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n", encoding="utf-8")
    return path


def run_moot(*args: str, cwd: Path, timeout: float = 300, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return forked_moot.run(args, cwd=cwd, timeout=timeout, input=stdin, env=env)


def in_a_terminal(args: list[str], cwd: Path, **env: str) -> pexpect.spawn:
    """``moot ARGS`` in a real pseudo-terminal, as a person starts it: colours on, and hang-up delivered even when
    the suite itself runs under ``nohup`` (else a program moot leaves on the terminal, such as an editor that
    ignores Ctrl-C, would not be hung up when moot exits, and would hold the terminal open)."""
    environ = {**os.environ, "PYTHONUNBUFFERED": "1", "TERM": "xterm-256color", **env}
    if "NO_COLOR" not in env:
        environ.pop("NO_COLOR", None)
    return pexpect.spawn(
        MOOT[0],
        [*MOOT[1:], *args],
        cwd=str(cwd),
        env=environ,
        encoding="utf-8",
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )

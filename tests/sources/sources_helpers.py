"""A small project made in the test: a few source files, a binary, .gitignore files (nested, with negation)."""

from __future__ import annotations

import subprocess
from pathlib import Path

RETRY = """\
\"\"\"Network calls with retries.\"\"\"

import time


def fetch(url, attempts=3):
    # Retries use exponential backoff: 1, 2, then 4 seconds.
    for attempt in range(attempts):
        try:
            return _get(url)
        except ConnectionError:
            time.sleep(2**attempt)
    raise ConnectionError(url)
"""

GUIDE = """\
# Operations guide

## Caching

The cache keeps responses for five minutes.
Stale entries are dropped on the next read.

## Deployments

Deployments happen every Tuesday after the tests pass.
"""


def make_project(root: Path, *, git: bool) -> Path:
    """root/project with src/, docs/, ignored build output, a nested .gitignore and a negated pattern."""
    project = root / "project"
    (project / "src" / "net").mkdir(parents=True)
    (project / "docs").mkdir()
    (project / "build").mkdir()
    (project / "logs").mkdir()
    (project / "src" / "net" / "retry.py").write_text(RETRY, encoding="utf-8")
    (project / "docs" / "guide.md").write_text(GUIDE, encoding="utf-8")
    (project / "build" / "out.txt").write_text("generated: exponential backoff table\n", encoding="utf-8")
    (project / "logs" / "debug.log").write_text("exponential backoff in the log\n", encoding="utf-8")
    (project / "logs" / "keep.log").write_text("kept log line\n", encoding="utf-8")
    (project / "src" / "net" / "secrets.txt").write_text("token 1234\n", encoding="utf-8")
    (project / "src" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    (project / ".gitignore").write_text("build/\n*.log\n!keep.log\n", encoding="utf-8")
    (project / "src" / "net" / ".gitignore").write_text("secrets.txt\n", encoding="utf-8")
    if git:
        for command in (["init", "-q"], ["add", "-A"]):
            subprocess.run(["git", "-C", str(project), *command], check=True, capture_output=True)
    return project


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)

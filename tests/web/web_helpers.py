"""A work root with a record of every protocol, a real ``moot serve`` process, and Debian's chromium."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import forked_moot
from forked_moot import MOOT

TESTS = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
WEB_TOKEN = "test-viewer-token"  # what serving() gives moot serve, and the cookie a test's browser holds
TOKEN_COOKIE = {"name": "moot_token", "value": WEB_TOKEN, "url": "http://127.0.0.1"}  # any port of 127.0.0.1

# One real record per protocol, from the spec examples, and where it lives under a work root.
EXAMPLES = {
    "duel": ("duel/examples/valid/consensus-six-turns.md", "debates"),
    "agora": ("agora/examples/valid/mediator-compromise.md", ".agora"),
    "critique": ("critique/examples/valid/extended-rounds.md", ".dialogues"),
    "council": ("council/examples/valid/synthesized-three-members.md", ".council"),
    "roundtable": ("roundtable/examples/valid/closed-on-consensus", ".roundtable"),
}

# What each of those records decided (Analysis.decision): its outcome, the start of the decided text, the turn
# and who stated it.
DECIDED = {
    "duel": (
        "ACCEPTED_CONSENSUS",
        "I accept partitioned caches, a capped shared overflow and an opt-out for regulated tenants.",
        5,
        "alice",
    ),
    "agora": (
        "CONSENSUS",
        "Let the formatter decide and check it in CI. Nobody indents by hand any more.",
        3,
        "mediator",
    ),
    "critique": ("DONE", "write-through caching for user profiles, 5-minute TTLs elsewhere.", 12, "critic"),
    "council": (
        "SYNTHESIZED",
        "Share one cache with a per-tenant floor of 5% of memory, and give regulated tenants a cache of their own.",
        7,
        "chairman",
    ),
    "roundtable": (
        "closed",
        "Adopt a write-through Redis cache on the private subnet with AUTH, TLS and explicit invalidation.",
        None,
        "moderator",
    ),
}


def place_examples(root: Path) -> dict[str, str]:
    """Copy one example of each protocol under ``root``; returns each record's path relative to it."""
    placed = {}
    for protocol, (example, folder) in EXAMPLES.items():
        source = TESTS / example
        target = root / folder / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copyfile(source, target)
        placed[protocol] = f"{folder}/{source.name}"
    return placed


def critique_reply(message: str, status: str = "AWAITING", summary: str = "") -> dict[str, Any]:
    return {"message": message, "status": status, "summary": summary}


def write_script(path: Path, entries: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries), encoding="utf-8")
    return path


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return forked_moot.run(args, cwd=cwd, timeout=120)


@contextmanager
def serving(root: Path, *extra: str) -> Iterator[str]:
    """``moot serve --root ROOT --port 0`` as a real process, its token WEB_TOKEN (the cookie a test's browser
    holds, :data:`TOKEN_COOKIE`); yields its URL without the token."""
    with serving_printed(root, *extra, env={**os.environ, "MOOT_SERVE_TOKEN": WEB_TOKEN}) as url:
        yield url.split("?")[0]


@contextmanager
def serving_printed(root: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``moot serve --root ROOT --port 0`` as a real process; yields the URL it prints (with its token)."""
    with viewer_process(root, *extra, env=env) as (_, url):
        yield url


@contextmanager
def viewer_process(
    root: Path, *extra: str, env: dict[str, str] | None = None, stop: signal.Signals = signal.SIGTERM
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``moot serve --root ROOT --port 0`` as a real process; yields it and the URL it prints (with its token), and
    stops it with ``stop`` on leaving the block."""
    proc = subprocess.Popen(
        [*MOOT, "serve", "--root", str(root), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else {k: v for k, v in os.environ.items() if k != "MOOT_SERVE_TOKEN"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "http://" in first, f"moot serve printed {first!r}; stderr: {proc.stderr.read() if proc.stderr else ''}"
        yield proc, first[first.index("http://") :].split()[0]
    finally:
        proc.send_signal(stop)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

"""What every test shares: moot's per-user state (the debate index, the servers' known refusals) goes to the
test's own directory, never to the home of whoever runs the suite, and no test sees another's; and a second Unix
account (``other_user``) for the tests of what a door keeps out."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from moot.agents import server_memory

SYSTEM_PYTHON = "/usr/bin/python3"

# Started in the background (``nohup pytest &``, a CI runner without job control), the suite inherits Ctrl-C
# ignored, and so would every moot it starts: the tests of Ctrl-C would then test nothing (the signal never
# arrives) and fail. They run as from a terminal, where Ctrl-C is delivered.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def own_user_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path_factory.mktemp("user-state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.setattr(server_memory, "_facts", None)  # what this process learnt of servers is read again
    return state


@pytest.fixture
def other_user() -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """Another account of this machine, created for the test and removed after it: runs the system's python3
    (no moot, no test environment) as that user. Loopback is shared by every account, so this is who a server's
    token keeps out."""
    if os.geteuid() != 0:
        pytest.skip("creating a second Unix user needs root (useradd); run the suite as root to include this test")
    if shutil.which("useradd") is None or not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"a second Unix user needs useradd and {SYSTEM_PYTHON}")
    name = f"moot-other-{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    entry = pwd.getpwnam(name)

    def run_as(script: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SYSTEM_PYTHON, "-I", "-c", script, *args],
            user=entry.pw_uid,
            group=entry.pw_gid,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin"},
            cwd="/",
            capture_output=True,
            text=True,
            timeout=60,
        )

    try:
        yield run_as
    finally:
        subprocess.run(["userdel", name], check=False)

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
from moot.agents.local import THREADS_ENV

SYSTEM_PYTHON = "/usr/bin/python3"

# Started in the background (``nohup pytest &``, a CI runner without job control), the suite inherits Ctrl-C
# ignored, and so would every moot it starts: the tests of Ctrl-C would then test nothing (the signal never
# arrives) and fail. They run as from a terminal, where Ctrl-C is delivered.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# A test that runs a real model keeps the cores busy for up to minutes; two at once on two cores would push each past
# its turn limits. With parallel workers they share one worker, and so run one at a time, and the model gets the
# worker's share of the cores: llama.cpp with more threads than free cores waits at every token for a descheduled
# thread (a duel test took 11 minutes beside a busy worker instead of under one).
MODEL_FIXTURES = {"llama_server", "model_server"}
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault(THREADS_ENV, str(max(1, len(os.sched_getaffinity(0)) // _WORKERS)))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("slow") or item.get_closest_marker("model") or fixtures & MODEL_FIXTURES:
            item.add_marker(pytest.mark.xdist_group("model"))


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

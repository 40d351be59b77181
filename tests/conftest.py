"""What every test shares: moot's per-user state (the debate index, the servers' known refusals) goes to the
test's own directory, never to the home of whoever runs the suite, and no test sees another's."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.agents import server_memory


@pytest.fixture(autouse=True)
def own_user_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path_factory.mktemp("user-state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.setattr(server_memory, "_facts", None)  # what this process learnt of servers is read again
    return state

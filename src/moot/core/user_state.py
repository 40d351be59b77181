"""Where moot keeps what it learns for this user across runs: ``$XDG_STATE_HOME/moot/``, else
``~/.local/state/moot/`` (the per-user debate index, the model servers' known refusals)."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "moot"

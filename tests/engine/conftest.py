from __future__ import annotations

from pathlib import Path

import pytest
from engine_helpers import reply, write_script


@pytest.fixture
def agreeing_script(tmp_path: Path) -> Path:
    """proposer proposes, critic pushes back, proposer proposes done, critic confirms."""
    return write_script(
        tmp_path / "script.jsonl",
        [
            {"role": "proposer", "reply": reply("Move all services into one repository with one CI pipeline.")},
            {"role": "critic", "reply": reply("CI time grows with every service; how do you keep builds fast?")},
            {
                "role": "proposer",
                "reply": reply("Build only what changed, using the dependency graph.", "PROPOSING_DONE"),
            },
            {
                "role": "critic",
                "reply": reply("Agreed.", "DONE", "One repository, one pipeline, builds scoped to changed services."),
            },
        ],
    )

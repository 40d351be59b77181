"""The duel driver tests' source document (the texts and replies are in engine_duel_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_duel_helpers import SOURCE_TEXT


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "docs" / "cache-design.md"
    path.parent.mkdir()
    path.write_text(SOURCE_TEXT, encoding="utf-8")
    return path

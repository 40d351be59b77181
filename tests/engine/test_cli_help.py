"""Help text a person can type from: no Python types, flags without a value, arguments in capitals."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_helpers import run_moot


@pytest.mark.parametrize("command", [["run", "critique"], ["run", "council"], ["resume"], ["ls"], ["duel", "append"]])
def test_help_shows_plain_value_names_and_bare_flags(tmp_path: Path, command: list[str]) -> None:
    shown = run_moot(*command, "--help", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "<bool>" not in text and "list[" not in text and "<str>" not in text and "range>" not in text
    assert "{" not in text.split("Options")[0]  # the usage line names arguments plainly
    json_line = next((line for line in text.splitlines() if "--json" in line), "")
    assert not json_line or "TEXT" not in json_line  # a flag takes no value


def test_an_option_that_takes_a_value_says_what_kind(tmp_path: Path) -> None:
    text = run_moot("run", "critique", "--help", cwd=tmp_path).stdout
    assert any("--topic" in line and "TEXT" in line for line in text.splitlines())
    assert any("--max-rounds" in line and "INTEGER" in line for line in text.splitlines())
    assert "moot resume [OPTIONS] PATH" in run_moot("resume", "--help", cwd=tmp_path).stdout

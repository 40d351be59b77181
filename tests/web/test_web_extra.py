"""Without the web extra, ``moot serve`` and ``moot export`` say in one sentence how to install it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from moot.cli import main


@pytest.mark.parametrize("command", [["serve"], ["export", "x.md", "--html", "x.html"]])
def test_without_the_web_extra_one_sentence_names_the_install(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "starlette", None)  # as if not installed: importing it raises ImportError
    with pytest.raises(SystemExit) as ended:
        main(command)
    assert ended.value.code == 2
    assert (
        capsys.readouterr().err
        == f"moot: moot {command[0]} needs moot's web extra; install it with: pip install 'moot[web]'.\n"
    )

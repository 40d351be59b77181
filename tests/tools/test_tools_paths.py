"""The agent tools on the command line keep records inside the work root: a record folder that is a symbolic link
out of the root, or a record named by ``../``, is refused (exit 2) and nothing is written there. The seed's
``join --target`` names any readable Markdown file of the person running it (docs/agent-tools.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_tools_critique import PROPOSER_1, RECORD
from tools_helpers import ALICE, Cli, join, write_source


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def test_a_linked_record_folder_is_refused_by_every_protocols_tools(cli: Cli, outside: Path) -> None:
    for folder in (".dialogues", ".roundtable", "debates"):
        (outside / folder).mkdir()
        (cli.root / folder).symlink_to(outside / folder)
    turn = cli.root / "turn.md"
    turn.write_text(PROPOSER_1, encoding="utf-8")
    agenda = cli.root / "agenda.md"
    agenda.write_text("# Cache\n\nShall we share the cache?\n", encoding="utf-8")
    calls = {
        ".dialogues": ("critique", "append", "--file", RECORD, "--role", "proposer", "--turn-file", str(turn)),
        ".roundtable": ("roundtable", "start", "--name", "cache", "--speakers", "a,b", "--max-rounds", "1", "--agenda", str(agenda)),
        "debates": (
            "duel", "join", "--target", str(write_source(cli.root)), "--participant-name", ALICE["name"],
            "--harness", ALICE["harness"], "--run-id", "r1",
        ),
    }  # fmt: skip
    for folder, args in calls.items():
        refusal = cli(*args).refused("FILE_SYMLINK", code=2)
        assert refusal["error"].startswith(f"{cli.root / folder} is a symbolic link"), refusal["error"]
        assert list((outside / folder).iterdir()) == []


@pytest.mark.parametrize("record", ["../outside/x.md", ".dialogues/../../outside/x.md"])
def test_a_record_named_by_dot_dot_is_refused(cli: Cli, outside: Path, record: str) -> None:
    (outside / "x.md").write_text("# Dialogue: x\n", encoding="utf-8")
    turn = cli.root / "turn.md"
    turn.write_text(PROPOSER_1, encoding="utf-8")
    cli("critique", "append", "--file", record, "--role", "proposer", "--turn-file", str(turn)).refused(
        "TOOLS_UNSAFE_NAME", code=2
    )
    assert (outside / "x.md").read_text(encoding="utf-8") == "# Dialogue: x\n"


def test_a_record_named_without_its_folder_is_refused_with_the_path_to_pass(cli: Cli) -> None:
    turn = cli.root / "turn.md"
    turn.write_text(PROPOSER_1, encoding="utf-8")
    refusal = cli("critique", "append", "--file", "x.md", "--role", "proposer", "--turn-file", str(turn)).refused(
        "TOOLS_UNSAFE_NAME", code=2
    )
    assert refusal["error"].endswith("; pass .dialogues/x.md."), refusal["error"]
    assert not (cli.root / "x.md").exists()


def test_the_seeds_join_reads_a_target_outside_the_work_root_on_the_command_line(cli: Cli, outside: Path) -> None:
    source = write_source(outside)  # rp1's work root is <project>/.rp1/work; the source is a project document
    joined = join(cli, source, ALICE).ok()
    assert Path(joined["source_path"]) == source and Path(joined["debate_path"]).parent == cli.root / "debates"

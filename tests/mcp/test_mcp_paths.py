"""Over MCP (the official SDK client, stdio) every path a client names stays inside the server's work root: a
source, an agenda or sources outside it, a `../` escape and a record folder that links out of the root are tool
errors of one sentence that write nothing; a record that is a link never breaks list_debates or debate_status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_helpers import ALICE, call, connect, refused, tool_error, tree

from moot.paths import CLIENT_FIX

EXAMPLES = Path(__file__).resolve().parents[1]
SECRET = "Not for the model"


@pytest.fixture
def outside(tmp_path: Path, root: Path) -> Path:
    """A folder beside the work root with a Markdown document and a text file; the root holds one document."""
    (root / "docs").mkdir()
    (root / "docs" / "inside.md").write_text("# Inside\n\nA document in the root.\n", encoding="utf-8")
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "doc.md").write_text(f"# Secret plan\n\n{SECRET}.\n", encoding="utf-8")
    (folder / "notes.txt").write_text(f"{SECRET}.\n", encoding="utf-8")
    return folder


def starts_outside(outside: Path) -> list[dict[str, Any]]:
    """start_debate calls naming a file outside the root: absolute, ``../``, and through a folder and back."""
    speakers = {"speakers": ["architect", "reviewer"]}
    return [
        {"protocol": "duel", "source": str(outside / "doc.md")},
        {"protocol": "duel", "source": "../outside/doc.md"},
        {"protocol": "duel", "source": "docs/../../outside/doc.md"},
        {"protocol": "duel", "source": "docs/inside.md", "options": {"supporting": [str(outside)]}},
        {"protocol": "roundtable", "topic": "T", "options": {**speakers, "agenda": "/etc/passwd"}},
        {"protocol": "roundtable", "topic": "T", "options": {**speakers, "agenda": "../outside/notes.txt"}},
        {"protocol": "agora", "topic": "T", "options": {"sources": ["../outside"]}},
    ]


def test_start_debate_refuses_a_path_outside_the_work_root_and_writes_nothing(
    root: Path, outside: Path, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with connect(root) as session:
            before = tree(tmp_path)
            for arguments in starts_outside(outside):
                payload = await tool_error(session, "start_debate", **arguments)
                assert "is outside the work root" in payload["error"], payload["error"]
                assert payload["error"].endswith(CLIENT_FIX + "."), payload["error"]
                assert SECRET not in json.dumps(payload)
            assert tree(tmp_path) == before

    anyio.run(scenario)


FOLDER_STARTS: dict[str, dict[str, Any]] = {
    ".dialogues": {"protocol": "critique", "topic": "T"},
    "debates": {"protocol": "duel", "source": "docs/inside.md"},
    ".agora": {"protocol": "agora", "topic": "T"},
    ".roundtable": {"protocol": "roundtable", "topic": "T", "options": {"speakers": ["a", "b"]}},
    ".council": {"protocol": "council", "question": "Q?", "options": {"members": [["a", "local"], ["b", "local"]]}},
}


def test_start_debate_refuses_a_record_folder_that_links_out_of_the_root(
    root: Path, outside: Path, tmp_path: Path
) -> None:
    targets = {}
    for folder in FOLDER_STARTS:
        targets[folder] = outside / folder.lstrip(".")
        targets[folder].mkdir()
        (root / folder).symlink_to(targets[folder])

    async def scenario() -> None:
        async with connect(root) as session:
            before = tree(tmp_path)
            for folder, arguments in FOLDER_STARTS.items():
                payload = await tool_error(session, "start_debate", **arguments)
                assert payload["error"].startswith(f"{root / folder} is a symbolic link"), payload["error"]
            assert tree(tmp_path) == before
            assert all(list(target.iterdir()) == [] for target in targets.values())

    anyio.run(scenario)


def test_join_refuses_a_target_outside_the_work_root(root: Path, outside: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with connect(root) as session:
            before = tree(tmp_path)
            for target in (str(outside / "doc.md"), "../outside/doc.md", "docs/../../outside/doc.md"):
                payload = await refused(
                    session,
                    "join",
                    "TOOLS_UNSAFE_NAME",
                    target=target,
                    participant_name=ALICE["name"],
                    harness=ALICE["harness"],
                    model_id=ALICE["model"],
                    run_id="run-alice",
                )
                assert "is outside the work root" in payload["error"] and payload["exit_code"] == 2
                assert SECRET not in json.dumps(payload)
            assert tree(tmp_path) == before
            assert not (root / "debates").exists()

    anyio.run(scenario)


def test_list_debates_and_debate_status_answer_beside_records_that_are_links_or_unreadable(
    root: Path, outside: Path
) -> None:
    valid = EXAMPLES / "critique" / "examples" / "valid" / "planning-done.md"
    (root / ".dialogues").mkdir()
    shutil.copy(valid, root / ".dialogues" / "real.md")
    # A record moot wrote (its chain beside it) whose attempt log cannot be read.
    written = EXAMPLES / "critique" / "examples" / "valid" / "moot-written.md"
    shutil.copy(written, root / ".dialogues" / "unreadable-log.md")
    shutil.copy(written.with_name(".moot-written.md.chain"), root / ".dialogues" / ".unreadable-log.md.chain")
    (root / ".dialogues" / ".unreadable-log.md.usage.jsonl").mkdir()
    shutil.copy(valid, outside / "elsewhere.md")
    (root / ".dialogues" / "linked.md").symlink_to(outside / "elsewhere.md")
    (outside / "agora").mkdir()
    shutil.copy(EXAMPLES / "agora" / "examples" / "valid" / "timeout.md", outside / "agora" / "timeout.md")
    (root / ".agora").symlink_to(outside / "agora")

    async def scenario() -> None:
        async with connect(root) as session:
            listed = await call(session, "list_debates")
            assert [(row["debate_id"], row["verdict"], row["problem"] is None) for row in listed["debates"]] == [
                (".dialogues/real.md", "valid", True),
                (".dialogues/unreadable-log.md", "valid", False),
            ]
            assert "cannot read the attempt log" in listed["debates"][1]["problem"]
            skipped = listed["skipped"]
            assert len(skipped) == 2 and all("is a symbolic link" in note for note in skipped), skipped
            assert any(str(root / ".agora") in note for note in skipped)
            assert any(str(root / ".dialogues" / "linked.md") in note for note in skipped)

            status = await call(session, "debate_status", debate_id=".dialogues/real.md")
            assert status["state"] == "ended" and status["outcome"] == "DONE"
            for debate in (".dialogues/linked.md", ".agora/timeout.md"):
                for tool in ("debate_status", "debate_result"):
                    payload = await tool_error(session, tool, debate_id=debate)
                    assert "is a symbolic link" in payload["error"], payload["error"]

    anyio.run(scenario)

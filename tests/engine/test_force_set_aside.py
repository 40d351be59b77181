"""``--force`` sets the old record aside until the new start stands: a failed start puts it back, and nothing
another start created meanwhile is ever removed or overwritten (two clients, or two processes, forcing the same
debate at once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.core.run_state import SetAside
from moot.errors import UserError


def files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def old_debate(folder: Path) -> Path:
    folder.mkdir()
    record = folder / "t.md"
    record.write_text("# the old debate\n", encoding="utf-8")
    (folder / ".t.md.chain").write_text("old chain\n", encoding="utf-8")
    (folder / "other.md").write_text("# another debate\n", encoding="utf-8")
    return record


def test_a_failed_start_is_removed_and_the_old_record_comes_back_as_it_was(tmp_path: Path) -> None:
    record = old_debate(tmp_path / ".dialogues")
    before = files(tmp_path)
    aside = SetAside(record)
    assert not record.exists() and (tmp_path / ".dialogues/other.md").exists()
    record.write_text("# the new debate\n", encoding="utf-8")  # the start creates its record, then fails
    (record.parent / ".t.md.chain").write_text("new chain\n", encoding="utf-8")
    aside.claim(record)
    aside.restore(UserError("the agent could not be reached."))
    assert files(tmp_path) == before
    assert not list(record.parent.glob(".moot-replaced-*"))


def test_a_record_another_start_created_meanwhile_is_neither_removed_nor_overwritten(tmp_path: Path) -> None:
    record = old_debate(tmp_path / ".dialogues")
    old = record.read_bytes()
    aside = SetAside(record)
    record.write_text("# ours, which failed\n", encoding="utf-8")
    aside.claim(record)
    record.unlink()  # another process set ours aside and started its own in its place
    record.write_text("# theirs, running\n", encoding="utf-8")
    with pytest.raises(UserError) as refused:
        aside.restore(UserError("the agent could not be reached."))
    message = str(refused.value)
    assert message.startswith("the agent could not be reached.") and str(aside.folder) in message
    assert record.read_text(encoding="utf-8") == "# theirs, running\n"
    assert (aside.folder / "t.md").read_bytes() == old  # the old debate is kept where the sentence says


def test_a_meeting_folder_is_set_aside_and_put_back_whole(tmp_path: Path) -> None:
    meeting = tmp_path / ".roundtable" / "cache"
    meeting.mkdir(parents=True)
    (meeting / "minutes.md").write_text("# minutes\n", encoding="utf-8")
    (meeting / "agenda.md").write_text("# agenda\n", encoding="utf-8")
    before = files(tmp_path)
    aside = SetAside(meeting)
    assert not meeting.exists()
    aside.restore()  # the new start failed before it created anything
    assert files(tmp_path) == before
    assert not list(meeting.parent.glob(".moot-replaced-*"))

"""The one path rule (moot.paths): what a person or client names stays inside the work root, and records live
only in real directories under it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from moot.errors import PathRefused
from moot.paths import CLIENT_FIX, inside_root, record_place


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A work root with a document, an in-root link to its folder, and links that lead out of it."""
    work = tmp_path / "work"
    (work / "docs").mkdir(parents=True)
    (work / "docs" / "a.md").write_text("# A\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n", encoding="utf-8")
    (work / "latest").symlink_to("docs")  # stays inside
    (work / "out").symlink_to(outside)  # leads out
    (work / "docs" / "s.md").symlink_to(outside / "secret.md")
    return work


def test_a_file_inside_the_root_is_its_real_path_from_the_root_or_the_current_directory(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert inside_root(root, "docs/a.md", what="the source", base=root) == root / "docs" / "a.md"
    assert inside_root(root, "latest/a.md", what="the source", base=root) == root / "docs" / "a.md"
    assert inside_root(root, "docs/../docs/a.md", what="the source", base=root) == root / "docs" / "a.md"
    monkeypatch.chdir(root / "docs")
    assert inside_root(root, "a.md", what="the source") == root / "docs" / "a.md"
    assert inside_root(root, str(root / "docs" / "a.md"), what="the source") == root / "docs" / "a.md"


@pytest.mark.parametrize("given", ["/etc/passwd", "../outside/secret.md", "docs/../../outside/secret.md"])
def test_a_path_outside_the_root_is_refused_with_the_fix(root: Path, given: str) -> None:
    with pytest.raises(PathRefused) as refused:
        inside_root(root, given, what="the agenda", base=root, fix=CLIENT_FIX)
    message = str(refused.value)
    assert message.startswith(f"the agenda {given} is outside the work root {root}")
    assert message.endswith(CLIENT_FIX + ".") and refused.value.link is None


@pytest.mark.parametrize(("given", "link"), [("out/secret.md", "out"), ("docs/s.md", "docs/s.md")])
def test_a_link_inside_the_root_that_leads_out_is_refused_at_the_link(root: Path, given: str, link: str) -> None:
    with pytest.raises(PathRefused) as refused:
        inside_root(root, given, what="the source", base=root)
    assert refused.value.link == root / link
    assert "symbolic link that leads out of the work root" in str(refused.value)
    # Coming back into the root after the link changes nothing: the link itself is refused.
    with pytest.raises(PathRefused):
        inside_root(root, f"out/../{root.name}/docs/a.md", what="the source", base=root)


def test_links_above_the_root_are_followed(root: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    assert inside_root(alias, alias / "docs" / "a.md", what="the source") == root / "docs" / "a.md"


def test_a_nul_character_or_an_impossible_name_is_refused(root: Path) -> None:
    with pytest.raises(PathRefused, match="NUL"):
        inside_root(root, "docs/a.md\x00.txt", what="the source", base=root)
    with pytest.raises(PathRefused, match="File name too long"):
        inside_root(root, "docs/" + "x" * 300 + "/a.md", what="the source", base=root)


def test_a_record_folder_may_not_be_a_link_even_one_that_stays_inside(root: Path) -> None:
    assert record_place(root, ".dialogues") == root / ".dialogues"  # not there yet: moot creates it
    (root / ".agora").symlink_to(root / "docs")
    (root / ".council").symlink_to(root / "out")
    for folder in (".agora", ".council", ".council/x.md", "latest/a.md"):
        with pytest.raises(PathRefused) as refused:
            record_place(root, folder)
        assert "is a symbolic link" in str(refused.value) and refused.value.link is not None
    for escape in ("../outside", "/etc", ".", ".dialogues/../../outside"):
        with pytest.raises(PathRefused, match="is not under the work root"):
            record_place(root, escape)
    assert os.listdir(root.parent / "outside") == ["secret.md"]

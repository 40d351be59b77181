"""Sources: which files are read, what retrieval returns, and what verifies."""

from __future__ import annotations

from pathlib import Path

import pytest
from sources_helpers import GUIDE, RETRY, line_of, make_project

from moot.errors import UserError
from moot.sources import SourceIndex, check_citation, collect_sources
from moot.sources import collect as collect_module


@pytest.mark.parametrize("git", [True, False], ids=["git-ls-files", "gitignore-walk"])
def test_gitignore_is_respected_with_nested_patterns_and_negation(tmp_path: Path, git: bool) -> None:
    project = make_project(tmp_path, git=git)
    sources = collect_sources([project], tmp_path)
    paths = {item.path for item in sources.files}
    assert "project/src/net/retry.py" in paths
    assert "project/docs/guide.md" in paths
    assert "project/logs/keep.log" in paths  # re-included by !keep.log
    assert "project/logs/debug.log" not in paths  # *.log
    assert "project/build/out.txt" not in paths  # build/
    assert "project/src/net/secrets.txt" not in paths  # the nested .gitignore
    assert {s.path: s.reason for s in sources.skipped} == {"project/src/logo.png": "binary"}
    note = sources.skipped_note()
    assert note is not None and "1 binary (project/src/logo.png)" in note


def test_bounds_skip_large_files_and_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path, git=False)
    (project / "docs" / "big.md").write_text("x" * 3000, encoding="utf-8")
    monkeypatch.setattr(collect_module, "MAX_FILE_BYTES", 2048)
    sources = collect_sources([project / "docs"], tmp_path)
    assert [s.path for s in sources.skipped] == ["project/docs/big.md"]
    assert "larger than 2 KiB" in (sources.skipped_note() or "")
    monkeypatch.setattr(collect_module, "MAX_FILES", 1)
    sources = collect_sources([project], tmp_path)
    assert len(sources.files) == 1
    assert any("beyond the first 1 files" in s.reason for s in sources.skipped)


def test_a_missing_source_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist; check the path given to --source"):
        collect_sources([tmp_path / "nope"], tmp_path)


def test_retrieval_returns_the_right_file_and_line(tmp_path: Path) -> None:
    project = make_project(tmp_path, git=True)
    index = SourceIndex(collect_sources([project], tmp_path))
    best = index.search("exponential backoff for retries", limit=3)[0]
    assert best.path == "project/src/net/retry.py"
    cited = dict(best.numbered())
    line = line_of(RETRY, "exponential backoff")
    assert cited[f"project/src/net/retry.py:{line}"].startswith("# Retries use exponential backoff")
    assert f"project/src/net/retry.py:{line}: # Retries use exponential backoff" in best.render()
    deploy = index.search("when do deployments happen?", limit=1)[0]
    assert deploy.path == "project/docs/guide.md"
    assert any("Tuesday" in text for _, text in deploy.numbered())
    assert index.search("zzz qqq") == []


def test_a_true_quote_verifies_at_or_near_its_line_and_a_fabricated_one_does_not(tmp_path: Path) -> None:
    project = make_project(tmp_path, git=True)
    sources = collect_sources([project], tmp_path)
    line = line_of(GUIDE, "five minutes")
    real = check_citation(
        sources, f"project/docs/guide.md:{line}", "the CACHE keeps   responses for five minutes", where="item 1"
    )
    assert real.verified and real.found_at == f"project/docs/guide.md:{line}"
    # the file's own short name is enough when it is unique; a quote may span a line break
    spanning = check_citation(sources, "guide.md:5", '"five minutes. Stale entries…"', where="item 1")
    assert spanning.verified and spanning.found_at == f"project/docs/guide.md:{line}"
    far = check_citation(sources, "project/docs/guide.md:40", "Deployments happen every Tuesday", where="item 1")
    assert not far.verified and "only" in (far.reason or "")
    invented = check_citation(
        sources, f"project/docs/guide.md:{line}", "the cache keeps responses for an hour", where="item 1"
    )
    assert not invented.verified and f"within 5 lines of line {line}" in (invented.reason or "")
    elsewhere = check_citation(sources, "GOF chapter 5", "Strategy encapsulates algorithms", where="item 1")
    assert not elsewhere.verified and not elsewhere.grounded


@pytest.mark.parametrize("git", [True, False], ids=["git-ls-files", "gitignore-walk"])
def test_sources_stay_inside_the_work_root(tmp_path: Path, git: bool) -> None:
    root = tmp_path / "work"
    root.mkdir()
    project = make_project(root, git=git)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("the secret plan\n", encoding="utf-8")
    (project / "docs" / "leak.md").symlink_to(outside / "secret.md")
    (project / "docs" / "also-guide.md").symlink_to("guide.md")  # a link that stays inside is read
    sources = collect_sources([project / "docs"], root)
    assert {item.path for item in sources.files} >= {"project/docs/guide.md"}
    assert all("secret" not in item.text for item in sources.files)
    assert {s.path: s.reason for s in sources.skipped} == {
        "project/docs/leak.md": "a symbolic link out of the work root"
    }
    for given in (outside, outside / "secret.md", root / ".." / "outside", project / "docs" / "leak.md"):
        with pytest.raises(UserError, match=r"(is outside|leads out of) the work root"):
            collect_sources([given], root)

"""A record, ``moot show`` and ``moot export --html`` name the paths a run was given relative to the work root:
what is shared from a record (a pull request, an email) shows no directory of the machine it was written on.

The duel's seed is the exception its format asks for: its Source Document, Source Link and Source Path keep the
source's absolute path, and ``moot show`` and the export write even those relative to the work root.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.engine.engine_helpers import run_moot

AGENT = f"cmd:{sys.executable} {Path(__file__).parents[1] / 'reliability' / 'protocol_agent.py'}"
DESIGN = """# Cache design

## Goals
Keep every tenant fast: a per-tenant floor bounds the worst case of a quiet tenant.

## Plan
A shared overflow sized at ten percent keeps most of the pooling gain.
"""
AGENDA = "# Agenda\n\nDecide how the cache is partitioned. Tenants vary tenfold in load.\n"
# The lines of the duel's seed that its format fills with the source's absolute path.
SEED_FIELDS = ("**Source Document**:", "**Source Link**:", "| Source Path |")

RUNS = {
    "duel": ["run", "duel", "docs/design.md", "--source", "docs"],
    "critique": ["run", "critique", "--topic", "cache plan", "--context", "docs/design.md", "--source", "docs"],
    "roundtable": ["run", "roundtable", "--agenda", "docs/agenda.md", "--source", "docs"],
    "agora": ["run", "agora", "--topic", "Partition the cache?", "--source", "docs"],
    "council": ["run", "council", "--question", "Partition the cache?", "--source", "docs"],
}


def work_root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "design.md").write_text(DESIGN, encoding="utf-8")
    (root / "docs" / "agenda.md").write_text(AGENDA, encoding="utf-8")
    return root


def written(root: Path) -> dict[Path, str]:
    """Every file the run wrote under the work root (the record and its sidecars), by path."""
    return {
        path: path.read_text(encoding="utf-8", errors="replace")
        for path in root.rglob("*")
        if path.is_file() and "docs" not in path.relative_to(root).parts
    }


def outside_seed(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith(SEED_FIELDS))


@pytest.mark.parametrize("protocol", sorted(RUNS))
def test_a_run_given_relative_paths_records_and_exports_none_of_the_work_roots(tmp_path: Path, protocol: str) -> None:
    root = work_root(tmp_path)
    agents = (
        ["--member", f"alice={AGENT}", "--member", f"bob={AGENT}"] if protocol == "council" else ["--agents", AGENT]
    )
    done = run_moot(*RUNS[protocol], *agents, "--json", cwd=root)
    assert done.returncode in (0, 1), done.stderr
    record = root / json.loads(done.stdout)["artifact"]
    files = written(root)
    assert record in files or record.is_dir()
    for path, text in files.items():
        assert str(root) not in outside_seed(text), path
    if protocol == "duel":  # the seed keeps the absolute path its format asks for, and the turns cite it relatively
        assert f"`{root / 'docs' / 'design.md'}`" in files[record]
        assert "`docs/design.md` § " in files[record]

    page = tmp_path / "page.html"
    exported = run_moot("export", str(record.relative_to(root)), "--html", str(page), cwd=root)
    assert exported.returncode == 0, exported.stderr
    html = page.read_text(encoding="utf-8")
    assert str(root) not in html and str(tmp_path) not in html
    shown = run_moot("show", str(record.relative_to(root)), "--plain", cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert str(root) not in shown.stdout


def test_a_halted_duel_resumed_from_another_directory_reads_its_source_and_supporting_files(tmp_path: Path) -> None:
    root = work_root(tmp_path)
    halted = run_moot("run", "duel", "docs/design.md", "--source", "docs", "--agents", "cmd:sleep 5",
                      "--turn-timeout", "1", "--json", cwd=root)  # fmt: skip
    assert halted.returncode == 1, halted.stderr
    record = root / json.loads(halted.stdout)["artifact"]
    assert json.loads(record.with_name(f".{record.name}.sources.json").read_text())["supporting"] == ["docs"]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = run_moot("resume", str(record), "--agents", AGENT, "--turn-timeout", "60", "--json", cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["outcome"] == "ACCEPTED_CONSENSUS"
    text = record.read_text(encoding="utf-8")
    assert "`docs/design.md` § " in text and str(root) not in outside_seed(text)
    assert run_moot("check", str(record), cwd=elsewhere).returncode == 0


def test_an_older_record_with_absolute_citations_still_checks_and_shows_them_relative(tmp_path: Path) -> None:
    root = work_root(tmp_path)
    done = run_moot("run", "duel", "docs/design.md", "--agents", AGENT, "--json", cwd=root)
    record = root / json.loads(done.stdout)["artifact"]
    # As moot wrote a duel before: every citation and the conclusion name the source by its absolute path (and,
    # as in a record older than the digest chain, no chain or other file of moot's is beside it).
    older = record.read_text(encoding="utf-8").replace("`docs/design.md`", f"`{root / 'docs' / 'design.md'}`")
    record.write_text("\n".join(line for line in older.split("\n") if "moot-chain" not in line), encoding="utf-8")
    for sidecar in record.parent.glob(f".{record.name}.*"):
        sidecar.unlink()
    assert str(root) in outside_seed(older)
    checked = run_moot("check", str(record), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    shown = run_moot("show", str(record), "--plain", cwd=tmp_path)
    assert shown.returncode == 0 and str(root) not in shown.stdout and "`docs/design.md` § " in shown.stdout

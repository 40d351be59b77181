"""Tamper evidence that cannot be switched off, in all five protocols.

A record moot wrote carries its chain's head inside itself, so deleting the chain sidecar no longer hides an edit;
stripping the marks as well still leaves moot's other files beside the record, so the missing chain is an error.
A real SIGKILL between a debate's last append and its chain's append leaves the chain one write short: ``moot
check`` says so (it never writes), an edit of that last turn made meanwhile is caught by the mark written with it,
and ``moot resume`` of the ended debate completes the chain, after which an edit of that turn is caught too.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from crash_helpers import find_record
from soak_helpers import STARTED, scripted_reply

import forked_moot
from moot.agents import FunctionAgent
from moot.core.chain import chain_path, read_chain
from moot.core.files import ExitCode
from moot.detect import check_path
from moot.engine.loop import Limits
from moot.engine.session import run_driver
from moot.engine.specs import build_driver

HERE = Path(__file__).parent
SOURCE = "# Shared cache across tenants\n\n## Goals\nIsolation first.\n\n## Eviction\nOne global LRU list.\n"
MEMBERS = [["ada", "script:x"], ["bo", "script:x"], ["cy", "script:x"]]
DEBATES: dict[str, dict[str, Any]] = {
    "critique": {"protocol": "critique", "topic": "Adopt a monorepo", "max_rounds": 2},
    "duel": {"protocol": "duel", "source": "design.md"},
    "agora": {"protocol": "agora", "topic": "Adopt a monorepo", "max_turns": 12},
    "roundtable": {"protocol": "roundtable", "topic": "Cache design", "speakers": ["a", "b"], "max_rounds": 1},
    "council": {"protocol": "council", "question": "Should tenants share one cache?", "members": MEMBERS, "seed": 5},
}
# A phrase of an accepted turn (the first that holds it) and what an editor makes of it.
EDITS = {
    "critique": ("the plan holds", "the plan fails"),
    "duel": ("needs a per-tenant floor", "needs no floor"),
    "agora": ("The reasons stand.", "The reasons fall."),
    "roundtable": ("supports a per-tenant floor", "opposes a per-tenant floor"),
    "council": ("its floor is the core of this answer", "its floor is beside the point"),
}
MARK = re.compile(r"^[ \t]*<!-- moot-chain [^\n]*-->[ \t]*\n", re.MULTILINE)


def debate(protocol: str, root: Path) -> Path:
    """Run one debate to its outcome through moot's engine (scripted participants, in-process): its record."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "design.md").write_text(SOURCE, encoding="utf-8")
    spec = DEBATES[protocol]
    driver = build_driver({**spec, "source": str(root / spec["source"])} if "source" in spec else spec, root, STARTED)
    agent = FunctionAgent(scripted_reply)
    result = asyncio.run(run_driver(driver, dict.fromkeys(driver.roles(), agent), Limits(repairs=0)))
    assert result.to_json()["outcome"] is not None
    assert check_path(driver.record_path).exit_code is ExitCode.VALID
    return driver.record_path


def turn_file(protocol: str, record: Path, phrase: str) -> Path:
    """The file that holds ``phrase`` in an accepted turn: the record, or a speech of a meeting."""
    if protocol != "roundtable":
        return record
    return next(p for p in sorted(record.glob("[0-9]*.md")) if phrase in p.read_text(encoding="utf-8"))


def edit(protocol: str, record: Path) -> None:
    before, after = EDITS[protocol]
    path = turn_file(protocol, record, before)
    text = path.read_text(encoding="utf-8")
    assert before in text
    path.write_text(text.replace(before, after, 1), encoding="utf-8")


def strip_marks(protocol: str, record: Path) -> int:
    """Remove every chain mark from the record (each file of a meeting); how many there were."""
    removed = 0
    for path in sorted(record.glob("*.md")) if record.is_dir() else [record]:
        text = path.read_text(encoding="utf-8")
        removed += len(MARK.findall(text))
        path.write_text(MARK.sub("", text), encoding="utf-8")
    return removed


def errors(record: Path) -> set[str]:
    return {v.rule for v in check_path(record).errors}


@pytest.mark.parametrize("protocol", list(DEBATES))
def test_deleting_the_chain_and_editing_a_turn_is_an_error(protocol: str, tmp_path: Path) -> None:
    record = debate(protocol, tmp_path)
    chain_path(record).unlink()
    assert errors(record) == {"CHAIN_MISSING"}  # moot wrote it: its own chain head is inside it
    edit(protocol, record)
    report = check_path(record)
    assert report.exit_code is ExitCode.VIOLATIONS
    assert {"CHAIN_MISSING", "PRIOR_TURN_MODIFIED"} <= errors(record)


@pytest.mark.parametrize("protocol", list(DEBATES))
def test_stripping_the_marks_as_well_still_shows_that_the_chain_is_gone(protocol: str, tmp_path: Path) -> None:
    record = debate(protocol, tmp_path)
    chain_path(record).unlink()
    assert strip_marks(protocol, record) > 0
    edit(protocol, record)
    # The attempt log moot keeps beside the record says moot wrote it.
    report = check_path(record)
    assert report.exit_code is ExitCode.VIOLATIONS and "CHAIN_MISSING" in errors(record)


KILLED_RUN = textwrap.dedent(
    """
    import os, signal, sys
    sys.path[:0] = [sys.argv[1], os.path.dirname(sys.argv[1])]
    from pathlib import Path
    from test_tamper_evidence import debate
    from moot.core import chain

    protocol, root, last = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    real_append = chain._append_rows

    def killed_before_the_last_row(path, rows):
        # The record's write of the last turn (and its mark) is durable; the chain's append is not made.
        if rows and rows[-1]["turn"] == last:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_append(path, rows)

    chain._append_rows = killed_before_the_last_row
    debate(protocol, root)
    """
)


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return forked_moot.run(args, cwd=cwd, timeout=300)


@pytest.mark.parametrize("protocol", list(DEBATES))
def test_a_sigkill_before_the_last_chain_append_is_repaired_by_resume_and_edits_stay_visible(
    protocol: str, tmp_path: Path
) -> None:
    reference = debate(protocol, tmp_path / "reference")
    rows, _ = read_chain(reference)
    assert rows  # the number of the chain's last row: where the kill lands
    root = tmp_path / "killed"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, str(HERE), protocol, str(root), str(len(rows))],
        capture_output=True, text=True, timeout=300, env=os.environ,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr  # SIGKILL
    record = find_record(protocol, root)
    assert record is not None
    kept, _ = read_chain(record)
    assert kept is not None and len(kept) == len(rows) - 1  # the chain is one turn short

    report = check_path(record)  # an error, not a valid record; moot check itself writes nothing
    assert [v.rule for v in report.errors] == ["CHAIN_SHORT"] and report.repairable
    assert len(read_chain(record)[0] or []) == len(rows) - 1

    # Editing that last turn before anyone repairs the chain: its mark, written with it, shows it.
    early = tmp_path / "edited-early"
    shutil.copytree(root, early, symlinks=True)
    early_record = early / record.relative_to(root)
    edit_last(protocol, early_record)
    assert "PRIOR_TURN_MODIFIED" in errors(early_record)
    moot("resume", str(early_record), cwd=early)
    assert "PRIOR_TURN_MODIFIED" in errors(early_record)  # not "repaired" into the chain
    assert len(read_chain(early_record)[0] or []) == len(rows) - 1

    # moot resume of the ended debate completes the chain; an edit of the last turn afterwards is caught.
    resumed = moot("resume", str(record), cwd=root)
    assert "brought the digest chain" in resumed.stderr and "nothing to resume" in resumed.stderr, resumed.stderr
    assert check_path(record).exit_code is ExitCode.VALID
    assert len(read_chain(record)[0] or []) == len(rows)
    edit_last(protocol, record)
    assert "PRIOR_TURN_MODIFIED" in errors(record)


def edit_last(protocol: str, record: Path) -> None:
    """Change a word of the debate's last accepted turn."""
    if protocol == "roundtable":
        path = record / "MINUTES.md"
        old, new = "A per-tenant floor.", "No floor."
    else:
        path = record
        old, new = {
            "critique": ("Agreed in round 2", "Refused in round 2"),
            "duel": ("Position 6 of", "Claim 6 of"),
            "agora": ("signals approve. The reasons stand.", "signals approve. The reasons fall."),
            "council": ("its floor is the core of this answer", "its floor is beside the point"),
        }[protocol]
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1, (protocol, old)
    at = text.rindex(old)
    path.write_text(text[:at] + new + text[at + len(old) :], encoding="utf-8")

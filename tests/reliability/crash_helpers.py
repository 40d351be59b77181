"""What the crash test needs to run ``moot run``/``moot resume`` as a process, kill it, and read what it left.

A record's turns are read from its raw text (the turn headings, the speech file names), not through
moot's parsers, so a lost or duplicated turn shows even if a parser were to hide it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forked_moot import MOOT
from moot import registry
from moot.detect import check_path
from moot.protocols.roundtable.machine import MINUTES_FILE

AGENT_SCRIPT = Path(__file__).with_name("protocol_agent.py")
SCRIPTED_AGENT = f"cmd:{sys.executable} {AGENT_SCRIPT}"

SOURCE_NAME = "design.md"  # the duel's read-only source document, in every work root
SOURCE_TEXT = "# Shared cache across tenants\n\n## Goals\nIsolation first.\n\n## Eviction\nOne global LRU list.\n"

_CRITIQUE_TURN = re.compile(r"^## \[(?P<role>[^\]]+)\] Round (?P<round>\d+)(?: — .*)?$", re.MULTILINE)
_NUMBERED_TURN = re.compile(r"^## Turn (?P<number>\d+) — .*$", re.MULTILINE)  # duel and Agora
_COUNCIL_ENTRY = re.compile(r"^## Stage (?P<stage>[123]) — (?P<what>.+?) \(.*\)$", re.MULTILINE)
_SPEECH_FILE = re.compile(r"^(?P<number>\d{3})_.+\.md$")  # roundtable
_TEMP_FILE = re.compile(r"^\..+\.[0-9a-f]{16}\.tmp$")  # what atomic_write_text leaves when killed mid-write


def prepare_root(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / SOURCE_NAME).write_text(SOURCE_TEXT, encoding="utf-8")
    return root


def find_record(protocol: str, root: Path) -> Path | None:
    """The debate's record under ``root`` once it exists: a file, or the roundtable's meeting directory."""
    if protocol == "roundtable":
        # A hidden directory is a meeting a kill left half-built in staging, not a record.
        found = [d for d in (root / ".roundtable").glob("[!.]*") if (d / "turn.json").exists()]
    else:
        folder = registry.get(protocol).folder
        found = list((root / folder).glob("*.md"))
    assert len(found) <= 1, f"more than one record under {root}: {found}"
    return found[0] if found else None


@dataclass(frozen=True)
class Turns:
    """The turns a record holds, as a reader sees them."""

    headings: list[str]  # comparable across runs: timestamps left out
    numbers: list[int]  # each turn's position in the debate, 1-based

    @property
    def duplicated(self) -> int:
        return len(self.numbers) - len(set(self.numbers))

    @property
    def lost(self) -> int:
        """Positions missing below the highest one (a gap)."""
        return max(self.numbers, default=0) - len(set(self.numbers))

    @property
    def consecutive(self) -> bool:
        return self.numbers == list(range(1, len(self.numbers) + 1))


def minutes_written(protocol: str, record: Path) -> int:
    """1 when a roundtable's minutes are written: a run counts the moderator's minutes as a turn."""
    return int(protocol == "roundtable" and (record / MINUTES_FILE).is_file())


def read_turns(protocol: str, record: Path) -> Turns:
    if protocol == "roundtable":
        names = sorted(p.name for p in record.iterdir() if _SPEECH_FILE.match(p.name))
        return Turns(names, [int(name[:3]) for name in names])
    text = record.read_text(encoding="utf-8")
    if protocol == "critique":
        matches = list(_CRITIQUE_TURN.finditer(text))
        opener = matches[0]["role"] if matches else ""
        numbers = [2 * (int(m["round"]) - 1) + (1 if m["role"] == opener else 2) for m in matches]
        return Turns([f"[{m['role']}] Round {m['round']}" for m in matches], numbers)
    if protocol == "council":  # entries are not numbered: a repeated entry counts as its first place again
        found = [f"Stage {m['stage']} — {m['what']}" for m in _COUNCIL_ENTRY.finditer(text)]
        return Turns(found, [found.index(heading) + 1 for heading in found])
    matches = list(_NUMBERED_TURN.finditer(text))
    return Turns([m[0] for m in matches], [int(m["number"]) for m in matches])


def wait_for_a_new_turn(
    protocol: str, root: Path, process: subprocess.Popen[str], on_disk: int, timeout_s: float
) -> None:
    """Until the record holds more than ``on_disk`` turns, or the process has ended, or ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while process.poll() is None and time.monotonic() < deadline:
        record = find_record(protocol, root)
        if record is not None and len(read_turns(protocol, record).headings) > on_disk:
            return
        time.sleep(0.2)


def temp_files_left(record: Path) -> list[Path]:
    """Temporary files of an interrupted atomic write: the kill landed inside a write."""
    folder = record if record.is_dir() else record.parent
    return [p for p in folder.iterdir() if _TEMP_FILE.match(p.name)]


def start_moot(root: Path, args: list[str], agents: str | None, env: dict[str, str]) -> subprocess.Popen[str]:
    # A council names each member's agent with --member; its resume takes --agents like any other.
    chosen = ["--agents", agents] if agents and args[:2] != ["run", "council"] else []
    return subprocess.Popen(
        [*MOOT, *args, *chosen, "--json"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def run_or_resume_args(protocol: str, root: Path, run_args: list[str]) -> list[str]:
    """``moot resume RECORD`` once the record exists, else the original ``moot run``."""
    record = find_record(protocol, root)
    return ["resume", str(record)] if record is not None else ["run", protocol, *run_args]


def finished_report(process: subprocess.Popen[str], stdout: str, stderr: str) -> dict[str, Any]:
    """The JSON report of a ``moot run``/``moot resume`` that ended by itself, with an outcome."""
    assert process.returncode in (0, 1), f"moot exited {process.returncode}: {stderr[-2000:]}"
    report: dict[str, Any] = json.loads(stdout)
    assert report["outcome"] is not None, report
    return report


@dataclass
class Tally:
    """What one protocol's kills found, for the test's assertions and the long run's figures."""

    debates: int = 0
    kills: int = 0
    kills_before_record: int = 0  # moot was still starting: no record yet
    kills_inside_a_write: int = 0  # a temp file of an atomic write was left behind
    kills_before_a_new_turn: int = 0  # the killed run had not added a turn yet
    repairable_after_kill: int = 0
    resumes: int = 0
    checks_passed: int = 0
    lost_turns: int = 0
    duplicated_turns: int = 0
    problems: list[str] = field(default_factory=list)
    temp_files_seen: set[str] = field(default_factory=set)
    # The fastest whole run that ended before its kill: the machine runs debates this fast now, whatever it did
    # when the reference was timed, so later kill moments are drawn within it.
    fastest_unkilled_run_s: float | None = None

    def figures(self) -> dict[str, int]:
        return {k: v for k, v in vars(self).items() if isinstance(v, int)}


def sealed_problems(protocol: str, record: Path) -> list[str]:
    """A sealed stage shown in part (revealed early), or a committed answer asked for and committed again."""
    if protocol != "council":
        return []
    text = record.read_text(encoding="utf-8")
    members = len(re.findall(r"^  - \S+: ", text, re.MULTILINE))
    shown = [m["stage"] for m in _COUNCIL_ENTRY.finditer(text)]
    answers = len(re.findall(r"^## Stage 1 — Answer of ", text, re.MULTILINE))
    problems = []
    if shown.count("1") not in (0, members):
        problems.append(f"stage 1 shows {shown.count('1')} of {members} members' entries")
    if shown.count("2") not in (0, answers):
        problems.append(f"stage 2 shows {shown.count('2')} of {answers} reviews")
    sidecar = record.with_name(f".{record.name}.sealed.jsonl")
    rows = []
    for line in sidecar.read_text(encoding="utf-8").splitlines() if sidecar.exists() else []:
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line torn by the kill: never a commitment
        rows.append((row["phase"], row["role"]))
    problems += [
        f"{role} was asked again after committing {phase}" for phase, role in set(rows) if rows.count((phase, role)) > 1
    ]
    return problems


def check_after_kill(protocol: str, record: Path, reference: list[str] | None, tally: Tally, context: str) -> int:
    """``moot check`` passes (or says repairable) and the turns so far are a clean prefix; returns the turn count."""
    report = check_path(record)
    if report.exit_code == 0:
        tally.checks_passed += 1
    elif report.repairable:
        tally.repairable_after_kill += 1
    else:
        tally.problems.append(f"{context}: moot check says {[str(v) for v in report.violations]}")
    turns = read_turns(protocol, record)
    tally.lost_turns += turns.lost
    tally.duplicated_turns += turns.duplicated
    if not turns.consecutive:
        tally.problems.append(f"{context}: turns are numbered {turns.numbers}")
    if reference is not None and turns.headings != reference[: len(turns.headings)]:
        tally.problems.append(f"{context}: the turns {turns.headings} are not the start of {reference}")
    tally.problems.extend(f"{context}: {problem}" for problem in sealed_problems(protocol, record))
    left = {str(p) for p in temp_files_left(record)}
    if left - tally.temp_files_seen:
        tally.kills_inside_a_write += 1
        tally.temp_files_seen |= left
    return len(turns.headings)

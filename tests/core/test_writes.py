"""Crash-safe writes: a process killed at any moment leaves the old or the new text, never a torn one."""

from __future__ import annotations

import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moot.core.files import append_log_line, atomic_write_text

TURN = "---\n\n## Turn {n}\n" + "x" * 20_000 + "\nend {n}\n"

WRITER = """
import sys
from pathlib import Path
from moot.core.files import atomic_write_text
path = Path(sys.argv[1])
n = path.read_text().count("## Turn ")
while True:
    n += 1
    atomic_write_text(path, path.read_text() + {turn!r}.format(n=n))
"""


def wait_until_writing(proc: subprocess.Popen[bytes], path: Path, size: int) -> None:
    """Until the child has written past ``size`` bytes: on a loaded machine it may take seconds to start."""
    deadline = time.monotonic() + 120
    while (path.stat().st_size if path.exists() else 0) <= size:
        assert proc.poll() is None and time.monotonic() < deadline, "the writer never started writing"
        time.sleep(0.01)


def complete_turns(text: str) -> int:
    """How many whole turns the file holds; fails the test on a torn one."""
    chunks = [c for c in text.split("---\n\n## Turn ") if c]
    for index, chunk in enumerate(chunks, start=1):
        assert chunk.endswith(f"\nend {index}\n"), f"turn {index} is torn"
    return len(chunks)


def test_sigkill_during_appends_never_tears_a_turn(tmp_path: Path) -> None:
    rng = random.Random(7)
    record = tmp_path / "record.md"
    record.write_text("")
    seen = 0
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", WRITER.format(turn=TURN), str(record)])
        wait_until_writing(proc, record, record.stat().st_size)
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        now = complete_turns(record.read_text())
        assert now >= seen
        seen = now
    assert seen > 0, "the writer never wrote a turn"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "record.md"]
    # A temp file may survive a kill, but it is hidden and never the record itself.
    assert all(name.startswith(".record.md.") for name in leftovers)


LOGGER = """
import sys
from pathlib import Path
from moot.core.files import append_log_line
n = 0
while True:
    n += 1
    append_log_line(Path(sys.argv[1]), '{"n": %d, "pad": "%s"}' % (n, "x" * 5000))
"""


def test_a_killed_log_append_costs_at_most_the_last_line(tmp_path: Path) -> None:
    log = tmp_path / "usage.jsonl"
    rng = random.Random(11)
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", LOGGER, str(log)])
        wait_until_writing(proc, log, (log.stat().st_size if log.exists() else 0) + 20_000)
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        append_log_line(log, '{"n": 0, "pad": ""}')  # after a kill, the next line starts on a line of its own
    lines = log.read_text().splitlines()
    torn = [line for line in lines if not (line.startswith('{"n": ') and line.endswith('"}'))]
    assert len(lines) > 10 and len(torn) <= 3  # at most one torn line per kill
    assert lines[-1] == '{"n": 0, "pad": ""}'


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "state.json"
    atomic_write_text(path, "one")
    atomic_write_text(path, "two")
    assert path.read_text() == "two"
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.json"]


def test_writes_refuse_symlinks(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("precious\n")
    link = tmp_path / "record.md"
    link.symlink_to(target)
    with pytest.raises(FileExistsError, match="symbolic link"):
        append_log_line(link, "more")
    with pytest.raises(FileExistsError, match="symbolic link"):
        atomic_write_text(link, "replaced\n")
    assert target.read_text() == "precious\n"


def test_unreadable_is_reported_not_raised(tmp_path: Path) -> None:
    from moot.core.files import read_text

    folder = tmp_path / "looks-like-a-file.md"
    folder.mkdir()
    text, problems = read_text(folder)
    assert text is None
    assert problems[0].rule == "FILE_UNREADABLE" and str(folder) in problems[0].message


def test_new_records_are_readable_by_others_like_any_new_file(tmp_path: Path) -> None:
    path = tmp_path / "turn.json"
    atomic_write_text(path, "{}")
    assert path.stat().st_mode & 0o044 == 0o044  # umask 022 in tests: group and others may read
    path.chmod(0o600)
    atomic_write_text(path, "{}")
    assert path.stat().st_mode & 0o777 == 0o600  # a mode the user chose is kept


APPENDER = """
import sys
from pathlib import Path
from moot.core.files import FileStamp, append_record
path = Path(sys.argv[1])
n = path.read_text().count("## Turn ")
stamp = FileStamp.of(path)
while True:
    n += 1
    stamp = append_record(path, {turn!r}.format(n=n).encode(), stamp)
"""


def test_sigkill_during_record_appends_cuts_at_most_the_turn_being_written(tmp_path: Path) -> None:
    """The kernel stops a write of several pages at SIGKILL, so the turn being appended may be cut short;
    every turn before it stays whole (``moot resume`` sets such a cut turn aside: tests/reliability)."""
    rng = random.Random(13)
    record = tmp_path / "record.md"
    record.write_text("")
    seen = 0
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", APPENDER.format(turn=TURN), str(record)])
        wait_until_writing(proc, record, record.stat().st_size)
        # Appends are fast: a longer wait would fill the record to its size limit within five kills.
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        text = record.read_text()
        ends = list(re.finditer(r"\nend \d+\n", text))
        whole = text[: ends[-1].end()] if ends else ""
        tail = text[len(whole) :]
        now = complete_turns(whole)
        assert now > seen
        assert TURN.format(n=now + 1).startswith(tail)  # nothing but the start of the next turn
        record.write_text(whole)  # as resume leaves it
        seen = now
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.md"]  # an append leaves no temp file


def test_an_append_to_a_record_someone_else_changed_writes_nothing(tmp_path: Path) -> None:
    from moot.core.files import FileStamp, append_record
    from moot.errors import RecordChangedError

    record = tmp_path / "record.md"
    record.write_text("# Dialogue: x\n")
    stamp = append_record(record, b"first\n", FileStamp.of(record))
    record.write_text("# Dialogue: x\nfirst\n")  # same bytes, but written anew by another program
    with pytest.raises(RecordChangedError):
        append_record(record, b"second\n", stamp)
    assert record.read_text() == "# Dialogue: x\nfirst\n"

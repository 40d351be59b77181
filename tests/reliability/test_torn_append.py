"""A SIGKILL inside the write of a turn: ``moot check`` calls the record repairable, ``moot resume`` sets the cut
turn aside (its bytes kept beside the record) and the debate ends as an unkilled one does.

The kernel ends a write of several pages early when the process gets SIGKILL; the child here does the same on
purpose (half the last turn's bytes, then SIGKILL) so that the kill lands inside the write every time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from crash_helpers import SCRIPTED_AGENT, find_record
from test_tamper_evidence import debate, moot

from moot.core.chain import read_chain
from moot.core.files import ExitCode
from moot.core.torn import torn_path
from moot.detect import check_path

HERE = Path(__file__).parent
FILE_PROTOCOLS = ["critique", "duel", "agora", "council"]  # a roundtable writes each speech whole, by rename

KILLED_IN_WRITE = textwrap.dedent(
    """
    import os, signal, sys
    sys.path[:0] = [sys.argv[1], os.path.dirname(sys.argv[1])]
    from pathlib import Path
    from test_tamper_evidence import debate
    from moot.core import files

    protocol, root, last = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    real_append = files._append_or_restore

    def killed_inside_the_last_turn(fd, path, data, size, mtime_ns, *, durable):
        if path.suffix == ".md" and f"moot-chain turns={last} ".encode() in data:
            os.write(fd, data[: len(data) // 2])  # what the kernel leaves of a write that SIGKILL stops
            os.kill(os.getpid(), signal.SIGKILL)
        return real_append(fd, path, data, size, mtime_ns, durable=durable)

    files._append_or_restore = killed_inside_the_last_turn
    debate(protocol, root)
    """
)


def killed_inside_the_last_write(protocol: str, root: Path, last: int) -> Path:
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_IN_WRITE, str(HERE), protocol, str(root), str(last)],
        capture_output=True, text=True, timeout=300, env=os.environ,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr  # SIGKILL
    record = find_record(protocol, root)
    assert record is not None
    return record


@pytest.mark.parametrize("protocol", FILE_PROTOCOLS)
def test_a_turn_cut_short_by_a_kill_is_set_aside_by_resume_and_the_debate_ends_as_unkilled(
    protocol: str, tmp_path: Path
) -> None:
    reference = debate(protocol, tmp_path / "reference")
    rows, _ = read_chain(reference)
    assert rows
    expected = check_path(reference).summary
    assert expected is not None

    record = killed_inside_the_last_write(protocol, tmp_path / "killed", len(rows))
    torn = record.read_bytes()
    report = check_path(record)
    assert report.exit_code is ExitCode.VIOLATIONS and report.repairable  # moot check says resume finishes it
    assert record.read_bytes() == torn  # and writes nothing

    resumed = moot("resume", str(record), "--agents", SCRIPTED_AGENT, "--quiet", cwd=record.parent.parent)
    assert resumed.returncode == 0, resumed.stderr
    assert "as a crash inside its write leaves it" in resumed.stderr, resumed.stderr

    # The cut bytes are kept beside the record: exactly what the kill left after the last whole turn.
    kept = torn_path(record).read_bytes()
    assert kept and torn.endswith(kept) and torn[: len(torn) - len(kept)].rstrip().endswith(b"-->")
    final = check_path(record)
    assert final.exit_code is ExitCode.VALID, [str(v) for v in final.violations]
    assert final.summary is not None
    assert (final.summary.status, final.summary.turns) == (expected.status, expected.turns)
    assert len(read_chain(record)[0] or []) == len(rows)


def test_a_cut_turn_is_not_set_aside_when_an_earlier_turn_was_edited(tmp_path: Path) -> None:
    reference = debate("critique", tmp_path / "reference")
    rows, _ = read_chain(reference)
    record = killed_inside_the_last_write("critique", tmp_path / "killed", len(rows or []))
    text = record.read_text(encoding="utf-8")
    record.write_text(text.replace("the plan holds", "the plan fails", 1), encoding="utf-8")
    edited = record.read_bytes()
    assert not check_path(record).repairable

    resumed = moot("resume", str(record), "--agents", SCRIPTED_AGENT, "--quiet", cwd=record.parent.parent)
    assert resumed.returncode != 0 and "Traceback" not in resumed.stderr
    assert record.read_bytes() == edited and not torn_path(record).exists()  # nothing cut, nothing written


def test_a_whole_turn_appended_by_hand_is_kept(tmp_path: Path) -> None:
    """A turn a person appends without moot also follows the last mark; it is whole, so it is not set aside."""
    record = debate("critique", tmp_path)
    before = record.read_text(encoding="utf-8")
    mark = before.rindex("<!-- moot-chain")
    by_hand = before[:mark].rstrip("\n") + "\n"  # the last turn as a person writes it: no mark
    record.write_text(by_hand, encoding="utf-8")
    chain = record.with_name(f".{record.name}.chain")
    chain.write_text("".join(chain.read_text().splitlines(keepends=True)[:-1]))

    resumed = moot("resume", str(record), "--agents", SCRIPTED_AGENT, "--quiet", cwd=record.parent.parent)
    assert "as a crash inside its write leaves it" not in resumed.stderr
    assert record.read_text(encoding="utf-8").startswith(by_hand) and not torn_path(record).exists()

"""`moot run` and `moot resume` on a real small tmpfs that fills up or turns read-only: the record is left
exactly as it was, moot says what is wrong and what to do in one sentence (exit 2), and `moot resume`
finishes the debate once the disk is fixed."""

from __future__ import annotations

from pathlib import Path

from fault_helpers import LONG_AGENT, SNAPSHOT_ENV, accepted_per_turn, fill, moot, one_sentence, remount

from moot.detect import check_path

TOPIC = ["--topic", "Adopt a monorepo", "--max-rounds", "3"]  # six turns when nothing goes wrong
RECORD = ".dialogues/adopt-a-monorepo.md"


def test_a_turn_that_meets_a_full_disk_leaves_the_record_as_it_was_and_resume_finishes(
    small_disk: Path, tmp_path: Path
) -> None:
    snapshot = tmp_path / "record-before-turn-3.md"
    env = {"MOOT_TEST_DISK": str(small_disk), SNAPSHOT_ENV: str(snapshot)}
    # The disk fills up just as turn 3 is appended to the record (its usage row is already written).
    run = moot(
        "run", "critique", *TOPIC, "--quiet", "--agents", LONG_AGENT, cwd=small_disk, fault="fill:before:3", **env
    )
    record = small_disk / RECORD
    assert run.returncode == 2, run.stderr
    said = one_sentence(run.stderr)
    assert said.startswith("disk full: ") and "free space" in said and f"moot resume {RECORD}" in said
    assert record.read_bytes() == snapshot.read_bytes()  # not a byte of turn 3
    assert check_path(record).exit_code == 0

    # Still full: a resume is refused the same way, and still writes nothing.
    again = moot("resume", RECORD, "--quiet", cwd=small_disk)
    assert again.returncode == 2 and one_sentence(again.stderr).startswith("disk full: ")
    assert record.read_bytes() == snapshot.read_bytes()

    (small_disk / "filler").unlink()
    resumed = moot("resume", RECORD, "--quiet", cwd=small_disk)
    assert resumed.returncode == 0, resumed.stderr
    summary = check_path(record).summary
    assert check_path(record).exit_code == 0 and summary is not None and summary.turns == 6
    # Turn 3's first row (written before the disk filled) no longer claims the turn: one accepted row a turn.
    assert accepted_per_turn(record) == dict.fromkeys(range(1, 7), 1)


def test_a_read_only_file_system_is_one_sentence_and_resume_works_once_writable(small_disk: Path) -> None:
    # A debate stopped after turn 2 (its process killed), then the file system turns read-only.
    killed = moot("run", "critique", *TOPIC, "--quiet", "--agents", LONG_AGENT, cwd=small_disk, fault="kill:after:2")
    assert killed.returncode < 0
    record = small_disk / RECORD
    before = record.read_bytes()
    remount(small_disk, "ro")
    try:
        resumed = moot("resume", RECORD, "--quiet", cwd=small_disk)
        assert resumed.returncode == 2, resumed.stderr
        said = one_sentence(resumed.stderr)
        assert said.startswith("read-only file system: ") and "writable" in said and f"moot resume {RECORD}" in said
        started = moot(
            "run", "critique", "--topic", "Tabs or spaces", "--quiet", "--agents", LONG_AGENT, cwd=small_disk
        )
        assert started.returncode == 2 and one_sentence(started.stderr).startswith("read-only file system: ")
    finally:
        remount(small_disk, "rw")
    assert record.read_bytes() == before
    assert not (small_disk / ".dialogues" / "tabs-or-spaces.md").exists()
    finished = moot("resume", RECORD, "--quiet", cwd=small_disk)
    assert finished.returncode == 0, finished.stderr
    assert accepted_per_turn(record) == dict.fromkeys(range(1, 7), 1)


def test_a_new_debate_on_a_full_disk_leaves_nothing_behind(small_disk: Path) -> None:
    fill(small_disk)
    started = moot("run", "critique", *TOPIC, "--quiet", "--agents", LONG_AGENT, cwd=small_disk)
    assert started.returncode == 2, started.stderr
    assert one_sentence(started.stderr).startswith("disk full: ")
    assert not (small_disk / RECORD).exists()
    assert [path.name for path in small_disk.rglob("*") if path.is_file()] == ["filler"]  # no temp file either

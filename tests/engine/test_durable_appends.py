"""A turn of `moot run` is one append and one fsync of the record; the state stays in memory between turns;
a write by someone else between two turns is noticed before the next turn is written."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from engine_helpers import reply

from moot.agents import ScriptAgent
from moot.core import turn_record
from moot.core.chain import chain_path
from moot.core.run_state import run_state_path, stored_agents
from moot.detect import check_path
from moot.engine.loop import Engine, Event
from moot.errors import ProtocolViolationError
from moot.protocols.critique import record as critique_record
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions

STARTED = "2026-11-22 09:00"


def critique(tmp_path: Path, rounds: int = 10) -> CritiqueDriver:
    options = CritiqueOptions(topic="Adopt a monorepo", max_rounds=rounds)
    return CritiqueDriver.start(tmp_path, options, STARTED)


def next_turn(driver: CritiqueDriver, message: str, minute: int) -> object:
    role = driver.next_speaker()
    assert role is not None
    candidate = driver.read_reply(role, reply(message), f"2026-11-22 09:{minute:02d}")
    assert not candidate.errors, candidate.errors
    return candidate.turn


class DiskCalls:
    """Counts the fsyncs and renames a block of code makes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fsyncs = 0
        self.renames = 0
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd: int) -> None:
            self.fsyncs += 1
            real_fsync(fd)

        def replace(src: str, dst: str) -> None:
            self.renames += 1
            real_replace(src, dst)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)


def test_each_turn_is_appended_with_one_fsync_and_nothing_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = critique(tmp_path)
    record, chain = driver.record_path, chain_path(driver.record_path)
    driver.commit(next_turn(driver, "Use one repository.", 1))  # the first commit opens the writer
    inodes = (record.stat().st_ino, chain.stat().st_ino)
    calls = DiskCalls(monkeypatch)
    for minute in range(2, 12):
        before = record.read_bytes()
        driver.commit(next_turn(driver, f"Point {minute}: builds stay scoped.", minute))
        assert record.read_bytes().startswith(before)  # the earlier bytes are never rewritten
    assert calls.fsyncs == 10 and calls.renames == 0
    assert (record.stat().st_ino, chain.stat().st_ino) == inodes  # no temp file replaced either file
    report = check_path(record)
    assert report.exit_code == 0 and report.summary is not None and report.summary.turns == 11


def test_between_turns_the_record_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    driver = critique(tmp_path)
    driver.commit(next_turn(driver, "Use one repository.", 1))

    def no_read(path: Path) -> None:
        raise AssertionError(f"{path} was read again although nobody else wrote it")

    monkeypatch.setattr(turn_record, "read_text", no_read)
    for minute in range(2, 8):
        driver.commit(next_turn(driver, f"Point {minute}.", minute))
    assert driver.summary().turns == 7


def test_an_edit_of_an_accepted_turn_between_turns_is_noticed_even_with_size_and_mtime_kept(tmp_path: Path) -> None:
    driver = critique(tmp_path)
    for minute in (1, 2):
        driver.commit(next_turn(driver, f"Point {minute}: use one repository.", minute))
    record = driver.record_path
    info = record.stat()
    edited = record.read_bytes().replace(b"Point 1: use one", b"Point 1: use two")
    record.write_bytes(edited)
    os.utime(record, ns=(info.st_atime_ns, info.st_mtime_ns))  # same size, same mtime: only the bytes differ
    turn = next_turn(driver, "Point 3.", 3)
    with pytest.raises(ProtocolViolationError) as refused:
        driver.commit(turn)
    assert "PRIOR_TURN_MODIFIED" in {v.rule for v in refused.value.violations}
    assert record.read_bytes() == edited  # nothing was appended to the edited record


def test_a_turn_another_writer_appended_between_turns_is_validated_against(tmp_path: Path) -> None:
    driver = critique(tmp_path)
    driver.commit(next_turn(driver, "Use one repository.", 1))
    stale = next_turn(driver, "What about CI time?", 2)  # the critic's turn, read before the other write
    # Meanwhile an outside agent (the critic, through the agent tools) appends that turn itself.
    critique_record.append_turn(driver.record_path, stale)  # type: ignore[arg-type]
    with pytest.raises(ProtocolViolationError):  # the same role again: refused, not appended blindly
        driver.commit(stale)
    report = check_path(driver.record_path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.turns == 2
    assert driver.summary().turns == 2  # the driver reloaded what is on disk


def test_a_crash_between_the_record_and_its_chain_is_caught_up_by_the_next_writer(tmp_path: Path) -> None:
    driver = critique(tmp_path)
    for minute in (1, 2, 3):
        driver.commit(next_turn(driver, f"Point {minute}.", minute))
    chain = chain_path(driver.record_path)
    lines = chain.read_text().splitlines(keepends=True)
    chain.write_text("".join(lines[:2]))  # as if killed after the third turn's append, before its chain row
    report = check_path(driver.record_path)
    assert [v.rule for v in report.violations] == ["CHAIN_SHORT"] and report.repairable
    writer = critique_record.RECORD.writer(driver.record_path)  # any writer completes it on opening the record
    assert len(chain.read_text().splitlines()) == 3
    writer.append([next_turn(driver, "Point 4.", 4)])  # type: ignore[list-item]
    assert len(chain.read_text().splitlines()) == 4
    assert check_path(driver.record_path).exit_code == 0


def test_a_chain_more_than_one_write_behind_is_refused_not_caught_up(tmp_path: Path) -> None:
    driver = critique(tmp_path)
    for minute in (1, 2, 3):
        driver.commit(next_turn(driver, f"Point {minute}.", minute))
    chain = chain_path(driver.record_path)
    chain.write_text("".join(chain.read_text().splitlines(keepends=True)[:1]))  # no crash leaves two rows out
    resumed = CritiqueDriver.resume(driver.record_path)
    with pytest.raises(ProtocolViolationError) as refused:
        resumed.commit(next_turn(resumed, "Point 4.", 4))
    assert [v.rule for v in refused.value.violations] == ["CHAIN_SHORT"]
    assert len(chain.read_text().splitlines()) == 1


def test_a_new_record_is_two_fsyncs_and_a_run_adds_none_before_its_first_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = DiskCalls(monkeypatch)
    driver = critique(tmp_path, rounds=1)
    # The header (fsync'd) and the empty chain, renamed into place together; one fsync of the directory.
    assert (calls.fsyncs, calls.renames) == (2, 2)
    assert chain_path(driver.record_path).read_text() == ""
    assert check_path(driver.record_path).violations == []

    seen: list[int] = []

    def first_turn(event: Event) -> None:
        if event.type == "turn_started" and not seen:
            seen.append(calls.fsyncs)

    agent = ScriptAgent([reply("Use one repository."), reply("Agreed.")])
    engine = Engine(driver, dict.fromkeys(driver.roles(), agent), specs={"proposer": "script:a", "critic": "script:a"})
    engine.subscribers = (first_turn,)
    asyncio.run(engine.run())
    # The agent specs reach the run sidecar (a resume reuses them) without an fsync of their own.
    assert seen == [2] and stored_agents(driver.record_path) == {"proposer": "script:a", "critic": "script:a"}
    assert run_state_path(driver.record_path).is_file()


def test_a_stale_chain_at_a_new_records_path_is_emptied_before_the_header_is_written(tmp_path: Path) -> None:
    driver = critique(tmp_path)
    record = driver.record_path
    chain = chain_path(record)
    driver.commit(next_turn(driver, "Use one repository.", 1))
    record.unlink()  # the record removed by hand, its hidden chain left behind
    assert chain.read_text() != ""
    again = critique(tmp_path)
    assert again.record_path == record and chain.read_text() == ""
    again.commit(next_turn(again, "Use two repositories.", 1))
    assert check_path(record).violations == []

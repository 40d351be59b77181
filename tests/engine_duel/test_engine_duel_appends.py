"""A duel run by the Engine appends each accepted turn: the record is never rewritten between turns, a turn is
one fsync, a kill between the record's append and its chain's resumes losing nothing, and tampering with the
appended turns still shows, with or without the chain sidecar."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import pytest
from engine_duel_helpers import STARTED, guided

from moot.agents import ScriptAgent, ScriptedReply
from moot.core.chain import RecordAppender, chain_path
from moot.detect import check_path
from moot.engine.loop import Engine, Event, Limits
from moot.errors import UserError
from moot.protocols.duel.driver import DuelDriver, DuelOptions

# Candidate Convergence stays false until the last turn (the skeptic keeps a blocking item), so no turn before
# it changes the header.
REPLIES = [
    ("advocate", guided(1, "OPEN_TO_DEBATE")),
    ("skeptic", guided(2, "OPEN_TO_DEBATE", blocking=("isolation is not shown",))),
    ("advocate", guided(3, "CONVERGING")),
    ("skeptic", guided(4, "OPEN_TO_DEBATE", blocking=("isolation is still not shown",), revision=False)),
    ("advocate", guided(5, "CONVERGING", revision=False)),
    ("skeptic", guided(6, "ACCEPTING_CONSENSUS")),
]


def start(root: Path, source: Path) -> DuelDriver:
    return DuelDriver.start(root, DuelOptions(source=source, max_turns=6), STARTED)


def agents(driver: DuelDriver, replies: list[tuple[str, str]]) -> dict[str, ScriptAgent]:
    agent = ScriptAgent([ScriptedReply(text, role) for role, text in replies])
    return dict.fromkeys(driver.roles(), agent)


class Killed(BaseException):
    """Stands in for a SIGKILL: not an Exception, so the engine does not turn it into an outcome."""


def test_accepted_turns_only_ever_append_to_the_record_with_one_fsync_each(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = start(tmp_path, source)
    path = driver.record_path
    fsyncs: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        fsyncs.append(fd)
        real_fsync(fd)

    seen: list[tuple[int, bytes, int]] = [(path.stat().st_ino, path.read_bytes(), 0)]

    def watch(event: Event) -> None:
        if event.type == "turn_accepted":
            seen.append((path.stat().st_ino, path.read_bytes(), len(fsyncs)))

    monkeypatch.setattr(os, "fsync", counting_fsync)
    result = asyncio.run(Engine(driver, agents(driver, REPLIES), Limits(), subscribers=(watch,)).run())
    monkeypatch.setattr(os, "fsync", real_fsync)

    assert result.to_json()["outcome"] == "MAX_TURNS"
    # Turns 1-5 leave the header as it was: same file, every earlier byte kept, one fsync per turn.
    for (inode, before, synced), (inode_after, after, synced_after) in itertools.pairwise(seen[:6]):
        assert inode_after == inode and after.startswith(before) and len(after) > len(before)
        assert synced_after - synced == 1
    text = path.read_text(encoding="utf-8")
    assert "<!-- moot-chain turns=6 head=" in text.split("## Metadata")[0]  # the conclusion's rewrite moved it up
    assert "turns=5 head=" not in text  # and dropped the marks between turns
    report = check_path(path)
    assert report.exit_code == 0 and report.violations == []


def test_the_chain_head_after_each_appended_turn_shows_tampering_without_the_sidecar(
    tmp_path: Path, source: Path
) -> None:
    driver = start(tmp_path, source)
    for role, reply in REPLIES[:4]:
        driver.commit(driver.read_reply(role, reply, STARTED).turn)
    path = driver.record_path
    text = path.read_text(encoding="utf-8")
    assert text.rstrip().endswith("-->") and "<!-- moot-chain turns=4 head=" in text
    chain_path(path).unlink()
    assert [v.rule for v in check_path(path).violations] == ["CHAIN_MISSING"]

    path.write_text(text.replace("Position 2: the shared", "Position 2: an edited"), encoding="utf-8")
    report = check_path(path)
    assert {"CHAIN_MISSING", "PRIOR_TURN_MODIFIED"} <= {v.rule for v in report.violations}
    assert report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "INVALIDATED"

    last = text.rindex("---\n\n## Turn 4")
    path.write_text(text[:last] + text[text.rindex("<!-- moot-chain") :], encoding="utf-8")  # turn 4 cut, mark kept
    assert "PRIOR_TURN_REMOVED" in [v.rule for v in check_path(path).violations]


def test_a_kill_between_the_records_append_and_the_chains_resumes_losing_and_repeating_nothing(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = start(tmp_path, source)
    path = driver.record_path
    real_rows = RecordAppender._append_rows
    appended = 0

    def killed_on_turn_three(self: RecordAppender, rows: list[dict[str, object]]) -> None:
        nonlocal appended
        appended += 1
        if appended == 3:
            raise Killed("killed after the record's fsync, before the chain's append")
        real_rows(self, rows)

    monkeypatch.setattr(RecordAppender, "_append_rows", killed_on_turn_three)
    with pytest.raises(Killed):
        asyncio.run(Engine(driver, agents(driver, REPLIES), Limits()).run())
    monkeypatch.setattr(RecordAppender, "_append_rows", real_rows)

    assert path.read_text(encoding="utf-8").count("## Turn 3 —") == 1  # durable before the kill
    assert len(chain_path(path).read_text().splitlines()) == 2  # the chain is a turn behind
    report = check_path(path)  # an error that the next writer repairs: the turn's mark proves it
    assert [v.rule for v in report.violations] == ["CHAIN_SHORT"] and report.repairable

    resumed = DuelDriver.resume(path)
    assert len(chain_path(path).read_text().splitlines()) == 3
    assert resumed.summary().turns == 3 and resumed.next_speaker() == "skeptic"
    result = asyncio.run(Engine(resumed, agents(resumed, REPLIES[3:]), Limits()).run())
    assert result.to_json()["outcome"] == "MAX_TURNS" and result.turns == 3
    text = path.read_text(encoding="utf-8")
    assert [text.count(f"## Turn {n} —") for n in range(1, 8)] == [1, 1, 1, 1, 1, 1, 0]
    assert len(chain_path(path).read_text().splitlines()) == 6
    report = check_path(path)
    assert report.exit_code == 0 and report.violations == []


def test_an_outside_edit_between_turns_is_caught_and_nothing_is_appended(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source)
    path = driver.record_path
    driver.commit(driver.read_reply("advocate", guided(1, "OPEN_TO_DEBATE"), STARTED).turn)
    edited = path.read_text(encoding="utf-8").replace("Position 1: the shared", "Position 1: a rewritten")
    path.write_text(edited, encoding="utf-8")  # written by someone else between two turns

    turn = driver.read_reply("skeptic", guided(2, "OPEN_TO_DEBATE"), STARTED).turn
    with pytest.raises(UserError, match="PRIOR_TURN_MODIFIED"):
        driver.commit(turn)
    assert path.read_text(encoding="utf-8") == edited

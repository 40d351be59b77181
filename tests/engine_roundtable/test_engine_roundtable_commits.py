"""What a roundtable commit writes: the speech and turn.json durably (four fsyncs, nothing more), and the digest
chain only ever appended; a kill before the chain's append resumes losing nothing and the chain catches up."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
from pathlib import Path

import pytest

from moot.agents import AgentRequest, FunctionAgent
from moot.core import chain as chain_module
from moot.core.chain import chain_path
from moot.detect import check_path
from moot.engine.loop import Engine, Event, Limits
from moot.protocols.roundtable import record as record_module
from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions
from moot.protocols.roundtable.machine import MODERATOR

STARTED = "2026-05-01 10:00"
MINUTES = {
    "summary": "Two roles discussed caching reads.",
    "consensus": "Cache reads with a short TTL.",
    "unresolved": "How to invalidate on writes.",
    "action_items": "- architect: write the design note",
}


def start(root: Path) -> RoundtableDriver:
    options = RoundtableOptions(speakers=("architect", "reviewer"), topic="Should we cache reads?", max_rounds=2)
    return RoundtableDriver.start(root, options, STARTED)


def round_of(request: AgentRequest) -> str:
    """'round N of M', as the speaker's instructions name it."""
    found = re.search(r"round \d+ of \d+", f"{request.system or ''}\n{request.prompt}")
    assert found is not None
    return found.group(0)


def speaker(request: AgentRequest) -> str:
    if request.role == MODERATOR:
        return json.dumps(MINUTES)
    return json.dumps(
        {
            "position": f"Position of {request.role}.",
            "analysis": "Reads dominate the load.",
            "responses_and_questions": f"What about invalidation in {round_of(request)}?",  # no speech repeats another
            "prompt_for_next_speaker": "Answer the invalidation question.",
            "consensus_reached": False,
        }
    )


def engine(driver: RoundtableDriver, *subscribers: object) -> Engine:
    agent = FunctionAgent(speaker)
    return Engine(driver, dict.fromkeys(driver.roles(), agent), Limits(), subscribers=subscribers)  # type: ignore[arg-type]


class Killed(BaseException):
    """Stands in for a SIGKILL: not an Exception, so the engine does not turn it into an outcome."""


def test_each_speech_is_four_fsyncs_and_the_chain_is_only_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = start(tmp_path)
    chain = chain_path(driver.record_path)
    fsyncs: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        fsyncs.append(fd)
        real_fsync(fd)

    seen: list[tuple[int, bytes, int]] = [(chain.stat().st_ino, chain.read_bytes(), 0)]

    def watch(event: Event) -> None:
        if event.type == "turn_accepted":
            seen.append((chain.stat().st_ino, chain.read_bytes(), len(fsyncs)))

    monkeypatch.setattr(os, "fsync", counting_fsync)
    result = asyncio.run(engine(driver, watch).run())
    monkeypatch.setattr(os, "fsync", real_fsync)

    assert result.to_json()["outcome"] == "closed" and len(seen) == 6  # four speeches and the minutes
    for (inode, before, synced), (inode_after, after, synced_after) in itertools.pairwise(seen):
        assert inode_after == inode and after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
        assert synced_after - synced == 4  # the speech file and its directory, turn.json and its directory
    assert check_path(driver.record_path).exit_code == 0


def test_a_kill_before_the_chains_append_resumes_and_the_chain_catches_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = start(tmp_path)
    real_append = chain_module._append_rows
    appended = 0

    def killed_on_the_third(chain: Path, rows: list[dict[str, object]]) -> int:
        nonlocal appended
        appended += 1
        if appended == 3:
            raise Killed("killed after turn.json, before the chain's append")
        return real_append(chain, rows)

    monkeypatch.setattr(chain_module, "_append_rows", killed_on_the_third)
    with pytest.raises(Killed):
        asyncio.run(engine(driver).run())
    monkeypatch.setattr(chain_module, "_append_rows", real_append)

    directory = driver.record_path
    assert sorted(p.name for p in directory.glob("[0-9]*.md")) == [
        "001_architect.md",
        "002_reviewer.md",
        "003_architect.md",
    ]
    # The driver reads the meeting again after a failed commit, which completes the chain; a killed process
    # cannot, so the row it added is cut again.
    rows = chain_path(directory).read_text().splitlines(keepends=True)
    assert len(rows) == 3
    chain_path(directory).write_text("".join(rows[:2]))
    report = check_path(directory)  # an error until a writer completes it, which the resume below does
    assert [v.rule for v in report.violations] == ["CHAIN_SHORT"] and report.repairable

    resumed = RoundtableDriver.resume(directory)
    result = asyncio.run(engine(resumed).run())
    assert result.to_json()["outcome"] == "closed" and result.turns == 2  # the fourth speech and the minutes
    assert len(list(directory.glob("[0-9]*.md"))) == 4
    assert len(chain_path(directory).read_text().splitlines()) == 5
    report = check_path(directory)
    assert report.exit_code == 0 and report.violations == []


def test_the_state_in_memory_is_what_the_meeting_on_disk_says_after_every_speech(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The driver keeps the meeting in memory between speeches: after each one it must equal a fresh read of the
    # directory, and no speech may make it read the whole meeting again.
    options = RoundtableOptions(speakers=("architect", "reviewer", "security"), topic="Cache reads?", max_rounds=4)
    driver = RoundtableDriver.start(tmp_path, options, STARTED)
    full_reads = 0
    real_read = record_module._read_meeting

    def counting_read(directory: Path) -> object:
        nonlocal full_reads
        full_reads += 1
        return real_read(directory)

    compared: list[int] = []

    def compare(event: Event) -> None:
        if event.type == "turn_accepted" and driver.state.turn.status == "open":
            on_disk = record_module.MeetingWriter(driver.record_path)
            assert driver.state == on_disk.state
            assert driver._speeches() == on_disk.speeches
            compared.append(driver.state.speeches)

    monkeypatch.setattr(record_module, "_read_meeting", counting_read)
    result = asyncio.run(engine(driver, compare).run())
    monkeypatch.setattr(record_module, "_read_meeting", real_read)
    assert result.to_json()["outcome"] == "closed"
    assert compared == list(range(1, 12))  # the twelfth speech concludes the meeting
    # One full read per comparison above, and the minutes' write and the driver's read after it: none per speech.
    assert full_reads == len(compared) + 2


def test_a_speech_written_by_someone_else_in_between_is_read_before_the_next(tmp_path: Path) -> None:
    driver = start(tmp_path)
    asked: list[str] = []

    def outsider_writes_after_the_first(event: Event) -> None:
        if event.type == "turn_accepted" and driver.state.speeches == 1:
            # Another participant (the agent tools) takes the reviewer's turn while this run is between turns.
            record_module.commit_reply(
                driver.record_path,
                record_module.RoundtableReply(
                    position="Outsider position.",
                    analysis="Reads dominate.",
                    responses_and_questions="None.",
                    prompt_for_next_speaker="Go on.",
                    consensus_reached=False,
                ),
            )

    def listening(request: AgentRequest) -> str:
        asked.append(request.role or "")
        return speaker(request)

    agent = FunctionAgent(listening)
    run = Engine(driver, dict.fromkeys(driver.roles(), agent), Limits(), subscribers=(outsider_writes_after_the_first,))
    result = asyncio.run(run.run())
    assert result.to_json()["outcome"] == "closed"
    # The run had asked the reviewer (the floor was its then): that reply is refused, not written under the
    # architect's name, and the architect is asked next.
    assert asked[:3] == ["architect", "reviewer", "architect"]
    refused = [row for row in result.usage if not row["accepted"]]
    assert [(row["role"], [v["rule"] for v in row["violations"]]) for row in refused] == [
        ("reviewer", ["ROUNDTABLE_CURRENT_SPEAKER"])
    ]
    names = sorted(p.name for p in driver.record_path.glob("[0-9]*.md"))
    assert names == ["001_architect.md", "002_reviewer.md", "003_architect.md", "004_reviewer.md"]
    assert check_path(driver.record_path).exit_code == 0

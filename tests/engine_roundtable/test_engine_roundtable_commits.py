"""What a roundtable commit writes: the speech and turn.json durably (four fsyncs, nothing more), and the digest
chain only ever appended; a kill before the chain's append resumes losing nothing and the chain catches up."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from pathlib import Path

import pytest

from moot.agents import AgentRequest, FunctionAgent
from moot.artifacts import chain as chain_module
from moot.artifacts import check_path
from moot.artifacts.chain import chain_path
from moot.engine.loop import Engine, Event, Limits
from moot.engine.roundtable import RoundtableDriver, RoundtableOptions
from moot.protocols.roundtable import MODERATOR

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


def speaker(request: AgentRequest) -> str:
    if request.role == MODERATOR:
        return json.dumps(MINUTES)
    return json.dumps(
        {
            "position": f"Position of {request.role}.",
            "analysis": "Reads dominate the load.",
            "responses_and_questions": "What about invalidation?",
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
    assert len(chain_path(directory).read_text().splitlines()) == 2  # a speech behind: not tampering
    assert check_path(directory).exit_code == 0

    resumed = RoundtableDriver.resume(directory)
    result = asyncio.run(engine(resumed).run())
    assert result.to_json()["outcome"] == "closed" and result.turns == 2  # the fourth speech and the minutes
    assert len(list(directory.glob("[0-9]*.md"))) == 4
    assert len(chain_path(directory).read_text().splitlines()) == 5
    report = check_path(directory)
    assert report.exit_code == 0 and report.violations == []

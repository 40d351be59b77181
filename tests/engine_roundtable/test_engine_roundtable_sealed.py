"""``moot run roundtable --sealed``: every speaker's round-1 position asked at once, none seeing another's,
written as the seed writes speeches."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from moot.agents import AgentRequest, FunctionAgent
from moot.detect import check_path
from moot.engine.loop import Engine, Limits, RunResult
from moot.engine.sealed import read_commitments
from moot.errors import AgentError
from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions
from moot.protocols.roundtable.machine import MODERATOR

SPEAKERS = ("architect", "reviewer", "security")
MINUTES = {"summary": "S.", "consensus": "C.", "unresolved": "U.", "action_items": "- A."}


def start(root: Path, sealed: bool = True) -> RoundtableDriver:
    options = RoundtableOptions(speakers=SPEAKERS, topic="Should we cache reads?", max_rounds=2, sealed=sealed)
    return RoundtableDriver.start(root, options, "2026-05-01 10:00")


def round_of(request: AgentRequest) -> str:
    """'round N of M', as the speaker's instructions name it."""
    found = re.search(r"round \d+ of \d+", f"{request.system or ''}\n{request.prompt}")
    assert found is not None
    return found.group(0)


def speech(request: AgentRequest) -> str:
    if request.role == MODERATOR:
        return json.dumps(MINUTES)
    return json.dumps(
        {
            "position": f"The position of {request.role}.",
            "analysis": f"The analysis of {request.role}.",
            "responses_and_questions": f"None yet in {round_of(request)}.",  # no speech repeats another
            "prompt_for_next_speaker": f"{request.role} asks: what do you see first?",
            "consensus_reached": False,
        }
    )


def run(driver: RoundtableDriver, function=speech) -> tuple[RunResult, FunctionAgent]:  # type: ignore[no-untyped-def]
    agent = FunctionAgent(function)
    agents = {role: agent for role in driver.roles()}
    return asyncio.run(Engine(driver, agents, Limits(repairs=0)).run()), agent


def test_sealed_round_one_hears_no_one_and_the_meeting_reads_as_the_seeds(tmp_path: Path) -> None:
    in_flight = most = 0

    async def concurrent(request: AgentRequest) -> str:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1
        return speech(request)

    driver = start(tmp_path)
    result, agent = run(driver, concurrent)
    assert result.outcome is not None and result.outcome.name == "closed"
    assert most == len(SPEAKERS)  # the round-1 positions were asked at once
    first_round = agent.requests[: len(SPEAKERS)]
    assert sorted(r.role for r in first_round) == sorted(SPEAKERS)
    for request in first_round:
        assert "The position of" not in request.prompt and "No speeches yet" in request.prompt
    second_round = agent.requests[len(SPEAKERS)]
    assert all(f"The position of {role}." in second_round.prompt for role in SPEAKERS[1:])
    names = sorted(p.name for p in driver.record_path.glob("[0-9]*.md"))
    assert names == [
        "001_architect.md",
        "002_reviewer.md",
        "003_security.md",
        "004_architect.md",
        "005_reviewer.md",
        "006_security.md",
    ]
    report = check_path(driver.record_path)
    assert report.exit_code == 0 and report.violations == []


def test_a_speaker_that_fails_stops_the_meeting_before_any_speech_and_resume_asks_only_it(tmp_path: Path) -> None:
    driver = start(tmp_path)

    def reviewer_down(request: AgentRequest) -> str:
        if request.role == "reviewer":
            raise AgentError("the server answered 503: try again later")
        return speech(request)

    result, _ = run(driver, reviewer_down)
    assert result.outcome is not None and result.outcome.name == "RUN_HALTED"
    assert list(driver.record_path.glob("[0-9]*.md")) == []  # nothing revealed while one answer is missing
    assert sorted(read_commitments(driver.record_path, "round-1")) == sorted(SPEAKERS)
    assert check_path(driver.record_path).exit_code == 0

    resumed = RoundtableDriver.resume(driver.record_path)
    result, agent = run(resumed)
    assert result.outcome is not None and result.outcome.name == "closed"
    first = [r.role for r in agent.requests[:1]]
    assert first == ["reviewer"]  # architect and security had committed; only reviewer is asked again
    assert [r.role for r in agent.requests].count("architect") == 1  # its round-2 speech only
    assert check_path(resumed.record_path).exit_code == 0


def test_without_sealed_the_speakers_hear_each_other_in_round_one(tmp_path: Path) -> None:
    driver = start(tmp_path, sealed=False)
    _, agent = run(driver)
    assert "The position of architect." in agent.requests[1].prompt

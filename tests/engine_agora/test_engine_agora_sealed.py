"""``moot run agora --sealed``: every drone's opening proposal asked at once, none seeing another's, written as
the seed's turns 1…n."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from engine_agora_helpers import checks_clean, choosing, drone, every_role, run, start

from moot.agents import AgentRequest, FunctionAgent
from moot.engine.sealed import read_commitments
from moot.errors import AgentError
from moot.protocols.agora.driver import AgoraDriver

POSITIONS = (("advocate", "One repository"), ("skeptic", "One per service"), ("ops", "Keep what works"))


def prefer(request: AgentRequest) -> str:
    number = int(re.search(r"TURN: (\d+)", request.prompt)[1])  # type: ignore[index]
    return "propose" if number <= 3 else "approve"


def test_sealed_openings_hear_no_opponent_and_read_as_the_seeds_turns(tmp_path: Path) -> None:
    in_flight = most = 0
    inner = choosing(prefer)

    async def concurrent(request: AgentRequest) -> str:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1
        return (await inner.reply(request)).text

    agent = FunctionAgent(concurrent)
    driver = start(tmp_path, positions=POSITIONS, max_turns=12, sealed=True)
    result = run(driver, every_role(driver, agent))
    assert most == 3  # the three openings were asked at once
    openings = agent.requests[:3]
    assert sorted(r.role for r in openings) == ["advocate", "ops", "skeptic"]
    assert all("OPPONENT SAID: (nothing yet: you open the debate)" in r.prompt for r in openings)
    turns = {r.role: re.search(r"TURN: (\d+)", r.prompt)[1] for r in openings}  # type: ignore[index]
    assert turns == {"advocate": "1", "skeptic": "2", "ops": "3"}
    assert all(r.json_schema["properties"]["signal"]["enum"] == ["propose"] for r in openings)  # type: ignore[index]
    text = driver.record_path.read_text(encoding="utf-8")
    for number, (role, _) in enumerate(POSITIONS, start=1):
        assert f"## Turn {number} — {role}\n\nProposal: proposal-{role}" in text
    assert "OPPONENT SAID: ops says propose." in agent.requests[3].prompt  # turn 4 hears the last opening
    assert result.summary.turns > 3
    checks_clean(driver.record_path)


def test_a_drone_that_fails_stops_the_debate_before_any_opening_and_resume_asks_only_it(tmp_path: Path) -> None:
    driver = start(tmp_path, positions=POSITIONS, max_turns=12, sealed=True)

    def skeptic_down(request: AgentRequest) -> str:
        if request.role == "skeptic":
            raise AgentError("the server answered 503: try again later")
        return drone("propose", message=f"{request.role} proposes.")

    result = run(driver, every_role(driver, FunctionAgent(skeptic_down)))
    assert result.outcome is not None and result.outcome.name == "RUN_HALTED"
    assert "## Turn" not in driver.record_path.read_text(encoding="utf-8")  # nothing revealed early
    assert sorted(read_commitments(driver.record_path, "openings")) == ["advocate", "ops", "skeptic"]
    checks_clean(driver.record_path)

    agent = choosing(prefer)
    resumed = AgoraDriver.resume(driver.record_path)
    run(resumed, every_role(resumed, agent))
    assert [r.role for r in agent.requests[:1]] == ["skeptic"]
    assert "advocate proposes." in resumed.record_path.read_text(encoding="utf-8")  # the committed opening, kept
    checks_clean(resumed.record_path)


def test_an_opening_that_does_not_propose_is_sent_back(tmp_path: Path) -> None:
    driver = start(tmp_path, sealed=True, max_turns=6)
    tries: dict[str, int] = {}

    def once_defer(request: AgentRequest) -> str:
        tries[request.role] = tries.get(request.role, 0) + 1
        if request.role == "advocate" and tries["advocate"] == 1:
            return drone("defer")
        return drone("propose" if "(nothing yet" in request.prompt else "no-change")

    agent = FunctionAgent(once_defer)
    run(driver, every_role(driver, agent))
    advocate = [r for r in agent.requests if r.role == "advocate"]
    assert "send signal propose" in advocate[1].prompt
    checks_clean(driver.record_path)

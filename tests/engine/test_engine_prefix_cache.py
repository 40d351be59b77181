"""Prompts a provider can cache: every protocol's driver, run by the real Engine, builds each role's requests on a
stable prefix (the next request starts with it), keeps a role's reply schema across its turns for a model server
that caches prefixes, puts a repair's notes after the instruction, and still narrows a small model's grammar."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from moot.agents import AgentRequest, FunctionAgent
from moot.agents.base import TurnBounds
from moot.engine.loop import Engine, Limits
from moot.protocols.agora.driver import AgoraDriver, AgoraOptions
from moot.protocols.council.driver import CouncilDriver, CouncilOptions
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions
from moot.protocols.duel.driver import DuelDriver, DuelOptions
from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions
from moot.protocols.roundtable.machine import MODERATOR

STARTED = "2026-11-22 09:00"
FIX = "Fix the errors and try again."


class CachingAgent(FunctionAgent):
    """A scripted participant whose model server caches prompt prefixes, as OpenAI's and Anthropic's do."""

    turn_bounds = TurnBounds(prefix_cache=True)


class SmallAgent(FunctionAgent):
    """A scripted participant with the embedded model's bounds: decoded under each request's grammar."""

    turn_bounds = TurnBounds.for_context(2048)


def answering(replies: Sequence[str], agent: type[FunctionAgent] = CachingAgent) -> FunctionAgent:
    queue = list(replies)
    return agent(lambda request: queue.pop(0))


def answering_with(answer: Callable[[AgentRequest], str]) -> FunctionAgent:
    return CachingAgent(answer)


def run(driver: Any, agent: FunctionAgent, **limits: Any) -> None:
    engine = Engine(driver, {role: agent for role in driver.roles()}, Limits(**limits))
    asyncio.run(engine.run())


def prefix(request: AgentRequest) -> str:
    assert request.prefix_ends, "the request marks no stable prefix"
    return request.prompt[: request.prefix_ends[-1]]


def assert_each_starts_the_next(requests: Sequence[AgentRequest]) -> None:
    """Each request's marked prefix begins the next request's prompt, which sends the same schema and system."""
    assert len(requests) >= 2
    for before, after in itertools.pairwise(requests):
        assert after.prompt.startswith(prefix(before)), (before.role, after.role)
        assert len(prefix(after)) > len(prefix(before))  # the transcript grew, and is in the prefix
        assert after.json_schema == before.json_schema and after.system == before.system


def assert_repair_follows_the_instruction(original: AgentRequest, repair: AgentRequest) -> None:
    assert repair.prompt.startswith(original.prompt) and FIX in repair.prompt[len(original.prompt) :]
    assert repair.prefix_ends == original.prefix_ends


def critique_reply(message: str, status: str = "AWAITING") -> str:
    return json.dumps({"message": message, "status": status, "summary": ""})


def test_a_critique_builds_both_roles_requests_on_one_prefix_with_one_schema(tmp_path: Path) -> None:
    driver = CritiqueDriver.start(tmp_path, CritiqueOptions(topic="Adopt a monorepo", max_rounds=3), STARTED)
    # The opening PROPOSING_DONE is illegal (one voice cannot conclude): with the whole schema offered, the
    # protocol's check sends it back.
    replies = [critique_reply("Ready.", "PROPOSING_DONE"), *(critique_reply(f"Turn {n} argues.") for n in range(1, 6))]
    agent = answering(replies)
    run(driver, agent, max_turns=5)
    first, repair, *turns = agent.requests
    assert "status PROPOSING_DONE is not legal now" in repair.prompt
    assert_repair_follows_the_instruction(first, repair)
    accepted = [repair, *turns]
    assert_each_starts_the_next(accepted)  # the roles alternate: both build on one prefix
    assert len({r.cache_key for r in accepted}) == 1
    assert accepted[0].json_schema is not None
    assert accepted[0].json_schema["properties"]["status"]["enum"] == ["AWAITING", "PROPOSING_DONE", "DONE", "STUCK"]
    assert "Turn 1 argues." in prefix(accepted[2]) and "You are the proposer" in accepted[2].prompt


def test_a_small_models_critique_grammar_still_narrows_to_the_legal_statuses(tmp_path: Path) -> None:
    driver = CritiqueDriver.start(tmp_path, CritiqueOptions(topic="Adopt a monorepo", max_rounds=2), STARTED)
    replies = [critique_reply("One repo."), critique_reply("Concern."), critique_reply("Ready.", "PROPOSING_DONE")]
    agent = answering(
        [*replies, json.dumps({"message": "Agreed.", "status": "DONE", "summary": "One repo."})], SmallAgent
    )
    run(driver, agent)
    schemas = [r.json_schema or {} for r in agent.requests]
    assert [s["properties"]["status"]["enum"] for s in schemas] == [
        ["AWAITING"],
        ["AWAITING"],
        ["AWAITING", "PROPOSING_DONE", "STUCK"],
        ["DONE", "AWAITING"],
    ]
    assert all(r.system and "You are the" in r.system for r in agent.requests)
    for before, after in itertools.pairwise(agent.requests):  # its prompts are marked too
        assert after.prompt.startswith(prefix(before))


SOURCE = "# Shared cache\n\n## Goals\nTenant isolation first.\n\n## Eviction\nOne global LRU list.\n"


def duel_reply(number: int, stance: str) -> str:
    return json.dumps(
        {
            "stance": stance,
            "position": f"Position {number}: the shared cache needs a per-tenant floor.",
            "counterpoints": [
                {
                    "addresses": f"Turn {number - 1}" if number > 1 else "source § Eviction",
                    "claim": f"Counterclaim {number}: one noisy tenant evicts the others.",
                    "evidence": {"section": "Eviction", "principle": ""},
                }
            ],
            "agreements": [f"Agreement {number}: pooling lowers the footprint."],
            "novel_argument": f"Novel argument {number}: a floor of {number} percent bounds the worst case.",
            "novel_evidence": {"section": "Goals", "principle": ""},
            "limitation": f"Benchmarks for variant {number} are missing",
            "blocking_issues": [],
        }
    )


def test_a_duel_builds_both_roles_requests_on_one_prefix_with_one_schema(tmp_path: Path) -> None:
    source = tmp_path / "cache.md"
    source.write_text(SOURCE, encoding="utf-8")
    driver = DuelDriver.start(tmp_path, DuelOptions(source=source, max_turns=4), STARTED)  # type: ignore[arg-type]
    replies = [duel_reply(1, "ACCEPTING_CONSENSUS"), *(duel_reply(n, "OPEN_TO_DEBATE") for n in range(1, 5))]
    agent = answering(replies)
    run(driver, agent)
    first, repair, *turns = agent.requests
    assert "stance 'ACCEPTING_CONSENSUS' is not one of the choices now" in repair.prompt
    assert_repair_follows_the_instruction(first, repair)
    accepted = [repair, *turns]
    assert_each_starts_the_next(accepted)
    assert len({r.cache_key for r in accepted}) == 1
    assert "Novel argument 1" in prefix(accepted[1])


def test_a_small_models_duel_grammar_still_narrows_the_choices(tmp_path: Path) -> None:
    source = tmp_path / "cache.md"
    source.write_text(SOURCE, encoding="utf-8")
    driver = DuelDriver.start(tmp_path, DuelOptions(source=source, max_turns=2), STARTED)  # type: ignore[arg-type]
    agent = answering([duel_reply(1, "OPEN_TO_DEBATE"), duel_reply(2, "OPEN_TO_DEBATE")], SmallAgent)
    run(driver, agent)
    assert agent.requests[1].prompt.startswith(prefix(agent.requests[0]))  # its prompts are marked too
    opening, answer = (r.json_schema or {} for r in agent.requests)
    assert opening["properties"]["stance"]["enum"] == ["OPEN_TO_DEBATE"]
    assert "Turn 1" in answer["$defs"]["GuidedCounterpoint"]["properties"]["addresses"]["enum"]


def speech(request: AgentRequest, spoken: list[str]) -> str:
    if request.role == MODERATOR:
        return json.dumps({"summary": "Discussed.", "consensus": "None", "unresolved": "None", "action_items": "-"})
    spoken.append(request.role)
    n = len(spoken)
    return json.dumps(
        {
            "position": f"Position of speech {n}.",
            "analysis": f"Analysis of speech {n}.",
            "responses_and_questions": f"Questions of speech {n}.",
            "prompt_for_next_speaker": f"Instruction written by speech {n}.",
            "consensus_reached": n == 1,  # too early: every speaker has not spoken yet
        }
    )


def test_a_roundtable_builds_every_speakers_requests_on_one_prefix_of_every_speech(tmp_path: Path) -> None:
    options = RoundtableOptions(speakers=("architect", "reviewer", "security"), topic="Cache reads?", max_rounds=2)
    driver = RoundtableDriver.start(tmp_path, options, STARTED)
    spoken: list[str] = []
    agent = answering_with(lambda request: speech(request, spoken))
    run(driver, agent)
    first, repair, *rest = agent.requests
    assert "consensus_reached is true before every speaker has spoken" in repair.prompt
    assert_repair_follows_the_instruction(first, repair)
    speakers = [repair, *(r for r in rest if r.role != MODERATOR)]
    assert len(speakers) == 6
    assert_each_starts_the_next(speakers)
    assert len({r.cache_key for r in speakers}) == 1
    assert all(f"Position of speech {n}." in prefix(speakers[5]) for n in range(2, 6))  # every speech, in order
    minutes = next(r for r in rest if r.role == MODERATOR)
    assert minutes.prompt.startswith(prefix(speakers[5]))


def test_a_councils_prompts_hold_the_question_and_answers_before_the_instruction(tmp_path: Path) -> None:
    options = CouncilOptions(
        question="Should we cache reads?", members=[("ada", "x"), ("bo", "x"), ("cy", "x")], seed=1
    )
    driver = CouncilDriver.start(tmp_path, options, STARTED)

    def answer(request: AgentRequest) -> str:
        schema = request.json_schema or {}
        if "ranking" in schema.get("properties", {}):
            labels = schema["properties"]["ranking"]["items"]["properties"]["answer"]["enum"]
            ranking = [{"answer": label, "reason": "Clear."} for label in labels]
            return json.dumps({"ranking": ranking, "confidence": 0.8})
        if "dissent" in schema.get("properties", {}):
            others = schema["properties"]["dissent"]["items"]["properties"]["member"]["enum"]
            top = ({"ada", "bo", "cy"} - set(others)).pop()
            dissent = [{"member": m, "position": "Other.", "why_not_adopted": "Weaker."} for m in others]
            return json.dumps({"answer": "Cache.", "basis": f"The ranking put {top} first.", "dissent": dissent})
        return json.dumps({"answer": f"Answer by {request.role}: cache with a TTL.", "confidence": 0.8})

    agent = answering_with(answer)
    run(driver, agent)
    reviews = [r for r in agent.requests if "Your task: evaluate" in r.prompt]
    assert len(reviews) == 3
    for review in reviews:
        task = review.prompt.index("Your task: evaluate")
        assert review.prompt.index("Question:") < review.prompt.index("Answer A:") < task
        assert review.prefix_ends == ()  # asked once each: no provider cache is written that nothing reads
    synthesis = agent.requests[-1]
    assert synthesis.prompt.index("The members' reviews:") < synthesis.prompt.index("Write the council's final answer")


def test_an_agora_drone_keeps_its_fixed_lines_first_and_one_schema(tmp_path: Path) -> None:
    driver = AgoraDriver.start(tmp_path, AgoraOptions(topic="Adopt a monorepo", max_turns=4), "2026-11-22T09:00:00Z")
    queue = ["counter", "propose", "no-change", "no-change", "no-change"]

    def answer(request: AgentRequest) -> str:
        signal = queue.pop(0)
        return json.dumps(
            {"signal": signal, "message": f"I {signal}.", "confidence": 0.7, "target": None, "evidence": []}
        )

    agent = answering_with(answer)
    run(driver, agent)
    first, repair, *rest = agent.requests
    assert "signal counter is not legal now" in repair.prompt
    assert_repair_follows_the_instruction(first, repair)
    for role in {r.role for r in rest}:
        asked = [r for r in [repair, *rest] if r.role == role]
        for before, after in itertools.pairwise(asked):
            assert after.prompt.startswith(prefix(before)) and after.json_schema == before.json_schema
        assert "TOPIC: Adopt a monorepo" in prefix(asked[0]) and "TURN:" not in prefix(asked[0])

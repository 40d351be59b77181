"""The Council run by the engine: sealed parallel stages, anonymous reviews, the chairman, outcomes and resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from council_helpers import ANSWERS, MEMBERS, agents_for, checks_clean, legal, run, stage, start, stated

from moot.agents.base import DEFAULT_TURN_TOKENS, Agent, AgentReply, AgentRequest, TurnBounds
from moot.engine.loop import Engine, Limits
from moot.engine.sealed import read_commitments, sealed_path
from moot.errors import AgentContextExceeded, AgentError
from moot.protocols.council.driver import CouncilDriver
from moot.protocols.council.machine import identities
from moot.protocols.council.machine import unmasked as names_in


def test_a_council_of_three_ends_synthesized_and_its_record_checks(tmp_path: Path) -> None:
    driver = start(tmp_path, chairman="openai:gpt-4o")
    agents = agents_for(driver)
    result = run(driver, agents)
    assert result.outcome is not None and result.outcome.name == "SYNTHESIZED" and result.outcome.consensus
    assert result.summary.turns == 7 and result.summary.detail["agreement"] is not None
    assert (
        driver.record_path
        == tmp_path / ".council" / "should-all-tenants-share-one-cache-or-should-each-tenant-get-its-own.md"
    )
    checks_clean(driver.record_path)
    asked = {role: [stage(r) for r in agent.requests] for role, agent in agents.items()}
    assert asked == {"ada": [1, 2], "bo": [1, 2], "cy": [1, 2], "chairman": [3]}


def test_no_stage_2_prompt_names_a_member_or_model_though_the_answers_do(tmp_path: Path) -> None:
    driver = start(tmp_path)
    agents = agents_for(driver)
    run(driver, agents)
    config = driver.config
    reviews = [r for agent in agents.values() for r in agent.requests if stage(r) == 2]
    assert len(reviews) == 3
    assert names_in(" ".join(ANSWERS.values()), config)  # the answers do name their authors and models
    for request in reviews:
        assert names_in(f"{request.system}\n{request.prompt}", config) == [], request.prompt
        assert "[redacted] says" in request.prompt
    assert {"ada", "gpt-4o-mini", "claude-sonnet-4"} <= set(identities(config))


def test_each_reviewer_sees_the_others_in_its_own_recorded_order_and_never_its_own(tmp_path: Path) -> None:
    driver = start(tmp_path)
    agents = agents_for(driver)
    run(driver, agents)
    for review in driver.state.reviews:
        assert review.reviewer not in review.shown and len(review.shown) == 2
        prompt = next(r.prompt for r in agents[review.reviewer].requests if stage(r) == 2)
        for index, member in enumerate(review.shown):
            assert f"Answer {'AB'[index]}:\n[redacted] says" in prompt
            assert ANSWERS[member].split(":", 1)[1][:20] in prompt.split(f"Answer {'AB'[index]}:", 1)[1]


def test_sealed_answers_are_asked_at_once_and_none_sees_another(tmp_path: Path) -> None:
    driver = start(tmp_path)
    in_flight = 0
    most = 0

    async def slow(request: AgentRequest) -> str:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1
        return legal(request)

    agents = agents_for(driver, slow)
    run(driver, agents)
    assert most == 3  # every member's stage-1 (and stage-2) call was in flight together
    for role, agent in agents.items():
        first = agent.requests[0].prompt
        assert all(ANSWERS[other] not in first for other in ANSWERS if other != role)


def test_the_record_shows_no_answer_until_all_are_in_and_resume_asks_only_the_missing(tmp_path: Path) -> None:
    driver = start(tmp_path)
    release = asyncio.Event()

    async def cy_hangs(request: AgentRequest) -> str:
        if request.role == "cy":
            await release.wait()  # never set: the run is cut off while cy is still thinking
        return legal(request)

    first = agents_for(driver, cy_hangs)

    async def interrupted() -> None:
        engine = Engine(driver, first, Limits(), clock=lambda: "2026-11-24 21:05")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(engine.run(), 0.5)

    asyncio.run(interrupted())
    text = driver.record_path.read_text(encoding="utf-8")
    assert "## Stage 1" not in text and ANSWERS["ada"] not in text  # nothing revealed early
    committed = read_commitments(driver.record_path, "stage-1")
    assert sorted(committed) == ["ada", "bo"] and all(
        c.digest and c.digest.startswith("sha256:") for c in committed.values()
    )
    checks_clean(driver.record_path)

    resumed = CouncilDriver.resume(driver.record_path)
    second = agents_for(resumed)
    result = run(resumed, second)
    assert result.outcome is not None and result.outcome.name == "SYNTHESIZED"
    assert [stage(r) for r in second["ada"].requests] == [2, 3] and [stage(r) for r in second["cy"].requests] == [1, 2]
    text = resumed.record_path.read_text(encoding="utf-8")
    assert all(text.count(f"> {answer}") == 1 for answer in ANSWERS.values())
    checks_clean(resumed.record_path)


def test_a_member_without_a_valid_answer_is_recorded_and_the_others_go_on(tmp_path: Path) -> None:
    driver = start(tmp_path)

    def cy_fails(request: AgentRequest) -> str:
        if request.role == "cy":
            raise AgentError("the server answered 503: try again later")
        return legal(request)

    result = run(driver, agents_for(driver, cy_fails))
    assert result.outcome is not None and result.outcome.name == "SYNTHESIZED"
    text = driver.record_path.read_text(encoding="utf-8")
    assert "## Stage 1 — No answer from cy" in text and "Review by cy" not in text
    assert result.summary.detail["agreement"] is None  # two answers: W is not measurable
    checks_clean(driver.record_path)
    # Two of three is not the panel's result: the outcome says what is missing and is no consensus.
    assert result.outcome.degraded == "cy gave no valid answer (2 of 3 answered)" and not result.outcome.consensus
    assert result.to_json()["degraded"] == result.outcome.degraded and result.to_json()["consensus"] is False


def test_a_whole_council_is_not_degraded(tmp_path: Path) -> None:
    driver = start(tmp_path)
    result = run(driver, agents_for(driver))
    assert result.outcome is not None and result.outcome.degraded is None and result.to_json()["degraded"] is None


def test_fewer_than_two_valid_answers_is_no_quorum(tmp_path: Path) -> None:
    driver = start(tmp_path)

    def only_ada(request: AgentRequest) -> str:
        return legal(request) if request.role == "ada" else "not json"

    result = run(driver, agents_for(driver, only_ada))
    assert result.outcome is not None and result.outcome.name == "NO_QUORUM" and not result.outcome.consensus
    assert "Review by" not in driver.record_path.read_text(encoding="utf-8")
    checks_clean(driver.record_path)


def test_a_review_that_names_a_member_is_sent_back_with_the_rule_and_only_that_one(tmp_path: Path) -> None:
    driver = start(tmp_path)
    slips = {"bo": 1}

    def naming(request: AgentRequest) -> str:
        if stage(request) == 2 and slips.get(request.role):
            slips[request.role] -= 1
            labels = request.json_schema["properties"]["ranking"]["items"]["properties"]["answer"]["enum"]  # type: ignore[index]
            return stated(
                request, {"ranking": [{"answer": label, "reason": "As ada wrote, it holds."} for label in labels]}
            )
        return legal(request)

    agents = agents_for(driver, naming)
    result = run(driver, agents)
    assert result.outcome is not None and result.outcome.name == "SYNTHESIZED"
    bo = [r for r in agents["bo"].requests if stage(r) == 2]
    assert len(bo) == 2 and "COUNCIL_ANONYMITY" in bo[1].prompt
    assert len([r for r in agents["ada"].requests if stage(r) == 2]) == 1
    assert "As ada wrote" not in driver.record_path.read_text(encoding="utf-8")
    checks_clean(driver.record_path)


def test_a_chairman_that_cannot_answer_is_replaced_by_the_top_ranked_member_and_the_council_is_degraded(
    tmp_path: Path,
) -> None:
    driver = start(tmp_path, chairman="openai:gpt-4o")

    def no_chair(request: AgentRequest) -> str:
        if request.role == "chairman":
            raise AgentError("the API key is missing: set OPENAI_API_KEY")
        return legal(request)

    agents = agents_for(driver, no_chair)
    result = run(driver, agents)
    assert result.outcome is not None and result.outcome.name == "SYNTHESIZED" and not result.outcome.consensus
    assert result.outcome.degraded is not None and "the chairman failed" in result.outcome.degraded
    assert "OPENAI_API_KEY" in result.outcome.degraded and result.outcome.degraded.endswith("ada wrote the synthesis")
    text = driver.record_path.read_text(encoding="utf-8")
    assert "## Stage 3 — No synthesis from chairman" in text and "- **Fallback:** ada" in text
    assert "## Stage 3 — Synthesis by ada" in text and [stage(r) for r in agents["ada"].requests] == [1, 2, 3]
    checks_clean(driver.record_path)


def test_a_fallback_that_fails_too_ends_the_council_as_failed(tmp_path: Path) -> None:
    driver = start(tmp_path, chairman="openai:gpt-4o")

    def no_synthesis(request: AgentRequest) -> str:
        if stage(request) == 3:
            raise AgentError("the API key is missing: set OPENAI_API_KEY")
        return legal(request)

    result = run(driver, agents_for(driver, no_synthesis))
    assert result.outcome is not None and result.outcome.name == "FAILED"
    text = driver.record_path.read_text(encoding="utf-8")
    assert "No synthesis from chairman" in text and "ada's agent failed" in text
    checks_clean(driver.record_path)


def test_the_sealed_sidecar_holds_each_answer_once_with_its_digest(tmp_path: Path) -> None:
    driver = start(tmp_path)
    run(driver, agents_for(driver))
    rows = [json.loads(line) for line in sealed_path(driver.record_path).read_text(encoding="utf-8").splitlines()]
    assert sorted((row["phase"], row["role"]) for row in rows) == sorted(
        (phase, name) for phase in ("stage-1", "stage-2") for name, _ in MEMBERS
    )
    text = driver.record_path.read_text(encoding="utf-8")
    assert all(row["digest"] in text for row in rows)  # the record shows each commitment with its answer


def test_bad_members_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    from moot.errors import UserError

    with pytest.raises(UserError, match="member name 'x'"):
        start(tmp_path, members=(("x", "local"), ("bo", "local")))
    with pytest.raises(UserError, match="2 to 26 members"):
        start(tmp_path, members=(("ada", "local"),))
    assert not (tmp_path / ".council").exists()


def test_an_answer_edited_after_the_reveal_is_caught_by_its_commitment_and_the_chain(tmp_path: Path) -> None:
    from moot.detect import check_path

    driver = start(tmp_path)
    run(driver, agents_for(driver))
    text = driver.record_path.read_text(encoding="utf-8")
    driver.record_path.write_text(
        text.replace("separate caches for every tenant", "one cache for all"), encoding="utf-8"
    )
    rules = {v.rule for v in check_path(driver.record_path).errors}
    assert {"COUNCIL_SEALED", "PRIOR_TURN_MODIFIED"} <= rules


def test_a_full_size_model_answers_at_length_and_only_a_small_model_is_held_to_short_fields(tmp_path: Path) -> None:
    from moot.agents.base import TurnBounds

    driver = start(tmp_path)
    roles = driver.roles()
    driver.turn_bounds = {roles[0]: TurnBounds(context_tokens=2048, compact=True)}
    small, full = driver.request_for(roles[0]), driver.request_for(roles[1])
    assert small.json_schema is not None and full.json_schema is not None
    assert small.json_schema["properties"]["answer"]["maxLength"] == 800 and small.max_tokens == 400
    assert "maxLength" not in full.json_schema["properties"]["answer"]
    assert full.max_tokens is not None and full.max_tokens > 1000
    long_answer = " ".join(["Per-tenant caches isolate eviction and billing."] * 60)  # about 2,900 characters
    assert not driver.read_reply(
        roles[1], json.dumps({"answer": long_answer, "confidence": 0.8}), "2026-11-24 21:01"
    ).errors


class SmallContextModel(Agent):
    """Every member's agent for one small-context model: a request sized for a full-size model is refused (the
    server reports its context), and the refusal is known to every agent of that model from then on."""

    CONTEXT = 2048
    learnt = False

    def __init__(self) -> None:
        self.budgets: list[int | None] = []

    def bounds(self) -> TurnBounds:
        return TurnBounds.for_context(self.CONTEXT) if SmallContextModel.learnt else self.turn_bounds

    async def reply(self, request: AgentRequest) -> AgentReply:
        self.budgets.append(request.max_tokens)
        await asyncio.sleep(0.01)  # the members' first requests are all in flight before any refusal arrives
        if (request.max_tokens or 0) > self.CONTEXT // 2:
            SmallContextModel.learnt = True
            raise AgentContextExceeded("too long for the model's context", context_tokens=self.CONTEXT)
        return AgentReply(text=legal(request), latency_s=0.01, model="small")


def test_members_asked_at_once_of_a_small_context_model_all_refit_and_the_council_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SmallContextModel, "learnt", False)
    driver = start(tmp_path)
    agents = {role: SmallContextModel() for role in driver.roles()}
    result = run(driver, agents)
    assert result.outcome is not None and result.outcome.name == "SYNTHESIZED", result.outcome
    # Each member's sealed answer was refused once at full size, every request after that was small.
    for role in ("ada", "bo", "cy"):
        first, *later = agents[role].budgets
        assert first == DEFAULT_TURN_TOKENS and later and all(b is not None and b <= 1024 for b in later), agents[
            role
        ].budgets
    checks_clean(driver.record_path)

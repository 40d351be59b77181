"""moot runs an Agora debate itself: outcomes, the mediator, the seed's prompt, legal-only schemas, resume."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from engine_agora_helpers import TOPIC, checks_clean, choosing, drone, every_role, run, start

from moot.agents import AgentRequest, FunctionAgent, ScriptAgent
from moot.detect import check_path
from moot.engine.specs import build_driver
from moot.errors import UserError
from moot.protocols.agora import record
from moot.protocols.agora.driver import FAILED, MESSAGE_CHARS, REPLY_MAX_TOKENS, AgoraDriver, parse_position
from moot.protocols.agora.machine import MEDIATOR_POSITION, make_turn
from moot.protocols.agora.machine import AgoraReply as Reply

# The seed's context block, the lines that stay the same across a role's turns first (a cacheable prefix).
SEED_BLOCK = ["DIALOGUE:", "YOUR ROLE:", "YOUR POSITION:", "TOPIC:", "TURN:", "OPPONENT SAID:"]


def headings(path: Path) -> list[str]:
    return re.findall(r"^## Turn (\d+) — (\S+)$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)


def test_a_proposal_approved_and_held_ends_in_consensus(tmp_path: Path) -> None:
    driver = start(tmp_path)
    agent = ScriptAgent()
    agent.enqueue(drone("propose", message="One repository, one CI pipeline."), role="advocate")
    agent.enqueue(drone("approve", "proposal-advocate", confidence=0.9), role="skeptic")
    agent.enqueue(drone("no-change", confidence=0.9), role="advocate")
    result = run(driver, every_role(driver, agent))
    assert result.outcome is not None and result.outcome.name == "CONSENSUS" and result.outcome.consensus
    assert driver.record_path == tmp_path / ".agora" / "adopt-a-monorepo.md"
    assert headings(driver.record_path) == [("1", "advocate"), ("2", "skeptic"), ("3", "advocate")]
    text = driver.record_path.read_text(encoding="utf-8")
    assert "- Result: CONSENSUS" in text and "consensus on proposal-advocate" in text
    checks_clean(driver.record_path)


def test_both_holding_their_own_proposals_is_a_stalemate_not_consensus(tmp_path: Path) -> None:
    driver = start(tmp_path, max_turns=6)
    agent = ScriptAgent()
    agent.enqueue(drone("propose"), drone("no-change"), drone("no-change"), role="advocate")
    agent.enqueue(drone("propose"), drone("no-change"), drone("no-change"), role="skeptic")
    result = run(driver, every_role(driver, agent))
    assert result.outcome is not None and result.outcome.name == "TIMEOUT" and not result.outcome.consensus
    assert result.summary.turns == 6  # every turn was taken: no false consensus stopped it at turn 4
    assert "- Result: TIMEOUT" in driver.record_path.read_text(encoding="utf-8")
    checks_clean(driver.record_path)


def test_twenty_turns_without_consensus_time_out(tmp_path: Path) -> None:
    driver = start(tmp_path)
    agent = choosing(lambda request: "counter")
    result = run(driver, every_role(driver, agent))
    assert result.outcome is not None and result.outcome.name == "TIMEOUT"
    assert result.summary.turns == 20 and len(headings(driver.record_path)) == 20
    assert "no consensus within the limit of 20 turns" in driver.record_path.read_text(encoding="utf-8")
    checks_clean(driver.record_path)


def test_sustained_counters_recruit_a_mediator_whose_compromise_is_approved(tmp_path: Path) -> None:
    driver = start(tmp_path)

    def prefer(request: AgentRequest) -> str:
        # Counter until the mediator has proposed, then approve its compromise.
        return "approve" if "proposal-mediator" in str(request.json_schema) else "counter"

    agent = choosing(prefer)
    result = run(driver, every_role(driver, agent))
    speakers = [role for _, role in headings(driver.record_path)]
    # Three stalled rounds (six counters), then the mediator; both participants approve its proposal.
    assert speakers == ["advocate", "skeptic"] * 3 + ["mediator", "advocate", "skeptic"]
    assert result.outcome is not None and result.outcome.consensus
    assert "consensus on proposal-mediator" in result.outcome.reason
    mediator_asked = [r for r in agent.requests if r.role == "mediator"]
    assert len(mediator_asked) == 1
    prompt = mediator_asked[0].prompt
    assert f"YOUR POSITION: {MEDIATOR_POSITION}" in prompt
    assert "advocate says counter." in prompt and "skeptic says counter." in prompt
    assert mediator_asked[0].json_schema is not None
    assert mediator_asked[0].json_schema["properties"]["signal"]["enum"] == ["propose"]
    text = driver.record_path.read_text(encoding="utf-8")
    assert "## Turn 7 — mediator\n\nProposal: proposal-mediator" in text
    checks_clean(driver.record_path)


def test_the_mediator_keeps_speaking_after_every_round_once_recruited(tmp_path: Path) -> None:
    driver = start(tmp_path, max_turns=14)
    result = run(driver, every_role(driver, choosing(lambda request: "counter")))
    speakers = [role for _, role in headings(driver.record_path)]
    assert [i + 1 for i, role in enumerate(speakers) if role == "mediator"] == [7, 10, 13]
    assert result.outcome is not None and result.outcome.name == "TIMEOUT"
    assert result.summary.detail["mediator_needed"] is True
    checks_clean(driver.record_path)


def test_the_prompt_is_the_seeds_context_block(tmp_path: Path) -> None:
    driver = start(tmp_path, positions=[("builder", "One repository for all services"), ("keeper", "Keep one each")])
    agent = ScriptAgent()
    agent.enqueue(drone("propose", message="One repository removes 14 pull requests per change."), role="builder")
    agent.enqueue(drone("approve", "proposal-builder"), role="keeper")
    agent.enqueue(drone("no-change"), role="builder")
    run(driver, every_role(driver, agent))
    first, second = agent.requests[0], agent.requests[1]
    lines = second.prompt.split("\n")
    assert [next(line for line in lines if line.startswith(key)) for key in SEED_BLOCK] == [
        "DIALOGUE: adopt-a-monorepo",
        "YOUR ROLE: keeper",
        "YOUR POSITION: Keep one each",
        f"TOPIC: {TOPIC}",
        "TURN: 2",
        "OPPONENT SAID: One repository removes 14 pull requests per change.",
    ]
    positions = [next(i for i, line in enumerate(lines) if line.startswith(key)) for key in SEED_BLOCK]
    assert positions == sorted(positions)
    assert lines[-1] == "YOUR TURN. Output JSON only:"
    assert "EVIDENCE POOL" not in second.prompt and "EVIDENCE POOL" not in first.prompt
    assert first.prompt.split("\n")[:3] == [
        "DIALOGUE: adopt-a-monorepo",
        "YOUR ROLE: builder",
        "YOUR POSITION: One repository for all services",
    ]
    assert all(r.max_tokens == REPLY_MAX_TOKENS == 100 for r in agent.requests)
    assert second.system is not None and "JSON only" in second.system and "Methodology opinion" in second.system


def test_the_schema_offers_only_legal_signals_and_targets(tmp_path: Path) -> None:
    driver = start(tmp_path)
    opening = driver.reply_schema("advocate")["properties"]
    assert opening["signal"]["enum"] == ["propose", "no-change", "defer"]
    assert opening["target"] == {"type": "null"}
    assert opening["evidence"]["maxItems"] == 0 and opening["message"]["pattern"].endswith(
        f"{{0,{MESSAGE_CHARS - 1}}}$"
    )
    driver.commit(make_turn(Reply(signal="propose", message="One repo.", confidence=0.8), 1, "advocate"))
    answer = driver.reply_schema("skeptic")["properties"]
    assert answer["signal"]["enum"] == ["propose", "counter", "approve", "no-change", "defer"]
    assert answer["target"]["enum"] == ["proposal-advocate"]  # approve may name only another's proposal
    driver.commit(make_turn(Reply(signal="counter", message="No.", confidence=0.8, target="turn-1"), 2, "skeptic"))
    own = driver.reply_schema("advocate")["properties"]
    assert "approve" not in own["signal"]["enum"]  # its own proposal is the only one
    assert own["target"]["enum"] == ["turn-2", "turn-1"]


def test_every_combination_the_schema_offers_is_a_legal_turn(tmp_path: Path) -> None:
    driver = start(tmp_path, positions=[("a", "A"), ("b", "B"), ("c", "C")], max_turns=30, deadlock_window=1)
    moves = ["propose", "counter", "propose", "approve", "counter", "no-change", "defer", "propose", "approve"]
    for move in moves:
        role = driver.next_speaker()
        assert role is not None
        properties = driver.reply_schema(role)["properties"]
        for signal in properties["signal"]["enum"]:
            for target in properties["target"].get("enum", [None]):
                reply = Reply(signal=signal, message="Reasons.", confidence=0.5, target=target)
                candidate = driver.read_reply(role, reply.model_dump_json(), "now")
                assert candidate.errors == [], (role, signal, target, candidate.errors)
        signal = move if move in properties["signal"]["enum"] else properties["signal"]["enum"][0]
        target = properties["target"].get("enum", [None])[0]
        reply = Reply(signal=signal, message="Reasons.", confidence=0.5, target=target)
        driver.commit(driver.read_reply(role, reply.model_dump_json(), "now").turn)
    assert "mediator" in [role for _, role in headings(driver.record_path)]
    checks_clean(driver.record_path)


def test_fact_based_requires_evidence_and_sends_a_bare_reply_back(tmp_path: Path) -> None:
    driver = start(tmp_path, methodology="fact-based")
    replies = [
        drone("propose"),  # no evidence: refused
        drone("propose", evidence=True),
        drone("approve", "proposal-advocate", evidence=True),
        drone("no-change", evidence=True),
    ]
    seen: list[AgentRequest] = []

    def answer(request: AgentRequest) -> str:
        seen.append(request)
        return replies.pop(0)

    result = run(driver, every_role(driver, FunctionAgent(answer)))
    schema = seen[0].json_schema
    assert schema is not None and schema["properties"]["evidence"]["minItems"] == 1
    assert "AGORA_EVIDENCE_REQUIRED" not in seen[0].prompt
    assert "AGORA_EVIDENCE_REQUIRED" in seen[1].prompt and "Fix the errors and try again." in seen[1].prompt
    assert seen[0].system is not None and "MUST include at least one evidence item" in seen[0].system
    assert result.outcome is not None and result.outcome.name == "CONSENSUS"
    assert driver.record_path.read_text(encoding="utf-8").count('"source": "build logs"') == 3
    checks_clean(driver.record_path)


def test_a_broken_run_resumes_without_losing_or_repeating_a_turn(tmp_path: Path) -> None:
    driver = start(tmp_path)
    first = ScriptAgent()
    first.enqueue(drone("propose", message="One repository."), role="advocate")
    first.enqueue(drone("counter", "proposal-advocate", message="CI gets slow."), role="skeptic")
    broken = run(driver, every_role(driver, first))  # the script runs dry at turn 3
    assert broken.outcome is not None and broken.outcome.name == FAILED
    assert "advocate's agent failed" in broken.outcome.reason
    assert "## Outcome" not in driver.record_path.read_text(encoding="utf-8")
    checks_clean(driver.record_path)

    resumed = AgoraDriver.resume(driver.record_path)
    assert resumed.next_speaker() == "advocate" and resumed.summary().turns == 2
    second = ScriptAgent()
    second.enqueue(drone("propose", message="Build only what changed."), drone("no-change"), role="advocate")
    second.enqueue(drone("approve", "proposal-advocate"), role="skeptic")
    result = run(resumed, every_role(resumed, second))
    assert "TURN: 3" in second.requests[0].prompt and "OPPONENT SAID: CI gets slow." in second.requests[0].prompt
    assert result.outcome is not None and result.outcome.name == "CONSENSUS"
    assert [number for number, _ in headings(resumed.record_path)] == ["1", "2", "3", "4", "5"]
    checks_clean(resumed.record_path)


def test_an_invalid_reply_is_repaired_with_the_rule_id(tmp_path: Path) -> None:
    driver = start(tmp_path, max_turns=4)
    replies = [drone("approve", "proposal-advocate"), drone("propose")]  # nothing to approve yet
    agent = FunctionAgent(lambda request: replies.pop(0) if replies else drone("no-change"))
    run(driver, every_role(driver, agent))
    assert "AGORA_UNKNOWN_TARGET" in agent.requests[1].prompt
    assert headings(driver.record_path)[0] == ("1", "advocate")
    assert "Proposal: proposal-advocate" in driver.record_path.read_text(encoding="utf-8")


def test_a_message_of_brackets_alone_is_sent_back_and_the_repaired_debate_checks_clean(tmp_path: Path) -> None:
    driver = start(tmp_path, max_turns=4)
    replies = [drone("propose", message="]["), drone("propose", message="One repository, scoped CI builds.")]
    agent = FunctionAgent(lambda request: replies.pop(0) if replies else drone("no-change"))
    run(driver, every_role(driver, agent))
    assert "AGORA_EMPTY_TEXT" in agent.requests[1].prompt
    report = check_path(driver.record_path)
    assert report.exit_code == 0 and [v.rule for v in report.violations if v.rule == "AGORA_EMPTY_TEXT"] == []
    assert '"message": "]["' not in driver.record_path.read_text(encoding="utf-8")


def test_a_record_that_exists_is_not_overwritten(tmp_path: Path) -> None:
    start(tmp_path)
    with pytest.raises(UserError, match="moot resume"):
        start(tmp_path)


def test_bad_options_are_one_sentence_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="methodology 'vibes' is unknown"):
        start(tmp_path, methodology="vibes")
    with pytest.raises(UserError, match="reserved for the mediator"):
        start(tmp_path, positions=[("mediator", "x"), ("b", "y")])
    with pytest.raises(UserError, match="max turns is 2"):
        start(tmp_path, max_turns=2)
    with pytest.raises(UserError, match="add --source PATH"):
        start(tmp_path, research=1)
    with pytest.raises(UserError, match="each position is a pair"):
        start(tmp_path, positions=[("a", "b", "c"), ("d", "e")])
    with pytest.raises(UserError, match="ROLE=TEXT"):
        parse_position("advocate")
    assert parse_position("advocate=Use Strategy=yes") == ("advocate", "Use Strategy=yes")
    assert not (tmp_path / ".agora").exists()


def test_default_positions_oppose_each_other_and_the_mediator_has_an_agent(tmp_path: Path) -> None:
    driver = start(tmp_path, models=[("advocate", "local"), ("skeptic", "openai:gpt-4o-mini")])
    _, state, _ = record.RECORD.load(driver.record_path)
    assert state.turns == 0
    config = driver.config
    assert [(p.role, p.position) for p in config.participants] == [
        ("advocate", f"Argue for: {TOPIC}"),
        ("skeptic", f"Argue against: {TOPIC}"),
    ]
    assert driver.roles() == ["advocate", "skeptic", "mediator"]
    assert driver.summary().detail["models"] == {"advocate": "local", "skeptic": "openai:gpt-4o-mini"}


def test_a_batch_line_starts_an_agora_debate(tmp_path: Path) -> None:
    spec = {"protocol": "agora", "topic": "Tabs or spaces", "positions": [["tabs", "Tabs"], ["spaces", "Spaces"]]}
    driver = build_driver(spec, tmp_path, "2026-11-22T09:00:00Z")
    assert isinstance(driver, AgoraDriver)
    assert driver.roles() == ["tabs", "spaces", "mediator"] and driver.next_speaker() == "tabs"
    assert driver.summary().detail["max_turns"] == 20

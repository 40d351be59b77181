"""The Agora state machine: Nash consensus (with the hive-mcp bug fixed), turn rules, timeout, mediator."""

from __future__ import annotations

import pytest
from agora_helpers import Debate, config, reply
from pydantic import ValidationError

from moot.errors import ProtocolViolationError, Severity
from moot.protocols.agora.machine import (
    MEDIATOR,
    RULES,
    SIGNALS,
    AgoraConfig,
    AgoraReply,
    Evidence,
    Position,
    Signal,
    make_turn,
    reply_json_schema,
)

# --- consensus ---------------------------------------------------------------------------------


def test_proposal_approved_by_the_other_and_held_by_its_owner_is_consensus() -> None:
    debate = Debate()
    debate.play([("propose", None), ("approve", "proposal-advocate")])
    assert debate.state.outcome is None  # the proposer's last signal is still 'propose'
    debate.say("no-change")
    outcome = debate.protocol.outcome(debate.state)
    assert outcome is not None and outcome.name == "CONSENSUS" and outcome.consensus
    assert "proposal-advocate" in outcome.reason
    assert debate.protocol.next_speaker(debate.state) is None


def test_each_holding_their_own_proposal_is_a_stalemate_not_consensus() -> None:
    # The hive-mcp bug: all last signals are equilibrium signals, yet nobody accepted anything.
    debate = Debate()
    debate.play([("propose", None), ("propose", None), ("no-change", None), ("no-change", None)])
    assert debate.state.outcome is None
    assert debate.protocol.next_speaker(debate.state) == "advocate"


def test_approvals_of_different_proposals_are_not_consensus() -> None:
    debate = Debate(config("a", "b", "c"))
    debate.play(
        [
            ("propose", None),
            ("propose", None),
            ("approve", "proposal-a"),
            ("approve", "proposal-b"),  # a accepts b's proposal ...
            ("approve", "proposal-a"),  # ... while b and c accept a's
        ]
    )
    assert {s.signal for s in debate.state.standings.values()} == {"approve"}
    assert debate.state.outcome is None


def test_approvals_by_everyone_but_the_owner_of_the_same_proposal_are_consensus() -> None:
    debate = Debate(config("a", "b", "c"))
    debate.play([("propose", None), ("approve", "turn-1"), ("approve", "proposal-a")])
    assert debate.state.outcome is None
    debate.say("no-change")
    assert debate.state.outcome is not None and debate.state.outcome.name == "CONSENSUS"


def test_no_change_by_someone_who_does_not_own_the_proposal_blocks_consensus() -> None:
    debate = Debate(config("a", "b", "c"))
    debate.play([("propose", None), ("approve", "proposal-a"), ("no-change", None), ("no-change", None)])
    assert debate.state.outcome is None  # c holds no-change but owns nothing that was approved
    debate.play([("approve", "proposal-a"), ("approve", "proposal-a")])
    assert debate.state.outcome is not None and debate.state.outcome.name == "CONSENSUS"


def test_defer_is_neutral_and_blocks_consensus() -> None:
    debate = Debate(config("a", "b", "c"))
    debate.play([("propose", None), ("approve", "proposal-a"), ("defer", "turn-1"), ("no-change", None)])
    assert debate.state.outcome is None
    debate.play([("approve", "proposal-a"), ("approve", "proposal-a")])
    assert debate.state.outcome is not None and debate.state.outcome.consensus


def test_consensus_needs_every_participant_to_have_spoken() -> None:
    debate = Debate(config("a", "b", "c"))
    debate.play([("propose", None), ("approve", "proposal-a")])
    assert "c" not in debate.state.standings
    assert debate.state.outcome is None


def test_a_later_propose_supersedes_the_earlier_one_under_the_same_id() -> None:
    debate = Debate()
    first = debate.say("propose")
    debate.say("counter", "turn-1")
    debate.say("propose")  # the advocate revises its proposal
    assert first.proposal_id == debate.turns[-1].proposal_id == "proposal-advocate"
    assert debate.state.proposals == {"proposal-advocate": "advocate"}
    debate.play([("approve", "turn-1"), ("no-change", None)])  # turn-1 names the (revised) proposal
    assert debate.state.outcome is not None and debate.state.outcome.name == "CONSENSUS"


def test_equilibrium_counter_resets_on_disruption_and_ignores_defer() -> None:
    debate = Debate(config("a", "b", "c"))
    moves: list[tuple[Signal, str | None]] = [
        ("propose", None),
        ("approve", "proposal-a"),
        ("defer", "turn-1"),
        ("no-change", None),
        ("counter", "turn-3"),
    ]
    streaks = []
    for signal, target in moves:
        debate.say(signal, target)
        streaks.append(debate.state.equilibrium_streak)
    assert streaks == [0, 1, 1, 2, 0]


# --- rules about one turn ----------------------------------------------------------------------


def test_counter_without_target_is_refused() -> None:
    debate = Debate()
    debate.say("propose")
    with pytest.raises(ProtocolViolationError) as refused:
        debate.say("counter", None)
    assert [v.rule for v in refused.value.violations] == ["AGORA_TARGET_REQUIRED"]
    assert debate.state.turns == 1  # nothing was applied


def test_approve_without_target_is_refused() -> None:
    debate = Debate()
    debate.say("propose")
    assert debate.problems(debate.turn("approve", None)) == ["AGORA_TARGET_REQUIRED"]


def test_fact_based_turn_without_evidence_is_refused() -> None:
    debate = Debate(config(methodology="fact-based"))
    with pytest.raises(ProtocolViolationError) as refused:
        debate.say("propose")
    assert [v.rule for v in refused.value.violations] == ["AGORA_EVIDENCE_REQUIRED"]
    debate.say("propose", evidence=True)
    assert debate.state.turns == 1


def test_targets_must_exist() -> None:
    debate = Debate()
    debate.say("propose")
    assert debate.problems(debate.turn("counter", "turn-2")) == ["AGORA_UNKNOWN_TARGET"]  # itself
    assert debate.problems(debate.turn("counter", "turn-0")) == ["AGORA_UNKNOWN_TARGET"]
    assert debate.problems(debate.turn("counter", "proposal-skeptic")) == ["AGORA_UNKNOWN_TARGET"]
    assert debate.problems(debate.turn("counter", "your last point")) == ["AGORA_UNKNOWN_TARGET"]
    assert debate.problems(debate.turn("counter", "turn-1")) == []
    assert debate.problems(debate.turn("counter", "proposal-advocate")) == []


def test_approve_must_target_a_proposal() -> None:
    debate = Debate()
    debate.play([("propose", None), ("counter", "turn-1")])
    assert debate.problems(debate.turn("approve", "turn-2")) == ["AGORA_APPROVE_TARGET"]


def test_approving_ones_own_proposal_is_refused() -> None:
    debate = Debate()
    debate.play([("propose", None), ("defer", "turn-1")])
    assert debate.problems(debate.turn("approve", "proposal-advocate")) == ["AGORA_SELF_APPROVAL"]
    assert debate.problems(debate.turn("approve", "turn-1")) == ["AGORA_SELF_APPROVAL"]


@pytest.mark.parametrize("confidence", [-0.1, 1.01, float("nan")])
def test_confidence_outside_zero_to_one_is_refused(confidence: float) -> None:
    debate = Debate()
    turn = make_turn(reply("propose", confidence=confidence), 1, "advocate")
    assert debate.problems(turn) == ["AGORA_CONFIDENCE"]
    bad_evidence = Evidence(source="a", content="b", confidence=confidence)
    turn = make_turn(
        AgoraReply(signal="propose", message="m.", confidence=0.5, evidence=(bad_evidence,)), 1, "advocate"
    )
    assert debate.problems(turn) == ["AGORA_CONFIDENCE"]


def test_empty_message_and_empty_evidence_are_refused() -> None:
    debate = Debate()
    empty = AgoraReply(
        signal="propose", message=" ", confidence=0.5, evidence=(Evidence(source="", content="x", confidence=0.5),)
    )
    assert debate.problems(make_turn(empty, 1, "advocate")) == ["AGORA_EMPTY_TEXT", "AGORA_EMPTY_TEXT"]


def test_long_message_is_only_a_warning() -> None:
    debate = Debate()
    long = AgoraReply(signal="propose", message="One. Two. Three. Four. Five.", confidence=0.5)
    state, warnings = debate.protocol.step(debate.state, make_turn(long, 1, "advocate"))
    assert [(w.rule, w.severity) for w in warnings] == [("AGORA_MESSAGE_LENGTH", Severity.WARNING)]
    assert state.turns == 1
    four = AgoraReply(signal="propose", message="One. Two. Three. Four.", confidence=0.5)
    assert debate.problems(make_turn(four, 1, "advocate")) == []


def test_turn_numbers_are_contiguous() -> None:
    debate = Debate()
    turn = make_turn(reply("propose"), 2, "advocate")
    assert debate.problems(turn) == ["AGORA_TURN_NUMBER"]


def test_proposal_id_must_match_the_signal() -> None:
    debate = Debate()
    propose = make_turn(reply("propose"), 1, "advocate")
    assert debate.problems(propose.model_copy(update={"proposal_id": None})) == ["AGORA_PROPOSAL_ID"]
    assert debate.problems(propose.model_copy(update={"proposal_id": "proposal-skeptic"})) == ["AGORA_PROPOSAL_ID"]
    debate.say("propose")
    counter = make_turn(reply("counter", "turn-1"), 2, "skeptic")
    assert debate.problems(counter.model_copy(update={"proposal_id": "proposal-skeptic"})) == ["AGORA_PROPOSAL_ID"]


# --- speaking order ----------------------------------------------------------------------------


def test_participants_speak_round_robin() -> None:
    debate = Debate(config("a", "b", "c"))
    assert [debate.say("defer").role for _ in range(4)] == ["a", "b", "c", "a"]
    assert debate.state.round == 2
    assert debate.problems(make_turn(reply("defer"), 5, "c")) == ["AGORA_SPEAKER_ORDER"]
    assert debate.problems(make_turn(reply("defer"), 5, "stranger")) == ["AGORA_SPEAKER_ORDER"]


def test_order_resumes_after_a_speaker_out_of_turn() -> None:
    debate = Debate()
    turns = [
        make_turn(reply("propose"), 1, "advocate"),
        make_turn(reply("defer"), 2, "advocate"),  # out of turn
        make_turn(reply("counter", "turn-1"), 3, "skeptic"),
        make_turn(reply("no-change"), 4, "advocate"),
    ]
    replay = debate.protocol.replay(turns)
    assert [(v.rule, v.turn) for v in replay.violations] == [("AGORA_SPEAKER_ORDER", 2)]


# --- limits: timeout and mediator --------------------------------------------------------------


def test_twenty_turns_without_consensus_time_out() -> None:
    debate = Debate()
    debate.say("propose")
    while debate.state.outcome is None:
        debate.say("counter", f"turn-{debate.state.turns}")
    outcome = debate.state.outcome
    assert debate.state.turns == 20
    assert outcome.name == "TIMEOUT" and not outcome.consensus
    assert "20" in outcome.reason
    with pytest.raises(ProtocolViolationError) as refused:
        debate.say("counter", "turn-20")
    assert [v.rule for v in refused.value.violations] == ["AGORA_AFTER_OUTCOME"]


def test_consensus_on_the_last_allowed_turn_is_consensus() -> None:
    debate = Debate(config(max_turns=3))
    debate.play([("propose", None), ("approve", "proposal-advocate"), ("no-change", None)])
    assert debate.state.outcome is not None and debate.state.outcome.name == "CONSENSUS"


def test_sustained_counters_recruit_the_mediator() -> None:
    debate = Debate()  # deadlock window: 3 full rounds without an approve
    debate.say("propose")
    for _ in range(4):
        debate.say("counter", f"turn-{debate.state.turns}")
    assert not debate.state.mediator_needed
    assert debate.problems(make_turn(reply("propose"), 6, MEDIATOR)) == ["AGORA_SPEAKER_ORDER"]
    debate.say("counter", "turn-5")  # completes the third stalled round
    summary = debate.protocol.summary(debate.state)
    assert debate.state.mediator_needed and summary.detail["mediator_needed"] is True
    assert summary.next_speaker == MEDIATOR
    assert debate.problems(make_turn(reply("counter", "turn-6"), 7, "advocate")) == ["AGORA_SPEAKER_ORDER"]


def test_the_mediator_speaks_after_each_full_round_and_can_broker_consensus() -> None:
    debate = Debate(config(deadlock_window=1))
    debate.play([("propose", None), ("propose", None)])  # one stalled round is the window here
    assert debate.say("propose").role == MEDIATOR
    assert debate.turns[-1].proposal_id == "proposal-mediator"
    debate.play([("counter", "proposal-mediator"), ("defer", "turn-3")])
    assert debate.protocol.next_speaker(debate.state) == MEDIATOR  # every round, once recruited
    debate.say("no-change")
    debate.say("approve", "proposal-mediator")
    assert debate.state.outcome is None
    debate.say("approve", "turn-3")
    outcome = debate.state.outcome
    assert outcome is not None and outcome.consensus and "proposal-mediator" in outcome.reason


def test_a_round_with_an_approve_resets_the_deadlock_count() -> None:
    debate = Debate(config(deadlock_window=2))
    debate.play([("propose", None), ("counter", "turn-1")])
    assert debate.state.stalled_rounds == 1
    debate.play([("propose", None), ("approve", "proposal-advocate")])
    assert debate.state.stalled_rounds == 0
    debate.play([("counter", "turn-4"), ("counter", "turn-5")])
    assert debate.state.stalled_rounds == 1 and not debate.state.mediator_needed


# --- configuration and schema ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("participants", "max_turns", "fragment"),
    [
        ([("advocate", "x")], 20, "at least two"),
        ([("a", "x"), ("a", "y")], 20, "listed twice"),
        ([("a", "x"), (MEDIATOR, "y")], 20, "reserved"),
        ([("a b", "x"), ("c", "y")], 20, "letters, digits"),
        ([("a", "x"), ("b", " ")], 20, "empty"),
        ([("a", "x"), ("b", "y")], 2, "raise it"),
    ],
)
def test_unsound_configs_are_refused(participants: list[tuple[str, str]], max_turns: int, fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        AgoraConfig(
            dialogue_id="d",
            topic="t",
            participants=tuple(Position(role=r, position=p) for r, p in participants),
            max_turns=max_turns,
        )


def test_reply_schema_is_simple_enough_for_grammar_decoding() -> None:
    schema = reply_json_schema()
    assert "anyOf" not in str(schema)
    assert schema["required"] == ["signal", "message", "confidence"]
    assert schema["properties"]["signal"]["enum"] == list(SIGNALS)
    assert schema["properties"]["target"]["type"] == ["string", "null"]
    assert schema["additionalProperties"] is False


def test_every_rule_is_prefixed_and_has_a_summary() -> None:
    for rule in RULES:
        assert rule.id.startswith("AGORA_") and rule.summary.endswith(".")

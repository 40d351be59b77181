"""The roundtable state machine, without files: turn order, rounds, conclusion and closing."""

from __future__ import annotations

import json

import pytest

from moot.errors import ProtocolViolationError
from moot.protocols.roundtable.machine import (
    MODERATOR,
    RULES,
    MeetingState,
    Minutes,
    RoundtableClosing,
    RoundtableProtocol,
    RoundtableReply,
    RoundtableTurn,
    Speech,
    TurnState,
    advance,
    close_state,
    finish_state,
    name_problem,
    opening_state,
    replay_meeting,
    state_violations,
    turn_from_reply,
)

ORDER = ("architect", "reviewer", "security")
MINUTES = Minutes(summary="We met.", consensus="Adopt the cache.", unresolved="None.", action_items="- write it up")


def reply(text: str = "I agree.", *, consensus: bool = False, prompt: str = "Your view?") -> RoundtableReply:
    return RoundtableReply(
        position=text,
        analysis="Because.",
        responses_and_questions="None.",
        prompt_for_next_speaker=prompt,
        consensus_reached=consensus,
    )


def meeting(order: tuple[str, ...] = ORDER, max_rounds: int = 2) -> tuple[RoundtableProtocol, MeetingState]:
    protocol = RoundtableProtocol(opening_state("cache-design", order, max_rounds, "Start."))
    return protocol, protocol.initial_state()


def speak(
    protocol: RoundtableProtocol, state: MeetingState, *, consensus: bool = False, prompt: str = "Your view?"
) -> MeetingState:
    turn = turn_from_reply(state, reply(consensus=consensus, prompt=prompt))
    new_state, warnings = protocol.step(state, turn)
    assert warnings == []
    return new_state


def rules_of(error: pytest.ExceptionInfo[ProtocolViolationError]) -> list[str]:
    return [v.rule for v in error.value.violations]


def test_speakers_take_turns_and_rounds_advance() -> None:
    protocol, state = meeting()
    seen = []
    for _ in range(6):
        seen.append((state.turn.current_speaker, state.turn.round))
        state = speak(protocol, state)
    assert seen == [
        ("architect", 1),
        ("reviewer", 1),
        ("security", 1),
        ("architect", 2),
        ("reviewer", 2),
        ("security", 2),
    ]
    # After the last speaker of the last round the meeting concludes and the moderator is up.
    assert state.turn.status == "concluding"
    assert state.turn.current_speaker == MODERATOR
    assert (state.turn.round, state.turn.current_speaker_index) == (3, 0)
    assert protocol.next_speaker(state) == MODERATOR
    assert protocol.outcome(state) is None  # concluding is not terminal


def test_prompt_for_the_next_speaker_is_committed() -> None:
    protocol, state = meeting()
    state = speak(protocol, state, prompt="Reviewer, is invalidation enough?")
    assert state.turn.prompt_for_speaker == "Reviewer, is invalidation enough?"


def test_closing_after_the_limit_is_not_consensus() -> None:
    protocol, state = meeting(max_rounds=1)
    for _ in range(3):
        state = speak(protocol, state)
    state, _ = protocol.step(state, RoundtableClosing(minutes=MINUTES, next_state=close_state(state.turn)))
    outcome = protocol.outcome(state)
    assert outcome is not None and outcome.name == "closed" and outcome.consensus is False
    assert protocol.next_speaker(state) is None
    assert protocol.summary(state).turns == 4  # three speeches and the minutes
    assert protocol.summary(state).round == 1  # a one-round meeting never shows round 2


def test_declared_consensus_concludes_early_and_counts_as_consensus() -> None:
    protocol, state = meeting(max_rounds=3)
    state = speak(protocol, state)
    state = speak(protocol, state, consensus=True)
    assert (state.turn.status, state.turn.round, state.turn.current_speaker) == ("concluding", 1, MODERATOR)
    state, _ = protocol.step(state, RoundtableClosing(minutes=MINUTES, next_state=close_state(state.turn)))
    outcome = protocol.outcome(state)
    assert outcome is not None and outcome.consensus is True
    assert "consensus" in outcome.reason


def test_wrong_speaker_is_refused() -> None:
    protocol, state = meeting()
    turn = turn_from_reply(state, reply())
    wrong = turn.model_copy(update={"speech": turn.speech.model_copy(update={"role": "security"})})
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, wrong)
    assert rules_of(error) == ["ROUNDTABLE_SPEAKER_ORDER"]
    assert "architect" in str(error.value)


def test_sequence_must_be_next() -> None:
    protocol, state = meeting()
    turn = turn_from_reply(state, reply())
    skipped = turn.model_copy(update={"speech": turn.speech.model_copy(update={"sequence": 2})})
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, skipped)
    assert rules_of(error) == ["ROUNDTABLE_SEQUENCE"]


def test_empty_speech_is_refused() -> None:
    protocol, state = meeting()
    turn = RoundtableTurn(speech=Speech(sequence=1, role="architect", body=" \n"), next_state=advance(state.turn))
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, turn)
    assert rules_of(error) == ["ROUNDTABLE_EMPTY_SPEECH"]


def test_state_that_does_not_advance_is_refused() -> None:
    protocol, state = meeting()
    turn = turn_from_reply(state, reply())
    stuck = turn.model_copy(update={"next_state": state.turn})
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, stuck)
    assert "ROUNDTABLE_ROUND_ADVANCE" in rules_of(error)


def test_changing_the_speaker_order_is_refused() -> None:
    protocol, state = meeting()
    turn = turn_from_reply(state, reply())
    reordered = turn.next_state.model_copy(update={"speaker_order": ("reviewer", "architect", "security")})
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, turn.model_copy(update={"next_state": reordered}))
    assert "ROUNDTABLE_ROUND_ADVANCE" in rules_of(error)
    assert "speaker_order" in str(error.value)


def test_staying_open_past_the_limit_is_refused() -> None:
    protocol, state = meeting(order=("a",), max_rounds=1)
    turn = turn_from_reply(state, reply())
    still_open = turn.next_state.model_copy(update={"status": "open", "current_speaker": "a"})
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, turn.model_copy(update={"next_state": still_open}))
    assert rules_of(error) == ["ROUNDTABLE_CONCLUDE"]


def test_a_speech_cannot_close_the_meeting() -> None:
    protocol, state = meeting()
    turn = turn_from_reply(state, reply(consensus=True))
    closed = close_state(turn.next_state)
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, turn.model_copy(update={"next_state": closed}))
    assert rules_of(error) == ["ROUNDTABLE_CONCLUDE"]
    assert "minutes" in str(error.value)


def test_concluding_refuses_every_speech() -> None:
    protocol, state = meeting(order=("a",), max_rounds=1)
    state = speak(protocol, state)
    assert state.turn.status == "concluding"
    late = RoundtableTurn(speech=Speech(sequence=2, role="a", body="One more thing."), next_state=state.turn)
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, late)
    assert rules_of(error) == ["ROUNDTABLE_CONCLUDING_MODERATOR_ONLY"]
    # Even a speech file by the moderator: while concluding the moderator writes minutes, not speeches.
    by_moderator = late.model_copy(update={"speech": late.speech.model_copy(update={"role": MODERATOR})})
    with pytest.raises(ProtocolViolationError):
        protocol.step(state, by_moderator)


def test_minutes_only_while_concluding() -> None:
    protocol, state = meeting()
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, RoundtableClosing(minutes=MINUTES, next_state=close_state(state.turn)))
    assert rules_of(error) == ["ROUNDTABLE_MINUTES_TOO_EARLY"]


@pytest.mark.parametrize("part", ["summary", "consensus", "unresolved", "action_items"])
def test_minutes_missing_a_part_cannot_close(part: str) -> None:
    protocol, state = meeting(order=("a",), max_rounds=1)
    state = speak(protocol, state)
    partial = MINUTES.model_copy(update={part: "  "})
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, RoundtableClosing(minutes=partial, next_state=close_state(state.turn)))
    assert rules_of(error) == ["ROUNDTABLE_MINUTES"]


def test_nothing_after_closed() -> None:
    protocol, state = meeting(order=("a",), max_rounds=1)
    state = speak(protocol, state)
    state, _ = protocol.step(state, RoundtableClosing(minutes=MINUTES, next_state=close_state(state.turn)))
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, RoundtableClosing(minutes=MINUTES, next_state=state.turn))
    assert rules_of(error) == ["ROUNDTABLE_AFTER_CLOSED"]
    late = RoundtableTurn(speech=Speech(sequence=2, role="a", body="Wait."), next_state=state.turn)
    with pytest.raises(ProtocolViolationError) as error:
        protocol.step(state, late)
    assert rules_of(error) == ["ROUNDTABLE_AFTER_CLOSED"]


def test_base_replay_runs_typed_turns() -> None:
    protocol, state = meeting(order=("架构师", "审查员"), max_rounds=1)
    turns = []
    for _ in range(2):
        turn = turn_from_reply(state, reply())
        turns.append(turn)
        state = protocol.apply(state, turn)
    replay = protocol.replay([*turns, RoundtableClosing(minutes=MINUTES, next_state=close_state(state.turn))])
    assert replay.violations == []
    assert replay.state.turn.status == "closed"


def test_state_rules_name_the_field_and_fix() -> None:
    broken = TurnState(
        conference="x",
        status="open",
        round=0,
        max_rounds=1,
        speaker_order=("a", "a/b"),
        current_speaker_index=5,
        current_speaker="a",
        prompt_for_speaker="",
    )
    found = state_violations(broken, {"round": 4})
    assert {v.rule for v in found} == {"ROUNDTABLE_STATE_SCHEMA"}
    messages = " | ".join(v.message for v in found)
    assert "round is 0" in messages and "'a/b'" in messages and "use 0 to 1" in messages
    assert any(v.line == 4 and v.file == "turn.json" for v in found)


def test_current_speaker_must_match_index() -> None:
    state = opening_state("x", ORDER, 2, "").model_copy(update={"current_speaker": "security"})
    assert [v.rule for v in state_violations(state)] == ["ROUNDTABLE_CURRENT_SPEAKER"]


@pytest.mark.parametrize("name", ["架构师", "security lead", "審查員-2", "ревьюер"])
def test_unicode_role_names_are_allowed(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize("name", ["", " x", "a/b", "..", ".hidden", "a\\b", "a\nb", "x" * 201])
def test_names_that_cannot_be_file_names_are_refused(name: str) -> None:
    assert name_problem(name) is not None


def test_finish_state_completes_an_interrupted_speech() -> None:
    opening = opening_state("x", ("a", "b"), 1, "Start.")
    pending = Speech(sequence=1, role="a", body="My view.")
    replay = replay_meeting(opening, [pending], None)
    assert [v.rule for v in replay.violations] == ["ROUNDTABLE_UNCOMMITTED_SPEECH"]
    repaired = finish_state(replay.state)
    assert repaired is not None
    assert (repaired.current_speaker, repaired.current_speaker_index, repaired.round) == ("b", 1, 1)
    assert "001_a.md" in repaired.prompt_for_speaker
    # The state it computes is exactly what the rules accept for that record.
    assert replay_meeting(repaired, [pending], None).violations == []
    assert finish_state(replay_meeting(repaired, [pending], None).state) is None


def test_reply_schema_is_plain() -> None:
    schema = RoundtableReply.model_json_schema()
    text = json.dumps(schema)
    assert "anyOf" not in text and "$ref" not in text
    assert set(schema["required"]) == set(schema["properties"])
    assert {p["type"] for p in schema["properties"].values()} == {"string", "boolean"}


def test_turn_state_schema_is_plain() -> None:
    text = json.dumps(TurnState.model_json_schema())
    assert "anyOf" not in text
    assert '"enum": ["open", "concluding", "closed"]' in text


def test_rule_ids_are_prefixed_upper_snake() -> None:
    for rule in RULES:
        assert rule.id.startswith("ROUNDTABLE_") and rule.id == rule.id.upper()

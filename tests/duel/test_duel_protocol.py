"""The Socratic Duel's rules and outcomes, checked on the pure state machine."""

from __future__ import annotations

import json

import pytest
from duel_helpers import ALICE, BOB, CLOSED, CONFIG, SOURCE, T1, T2, T3, T4, T5, T6, TURNS, simple_turn
from pydantic import ValidationError

from moot.errors import ProtocolViolationError
from moot.protocols.duel.machine import (
    RULES,
    DuelConclusion,
    DuelProtocol,
    DuelReply,
    DuelState,
    DuelTurn,
    OutcomeName,
    Stance,
    SupportKind,
    UnresolvedItem,
    check_conclusion,
    classify_support,
    computed_outcome,
    draft_conclusion,
    normalise_claim,
)


def protocol(max_turns: int = 6) -> DuelProtocol:
    return DuelProtocol(CONFIG.model_copy(update={"max_turns": max_turns}), [ALICE, BOB])


def play(turns: list[DuelTurn], max_turns: int = 6) -> tuple[DuelProtocol, DuelState]:
    duel = protocol(max_turns)
    state = duel.initial_state()
    for turn in turns:
        state, _ = duel.step(state, turn)
    return duel, state


def refused(duel: DuelProtocol, state: DuelState, turn: DuelTurn) -> set[str]:
    with pytest.raises(ProtocolViolationError) as caught:
        duel.step(state, turn)
    return {v.rule for v in caught.value.violations}


def test_every_rule_id_has_the_prefix_and_a_summary() -> None:
    for rule in RULES:
        assert rule.id.startswith("DUEL_") and rule.id.isupper() and rule.summary


def test_the_hand_written_duel_ends_in_accepted_consensus() -> None:
    duel = protocol()
    replay = duel.replay(TURNS)
    assert replay.violations == []
    outcome = duel.outcome(replay.state)
    assert outcome is not None and outcome.name == "ACCEPTED_CONSENSUS" and outcome.consensus
    assert duel.summary(replay.state).next_speaker is None


def test_candidate_convergence_is_reported_while_the_duel_stays_open() -> None:
    duel, state = play(TURNS[:4])
    summary = duel.summary(state)
    assert summary.detail["candidate_convergence"] is True
    assert summary.detail["consensus"] is False
    assert summary.outcome is None and summary.status == "open"
    assert summary.next_speaker == "alice"


def test_one_accepting_participant_is_not_consensus() -> None:
    duel, state = play(TURNS[:5])
    assert duel.outcome(state) is None
    assert duel.summary(state).detail["candidate_convergence"] is True


def test_both_latest_turns_accepting_is_accepted_consensus() -> None:
    duel, state = play(TURNS)
    summary = duel.summary(state)
    assert summary.status == "ACCEPTED_CONSENSUS"
    assert summary.outcome is not None and summary.outcome.consensus


@pytest.mark.parametrize(
    ("repeat", "source_turn"),
    [
        (T1.novel_argument, 1),
        ("a PER TENANT minimum share bounds the worst case hit rate of quiet tenants without giving up pooling", 1),
        # near-verbatim: one word dropped from a sixteen-word claim
        ("A per-tenant minimum share bounds the worst-case hit rate of quiet tenants without giving pooling.", 1),
        # a whole sentence of an earlier position
        ("Per-tenant caches are simpler to reason about and to bill", 2),
        # an earlier counterpoint's claim
        ("A floor still leaks timing information between tenants through shared eviction.", 2),
    ],
)
def test_a_repeated_novel_argument_is_refused(repeat: str, source_turn: int) -> None:
    duel, state = play([T1, T2])
    with pytest.raises(ProtocolViolationError) as caught:
        duel.step(state, T3.model_copy(update={"novel_argument": repeat}))
    [violation] = [v for v in caught.value.violations if v.rule == "DUEL_NOVEL_REPEAT"]
    assert f"turn {source_turn}" in violation.message


def test_a_new_argument_on_the_same_subject_is_not_a_repeat() -> None:
    duel, state = play([T1, T2])
    fresh = "Quiet tenants benefit most from a floor because their keys are evicted first under pressure."
    duel.step(state, T3.model_copy(update={"novel_argument": fresh}))


def test_normalise_claim_ignores_case_punctuation_and_spacing() -> None:
    assert normalise_claim("  Caching,   helps!\n(a lot) ") == normalise_claim("caching helps a lot")


def test_turn_seven_is_refused() -> None:
    stances = ["OPEN_TO_DEBATE", "OPEN_TO_DEBATE", "REVISING", "REVISING", "CONVERGING", "REVISING"]
    turns = [
        simple_turn(n, stance, f"Claim number {n} is about a distinct aspect {n * 7} of caching.", revision="Turn 1")
        for n, stance in enumerate(stances, start=1)
    ]
    duel, state = play(turns)
    outcome = duel.outcome(state)
    assert outcome is not None and outcome.name == "MAX_TURNS"
    seventh = simple_turn(7, "REVISING", "A seventh claim nobody made before.", revision="Turn 5")
    assert refused(duel, state, seventh) == {"DUEL_MAX_TURNS"}


def test_max_turns_is_configurable() -> None:
    turns = [simple_turn(n, "OPEN_TO_DEBATE", f"Distinct claim {n} about the cache {n * 11}.") for n in (1, 2, 3, 4)]
    duel, state = play(turns, max_turns=4)
    outcome = duel.outcome(state)
    assert outcome is not None and outcome.name == "MAX_TURNS"
    assert "DUEL_MAX_TURNS" in refused(duel, state, simple_turn(5, "OPEN_TO_DEBATE", "Fifth distinct claim here."))


def test_last_turn_with_a_blocking_item_ends_in_dissent_not_max_turns() -> None:
    turns = [
        simple_turn(1, "OPEN_TO_DEBATE", "First claim about caching."),
        simple_turn(2, "OPEN_TO_DEBATE", "Second."),
    ]
    turns[1] = simple_turn(2, "OPEN_TO_DEBATE", "Second claim about billing.", blocking=True)
    outcome = computed_outcome(CONFIG.model_copy(update={"max_turns": 2}), turns)
    assert outcome is not None and outcome.name == "DISSENT"


def test_a_single_dissenting_turn_does_not_end_the_duel() -> None:
    duel, state = play([T1, T2])
    assert duel.outcome(state) is None
    assert duel.next_speaker(state) == "alice"


def test_both_latest_turns_dissenting_end_in_dissent() -> None:
    third = simple_turn(3, "DISSENTING", "The shared pool must stay; separate caches waste memory.", revision="Turn 2")
    duel, state = play([T1, T2, third])
    outcome = duel.outcome(state)
    assert outcome is not None and outcome.name == "DISSENT" and not outcome.consensus
    later = simple_turn(4, "REVISING", "Another claim about budgets.", revision="Turn 3")
    assert refused(duel, state, later) == {"DUEL_AFTER_TERMINAL"}


def test_stance_change_without_support_is_refused() -> None:
    duel, state = play([T1, T2])
    assert refused(duel, state, T3.model_copy(update={"stance_revision_support": []})) == {
        "DUEL_STANCE_REVISION_SUPPORT"
    }
    unsupported = T3.model_copy(update={"stance_revision_support": ["I changed my mind."]})
    assert refused(duel, state, unsupported) == {"DUEL_STANCE_REVISION_SUPPORT"}
    duel.step(state, T3)  # the same turn with its cited support is accepted


def test_keeping_the_stance_needs_no_revision_support() -> None:
    duel, state = play([T1, T2])
    same = T3.model_copy(update={"stance": "OPEN_TO_DEBATE", "stance_revision_support": []})
    duel.step(state, same)


def test_accepting_consensus_with_a_blocking_item_is_refused() -> None:
    duel, state = play(TURNS[:4])
    blocked = T5.model_copy(update={"unresolved": [UnresolvedItem(text="Benchmarks are missing", blocking=True)]})
    assert refused(duel, state, blocked) == {"DUEL_CONSENSUS_UNRESOLVED"}


def test_accepting_consensus_without_evidence_is_refused() -> None:
    duel, state = play(TURNS[:4])
    bare = T5.model_copy(
        update={
            "counterpoints": [T5.counterpoints[0].model_copy(update={"support": []})],
            "novel_support": [],
        }
    )
    assert "DUEL_CONSENSUS_EVIDENCE" in refused(duel, state, bare)


def test_alternation_numbering_and_participants() -> None:
    duel, state = play([T1])
    assert "DUEL_ALTERNATION" in refused(duel, state, T3.model_copy(update={"number": 2}))
    assert refused(duel, state, T2.model_copy(update={"number": 3})) == {"DUEL_TURN_NUMBER"}
    carol = T2.model_copy(update={"participant": "carol"})
    assert refused(duel, state, carol) == {"DUEL_PARTICIPANTS", "DUEL_PARTICIPANT_UNLISTED"}
    other_model = T2.model_copy(update={"model": "gpt-4o"})
    assert refused(duel, state, other_model) == {"DUEL_PARTICIPANT_UNLISTED"}


def test_a_third_author_is_refused_even_without_a_participants_table() -> None:
    duel = DuelProtocol(CONFIG)
    state = duel.replay([T1, T2]).state
    assert refused(duel, state, T3.model_copy(update={"participant": "carol"})) == {"DUEL_PARTICIPANTS"}


def test_required_sections_must_not_be_empty() -> None:
    duel, state = play([])
    empty = T1.model_copy(update={"position": " ", "agreements": [], "unresolved": []})
    assert refused(duel, state, empty) == {"DUEL_SECTION_EMPTY"}
    with pytest.raises(ProtocolViolationError) as caught:
        duel.step(state, empty)
    sections = " ".join(v.message for v in caught.value.violations)
    assert "Position" in sections and "Agreements" in sections and "Unresolved Items" in sections


def test_counterpoints_need_a_target_and_support() -> None:
    duel, state = play([])
    point = T1.counterpoints[0]
    assert refused(
        duel, state, T1.model_copy(update={"counterpoints": [point.model_copy(update={"addresses": ""})]})
    ) == {"DUEL_COUNTERPOINT_FIELDS"}
    assert refused(
        duel, state, T1.model_copy(update={"counterpoints": [point.model_copy(update={"support": []})]})
    ) == {"DUEL_COUNTERPOINT_SUPPORT"}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("https://example.org/paper", SupportKind.URL),
        ("See [the RFC](https://www.rfc-editor.org/rfc/rfc9110)", SupportKind.URL),
        (f'`{SOURCE}` §Eviction, line 42: "one LRU"', SupportKind.SOURCE),
        ("cache-design.md line 3", SupportKind.SOURCE),
        ('§Goals: "isolation first"', SupportKind.SOURCE),
        ("Turn 2", SupportKind.TURN),
        ("Debate artifact Turn 3, Counterpoints", SupportKind.TURN),
        ("Principle: least privilege.", SupportKind.PRINCIPLE),
        ("principle: fail closed", SupportKind.PRINCIPLE),
        ("Principle:", SupportKind.UNKNOWN),
        ("my years of experience", SupportKind.UNKNOWN),
        ("", SupportKind.UNKNOWN),
    ],
)
def test_classify_support(text: str, kind: SupportKind) -> None:
    assert classify_support(text, SOURCE) is kind


@pytest.mark.parametrize(
    "evidence",
    [
        f"`{SOURCE}` says so",  # the path, but no heading, line or excerpt
        '§Eviction, line 42: "one global LRU"',  # a locator, but not the path
        "cache-design.md line 42",  # only the file name
    ],
)
def test_source_evidence_must_cite_the_path_with_a_locator(evidence: str) -> None:
    duel, state = play([])
    turn = T1.model_copy(update={"novel_support": [T1.novel_support[0].of(evidence, SOURCE)]})
    assert refused(duel, state, turn) == {"DUEL_SOURCE_CITATION"}


@pytest.mark.parametrize("quoted", [f'`{SOURCE}` "one global LRU list"', f"{SOURCE}:42", f"{SOURCE} heading Eviction"])
def test_any_one_locator_is_enough(quoted: str) -> None:
    duel, state = play([])
    duel.step(state, T1.model_copy(update={"novel_support": [T1.novel_support[0].of(quoted, SOURCE)]}))


def test_turn_references_must_name_earlier_turns() -> None:
    duel, state = play([T1])
    future = T2.model_copy(update={"novel_support": [T2.novel_support[0].of("Turn 4", SOURCE)]})
    assert refused(duel, state, future) == {"DUEL_TURN_REFERENCE"}


def test_unknown_stance_is_refused() -> None:
    duel, state = play([])
    assert refused(duel, state, T1.model_copy(update={"stance": "AGREEING"})) == {"DUEL_STANCE"}


def test_drafted_conclusion_agrees_with_the_turns() -> None:
    conclusion = draft_conclusion(CONFIG, TURNS, closed_at=CLOSED)
    assert conclusion.outcome == "ACCEPTED_CONSENSUS" and conclusion.candidate_convergence is True
    assert SOURCE in conclusion.summary and CONFIG.topic in conclusion.summary
    assert check_conclusion(CONFIG, TURNS, conclusion) == []
    with pytest.raises(ValueError, match="still open"):
        draft_conclusion(CONFIG, TURNS[:2], closed_at=CLOSED)


def test_consensus_recorded_while_the_turns_are_not_both_accepting_is_inconsistent() -> None:
    claimed = draft_conclusion(CONFIG, TURNS, closed_at=CLOSED)
    found = check_conclusion(CONFIG, TURNS[:5], claimed)
    assert [v.rule for v in found] == ["DUEL_CONCLUSION_INCONSISTENT"]
    assert "ACCEPTED_CONSENSUS" in found[0].message


def test_timeout_is_only_consistent_while_the_turns_are_open() -> None:
    timeout = draft_conclusion(CONFIG, [T1], closed_at=CLOSED, outcome=OutcomeName.TIMEOUT, reason="bob left")
    assert check_conclusion(CONFIG, [T1], timeout) == []
    late = timeout.model_copy(update={"candidate_convergence": True})
    assert [v.rule for v in check_conclusion(CONFIG, TURNS, late)] == ["DUEL_CONCLUSION_INCONSISTENT"]


def test_invalidated_may_be_recorded_at_any_point() -> None:
    for turns in ([], TURNS[:3], TURNS):
        invalid = draft_conclusion(CONFIG, turns, closed_at=CLOSED, outcome=OutcomeName.INVALIDATED, reason="lock lost")
        assert check_conclusion(CONFIG, turns, invalid) == []


def test_conclusion_fields_must_be_present() -> None:
    bare = DuelConclusion(outcome="WON", closed_at="", candidate_convergence=None, reason="", summary="done")
    messages = [v.message for v in check_conclusion(CONFIG, TURNS, bare)]
    assert {v.rule for v in check_conclusion(CONFIG, TURNS, bare)} == {"DUEL_CONCLUSION_FIELDS"}
    for field in ("Outcome", "Closed At", "Candidate Convergence", "Reason", "source", "topic"):
        assert any(field in m for m in messages), field


def test_conclusion_convergence_must_match_the_turns() -> None:
    wrong = draft_conclusion(CONFIG, TURNS, closed_at=CLOSED).model_copy(update={"candidate_convergence": False})
    assert [v.rule for v in check_conclusion(CONFIG, TURNS, wrong)] == ["DUEL_CONCLUSION_INCONSISTENT"]


def test_recorded_timeout_is_the_outcome_and_ends_the_duel() -> None:
    duel, state = play([T1])
    timeout = draft_conclusion(CONFIG, [T1], closed_at=CLOSED, outcome=OutcomeName.TIMEOUT, reason="bob left")
    state = duel.conclude(state, timeout)
    assert duel.summary(state).status == "TIMEOUT"
    assert refused(duel, state, T2) == {"DUEL_AFTER_TERMINAL"}
    with pytest.raises(ProtocolViolationError):
        duel.conclude(state, timeout)


def test_reply_schema_is_plain_and_its_stances_match_the_protocol() -> None:
    schema = DuelReply.model_json_schema()
    assert "anyOf" not in json.dumps(schema) and "oneOf" not in json.dumps(schema)
    assert schema["properties"]["stance"]["enum"] == [s.value for s in Stance]
    assert "number" not in schema["properties"] and "participant" not in schema["properties"]


def test_reply_becomes_a_valid_turn() -> None:
    reply = DuelReply(
        stance="OPEN_TO_DEBATE",
        position="  The shared cache is sound.\n\nBut eviction needs a floor.  ",
        counterpoints=[
            {"addresses": "source section §Eviction", "claim": "One LRU\nfor all", "support": [f"`{SOURCE}` line 42"]}
        ],
        agreements=["Pooling saves memory."],
        novel_argument="A per-tenant floor bounds the worst case.",
        novel_support=["Principle: bound the worst case."],
        unresolved=[{"text": "Floor size", "blocking": False}],
        stance_revision_support=[],
    )
    turn = reply.to_turn(
        number=1, participant="alice", harness="claude-code", model="claude-opus-4", source_path=SOURCE
    )
    assert turn.position == "The shared cache is sound.\n\nBut eviction needs a floor."
    assert turn.counterpoints[0].claim == "One LRU for all"
    assert turn.counterpoints[0].support[0].kind is SupportKind.SOURCE
    protocol().step(protocol().initial_state(), turn)
    with pytest.raises(ValidationError):
        DuelReply.model_validate({**reply.model_dump(), "stance": "AGREEING"})


def test_turns_are_frozen() -> None:
    with pytest.raises(ValidationError):
        T1.stance = "DISSENTING"


def test_every_turn_of_the_hand_written_duel_is_individually_legal() -> None:
    duel = protocol()
    state = duel.initial_state()
    for turn in (T1, T2, T3, T4, T5, T6):
        assert duel.validate(state, turn) == []
        state = duel.apply(state, turn)

"""Conformity metrics on hand-built positions and records whose every change is known in advance."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from moot.conformity import conformity_json
from moot.metrics import (
    CORRECT_TO_INCORRECT,
    CORRECT_TO_UNREADABLE,
    INCORRECT_TO_CORRECT,
    UNREADABLE,
    FlipTally,
    Stated,
    answers_by_round,
    conformity,
    flip_tally,
    present_then_lost,
)
from moot.protocols.agora.analysis import backed_and_signals
from moot.protocols.agora.machine import AgoraTurn, Evidence
from moot.protocols.council.analysis import stages
from moot.protocols.duel import analysis as duel
from moot.protocols.duel.analysis import stances
from moot.protocols.duel.machine import DuelTurn

EXAMPLES = Path(__file__).parents[1]


def test_turn_by_turn_changes_direction_and_support() -> None:
    # ann opens on X; bob and cy open on Y; then bob moves to X with evidence, cy moves to X without,
    # and ann (first speaker) moves to Z.
    stated = [
        Stated("ann", "X", 1),
        Stated("bob", "Y", 2),
        Stated("cy", "Y", 3),
        Stated("bob", "X", 4, supported=True, turn=4),
        Stated("cy", "X", 5, supported=False, turn=5),
        Stated("ann", "Z", 6, supported=False, turn=6),
    ]
    result = conformity(stated)
    assert result.first_speaker == "ann"
    assert result.positions == {"ann": ["X", "Z"], "bob": ["Y", "X"], "cy": ["Y", "X"]}
    bob, cy, ann = result.changes
    # bob's view: ann X, cy Y -> a tie, so no majority; X is the first speaker's position.
    assert (bob.participant, bob.before, bob.after, bob.turn) == ("bob", "Y", "X", 4)
    assert bob.toward_first_speaker and not bob.toward_majority and bob.supported is True
    # cy's view: ann X, bob X -> majority X, also the first speaker's.
    assert cy.toward_first_speaker and cy.toward_majority and cy.supported is False
    # the first speaker never moves toward itself; Z is nobody's position.
    assert not ann.toward_first_speaker and not ann.toward_majority
    assert result.unsupported == 2
    assert (result.initial_distinct, result.final_distinct, result.collapsed) == (2, 2, False)
    assert result.anchoring == 1.0  # both others opened on Y and ended on ann's opening X
    assert all(c.toward_chairman is None for c in result.changes)  # no chairman


def test_chairman_direction_and_collapse_to_one_position() -> None:
    stated = [
        Stated("chair", "A", 1),
        Stated("p1", "B", 1),
        Stated("p2", "C", 1),
        Stated("p1", "A", 2),
        Stated("p2", "B", 2),
        Stated("p2", "A", 3),
    ]
    result = conformity(stated, chairman="chair")
    assert result.first_speaker is None and result.anchoring is None  # a sealed opening has no first speaker
    p1, p2_first, p2_second = result.changes
    assert p1.toward_chairman is True
    # p2's second-step view is the first step's (sealed): p1 was still on B, so B was no majority (tie) ...
    assert p2_first.after == "B" and p2_first.toward_chairman is False and not p2_first.toward_majority
    # ... and at step 3 both others hold A.
    assert p2_second.toward_chairman is True and p2_second.toward_majority is True
    assert (result.initial_distinct, result.final_distinct, result.collapsed) == (3, 1, True)
    assert result.to_json()["toward_chairman"] == 2


def test_known_answer_flips_in_eval_rounds() -> None:
    rounds = [
        {"a1": "7", "a2": "9", "a3": None},
        {"a1": "9", "a2": "9", "a3": "7"},  # a1 correct->incorrect; a3 from unreadable to the right answer
        {"a1": "7", "a2": "7", "a3": None},  # a1 and a2 incorrect->correct; a3 correct->unreadable
    ]
    result = answers_by_round(rounds, answer="7")
    assert result.flips(CORRECT_TO_INCORRECT) == 1
    assert result.flips(INCORRECT_TO_CORRECT) == 3
    assert result.flips(CORRECT_TO_UNREADABLE) == 1  # a right answer that became unreadable is lost too
    a1_first, a1_second = result.changes_of("a1")
    assert a1_first.flip == CORRECT_TO_INCORRECT and not a1_first.toward_majority  # round 0: a2 9, a3 unreadable
    assert a1_second.flip == INCORRECT_TO_CORRECT and not a1_second.toward_majority  # round 1: a2 9, a3 7 tie
    assert result.positions["a3"] == [UNREADABLE, "7", UNREADABLE]
    data = result.to_json()
    assert (data["correct_to_incorrect"], data["incorrect_to_correct"], data["correct_to_unreadable"]) == (1, 3, 1)
    assert data["participants"]["a2"] == {"positions": ["9", "9", "7"], "changes": 1}
    assert answers_by_round(rounds).to_json()["correct_to_incorrect"] is None  # no known answer, no flips


def test_flip_rates_have_denominators_and_leave_out_what_a_reviewer_could_not_keep() -> None:
    # A council: m1 alone was right; reviewing, it may only rank the others' answers (both 9): unavoidable.
    # m2 was shown m1's 7 and m3's 9 and ranked 9 first: it kept its answer. m3 ranked m1's 7 first: a flip.
    rounds = [
        {"m1": ("7", None), "m2": ("9", None), "m3": ("9", None)},
        {"m1": ("9", ["9", "9"]), "m2": ("9", ["7", "9"]), "m3": ("7", ["7", "9"])},
        {"m1": ("9", None)},  # the chairman's synthesis
    ]
    tallies = flip_tally(rounds, "7")
    assert (tallies["m1"].unavoidable, tallies["m1"].from_correct, tallies["m1"].correct_to_incorrect) == (1, 0, 0)
    assert (tallies["m1"].from_other, tallies["m1"].incorrect_to_correct) == (1, 0)  # 9 -> 9 in the synthesis
    assert (tallies["m3"].from_other, tallies["m3"].incorrect_to_correct) == (1, 1)
    total = FlipTally()
    for tally in tallies.values():
        total.add(tally)
    data = total.to_json()
    assert (data["incorrect_to_correct"], data["from_other"], data["incorrect_to_correct_rate"]) == (1, 3, 1 / 3)
    assert data["correct_to_incorrect_rate"] is None  # no answer was restated after a right one
    assert present_then_lost(rounds, "7", final="9") is True
    assert present_then_lost(rounds, "5", final="9") is None


def _duel_turn(number: int, who: str, stance: str, revision: list[str]) -> DuelTurn:
    return DuelTurn(
        number=number,
        participant=who,
        harness="h",
        model="m",
        stance=stance,
        position="p",
        novel_argument="n",
        stance_revision_support=revision,
    )


def test_duel_stance_changes_are_supported_by_stance_revision_support() -> None:
    turns = [
        _duel_turn(1, "alice", "OPEN_TO_DEBATE", []),
        _duel_turn(2, "bob", "DISSENTING", []),
        _duel_turn(3, "alice", "DISSENTING", []),  # a change without Stance Revision Support
        _duel_turn(4, "bob", "CONVERGING", ["Turn 3"]),
    ]
    result = conformity(stances(turns))
    alice, bob = result.changes
    assert alice.supported is False and alice.toward_majority  # toward bob's DISSENTING
    assert bob.supported is True and not bob.toward_first_speaker
    assert result.unsupported == 1


def _agora(number: int, role: str, signal: str, target: str | None = None, evidence: bool = False) -> AgoraTurn:
    facts = (Evidence(source="s", content="c", confidence=0.9),) if evidence else ()
    proposal = f"proposal-{role}" if signal == "propose" else None
    return AgoraTurn(
        number=number,
        role=role,
        signal=signal,  # type: ignore[arg-type]
        message="m",
        confidence=0.5,
        target=target,
        evidence=facts,
        proposal_id=proposal,
    )


def test_agora_backed_proposal_and_signal_positions() -> None:
    turns = [
        _agora(1, "pro", "propose"),
        _agora(2, "con", "propose"),
        _agora(3, "mediator", "propose"),  # left out: the mediator's signals do not count
        _agora(4, "pro", "counter", "turn-2"),
        _agora(5, "con", "approve", "turn-1", evidence=True),  # turn-1 is pro's proposal
    ]
    backed, signals = backed_and_signals(turns)
    proposal = conformity(backed)
    assert proposal.positions == {"pro": ["proposal-pro"], "con": ["proposal-con", "proposal-pro"]}
    (change,) = proposal.changes
    assert change.toward_first_speaker and change.toward_majority and change.supported is True
    assert proposal.anchoring == 1.0 and proposal.collapsed
    signal = conformity(signals)
    assert signal.positions == {"pro": ["propose", "counter"], "con": ["propose", "approve"]}
    assert [c.supported for c in signal.changes] == [False, True]


def test_records_without_positions_have_no_conformity(tmp_path: Path) -> None:
    assert conformity_json(EXAMPLES / "critique/examples/valid/planning-done.md") == {}  # no analysis hook
    assert conformity_json(EXAMPLES / "roundtable/examples/valid/closed-on-consensus") == {}
    broken = tmp_path / "broken.md"
    broken.write_text("not a duel", encoding="utf-8")
    assert conformity_json(broken) == {}  # not a record
    assert duel.ANALYSIS.positions is not None and duel.ANALYSIS.positions(broken) == []  # the hook is total


def test_numeric_positions_compare_by_value() -> None:
    # Three estimates: 3 and 3.0 are one position, so ann keeps hers; bob moves to the majority's 3.
    stated = [
        Stated("ann", 3, 1),
        Stated("bob", 5.5, 1),
        Stated("cy", 3.0, 1),
        Stated("ann", 3.0, 2),
        Stated("bob", 3, 2, supported=False),
    ]
    result = conformity(stated, answer=3)
    (bob,) = result.changes
    assert (bob.participant, bob.before, bob.after) == ("bob", 5.5, 3)
    assert bob.toward_majority is True and bob.flip == INCORRECT_TO_CORRECT
    assert (result.initial_distinct, result.final_distinct, result.collapsed) == (2, 1, True)
    data = json.loads(json.dumps(result.to_json()))
    assert data["participants"]["bob"]["positions"] == [5.5, 3]  # numbers stay numbers in JSON
    assert conformity([Stated("ann", "3", 1), Stated("ann", 3, 2)]).changes  # a text and a number differ


def _moot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "moot", *args], capture_output=True, text=True, timeout=120)


def test_show_json_and_text_carry_the_metrics_of_a_real_duel(tmp_path: Path) -> None:
    record = tmp_path / "duel.md"
    shutil.copy(EXAMPLES / "duel/examples/valid/consensus-six-turns.md", record)
    done = _moot("show", str(record), "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["verdict"] == "valid"
    stance = shown["conformity"]["stance"]
    # alice OPEN -> CONVERGING -> ACCEPTING; bob DISSENTING -> CONVERGING -> ACCEPTING, each time toward alice.
    assert stance["participants"]["alice"]["changes"] == 2 and stance["participants"]["bob"]["changes"] == 2
    assert stance["toward_first_speaker"] == 2 and stance["unsupported_changes"] == 0
    assert (stance["initial_distinct"], stance["final_distinct"], stance["collapsed"]) == (2, 1, True)
    text = _moot("show", str(record), "--plain")
    assert "conformity: stance" in text.stdout and "position changes: 4 (alice 2, bob 2)" in text.stdout


@pytest.mark.parametrize("name", ["mediator-compromise.md"])
def test_show_json_of_an_agora_debate(tmp_path: Path, name: str) -> None:
    record = tmp_path / name
    shutil.copy(EXAMPLES / "agora/examples/valid" / name, record)
    done = _moot("show", str(record), "--json")
    assert done.returncode == 0, done.stderr
    proposal = json.loads(done.stdout)["conformity"]["proposal"]
    # tabs and spaces each propose, then both approve the mediator's compromise.
    assert proposal["participants"]["tabs"]["positions"] == ["proposal-tabs", "proposal-mediator"]
    assert proposal["participants"]["spaces"]["positions"] == ["proposal-spaces", "proposal-mediator"]
    assert proposal["toward_majority"] == 1 and proposal["collapsed"] is True


def test_council_positions_from_answers_to_reviews_to_the_synthesis() -> None:
    # m1 chairs. Answers: m1 7, m2 9, m3 9, m4 none. Reviews: m1 ranks 9 first, m2 ranks 7 first, m3 ranks 9
    # first (its own answer again, no change). The chairman adopts 7.
    answers = {"m1": "7", "m2": "9", "m3": "9", "m4": None}
    firsts = {"m1": "9", "m2": "7", "m3": "9"}
    result = conformity(stages(answers, firsts, "m1", "7"), chairman="m1", answer="7")
    m1_review, m2_review, m1_synthesis = result.changes
    assert (m1_review.participant, m1_review.before, m1_review.after) == ("m1", "7", "9")
    assert m1_review.toward_majority and m1_review.toward_chairman is False  # the chairman's own change
    assert m1_review.flip == CORRECT_TO_INCORRECT
    # m2 moves to the chairman's answer against the majority of the others (m1 7, m3 9: a tie, no majority).
    assert (m2_review.after, m2_review.toward_chairman, m2_review.toward_majority) == ("7", True, False)
    assert m2_review.flip == INCORRECT_TO_CORRECT
    # The synthesis: the chairman from the 9 it ranked first back to 7, m2's last position (no majority: m2 7, m3 9).
    assert (m1_synthesis.step, m1_synthesis.after, m1_synthesis.toward_majority) == (3, "7", False)
    assert result.positions == {"m1": ["7", "9", "7"], "m2": ["9", "7"], "m3": ["9", "9"]}
    assert (result.initial_distinct, result.final_distinct, result.collapsed) == (2, 2, False)
    assert result.to_json()["toward_chairman"] == 1
    # No quorum: only the answers are positions.
    alone = conformity(stages(answers, {}, "m1", None), chairman="m1")
    assert alone.changes == [] and alone.positions == {"m1": ["7"], "m2": ["9"], "m3": ["9"]}


def test_show_json_of_a_council_follows_each_member_to_the_answer_it_ranked_first(tmp_path: Path) -> None:
    record = tmp_path / "council.md"
    shutil.copy(EXAMPLES / "council/examples/valid/synthesized-three-members.md", record)
    done = _moot("show", str(record), "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["conformity"]["answer"]
    # gpt ranks claude first, claude and smol rank gpt first; the separate chairman adopts gpt, ranked first.
    assert answer["participants"]["gpt"]["positions"] == ["gpt", "claude"]
    assert answer["participants"]["smol"]["positions"] == ["smol", "gpt"]
    assert answer["participants"]["chairman"] == {"positions": ["gpt"], "changes": 0}
    assert answer["chairman"] == "chairman" and answer["total_changes"] == 3
    assert answer["toward_majority"] == 0  # in the sealed stage 2 everyone's view held three different answers
    assert (answer["initial_distinct"], answer["final_distinct"], answer["collapsed"]) == (3, 2, True)
    assert answer["unsupported_changes"] == 0  # every valid review gives its reasons


def test_run_json_carries_the_conformity_that_show_reports(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("# Caching\n\nUse one shared cache for all tenants.\n", encoding="utf-8")
    agent = f"cmd:{sys.executable} {EXAMPLES / 'reliability' / 'protocol_agent.py'}"
    run = subprocess.run(
        [sys.executable, "-m", "moot", "run", "duel", "doc.md", "--agents", agent, "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    stance = report["conformity"]["stance"]
    assert stance["total_changes"] >= 1 and stance["final_distinct"] == 1 and stance["collapsed"] is True
    shown = _moot("show", str(tmp_path / report["artifact"]), "--json")
    assert json.loads(shown.stdout)["conformity"] == report["conformity"]

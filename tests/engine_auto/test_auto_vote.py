"""The vote's count as the machine makes it: which short answers are one answer, and what each tally decides."""

from __future__ import annotations

import pytest

from moot.protocols.auto.machine import ESCALATED, NO_QUORUM, VOTED, AutoConfig, decide, normalise, verdict_of
from moot.protocols.council.machine import Answer, Member


@pytest.mark.parametrize(
    "same",
    [
        ("12", "12.0", "$12", " 12. ", "**12**"),
        ("1200", "1,200", "1200.00", "$1,200"),
        ("Yes", "yes.", "YES!", "'yes'"),
        ("Option B", "option  b", "option b."),
    ],
)
def test_answers_that_say_the_same_count_as_one(same: tuple[str, ...]) -> None:
    assert len({normalise(answer) for answer in same}) == 1


@pytest.mark.parametrize(("one", "other"), [("12", "13"), ("12", "12.5"), ("yes", "no"), ("12", "12 apples")])
def test_different_answers_stay_apart(one: str, other: str) -> None:
    assert normalise(one) != normalise(other)


def answers(*verdicts: str | None) -> list[Answer]:
    names = ["ada", "bo", "cy", "di"]
    return [
        Answer(member=names[i], text=f"Because.\n\nFinal answer: {v}")
        if v is not None
        else Answer(member=names[i], failure="it crashed")
        for i, v in enumerate(verdicts)
    ]


def config(n: int, threshold: str = "1", quorum: int = 2) -> AutoConfig:
    members = tuple(Member(name=name, model="local") for name in ["ada", "bo", "cy", "di"][:n])
    return AutoConfig(question="Q?", members=members, chairman="ada", seed=1, threshold=threshold, quorum=quorum)


def test_the_short_answer_is_the_last_line() -> None:
    assert verdict_of("I think 12.\n\nFinal answer: 12") == "12"
    assert verdict_of("Final answer: 12\n\nOn reflection, 13.") is None


@pytest.mark.parametrize(
    ("verdicts", "threshold", "quorum", "decision"),
    [
        (("12", "12", "12"), "1", 2, VOTED),
        (("12", "12", "13"), "1", 2, ESCALATED),
        (("12", "12", "13"), "2/3", 2, VOTED),  # exactly two thirds: no rounding decides it
        (("12", "12", "13"), "0.67", 2, ESCALATED),  # 0.667 is below 0.67
        (("12", "12", "13", "13"), "0.5", 2, ESCALATED),  # a tie for the most votes never decides
        (("12", "12", None), "1", 2, VOTED),  # a failed member is not counted
        (("12", None, None), "1", 2, NO_QUORUM),
        (("12", "12", None), "1", 3, NO_QUORUM),  # the quorum counts valid answers, agreeing or not
    ],
)
def test_the_tally_decides(verdicts: tuple[str | None, ...], threshold: str, quorum: int, decision: str) -> None:
    vote = decide(config(len(verdicts), threshold, quorum), answers(*verdicts))
    assert vote.decision == decision, vote.reason

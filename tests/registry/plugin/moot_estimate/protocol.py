"""Estimate's rules as a pure state machine (no I/O, no clock)."""

from __future__ import annotations

import math
import statistics

from pydantic import BaseModel, ConfigDict, Field

from moot.plugin import DeliberationProtocol, Outcome, Rule, RuleBook, Summary, Violation

RULES = RuleBook(
    [
        Rule(
            "ESTIMATE_ORDER", "Each estimator gives one estimate a round, and a round starts when the one before ends."
        ),
        Rule("ESTIMATE_NUMBER", "An estimate is a finite number with a reason."),
        Rule("ESTIMATE_AFTER_END", "No estimate after the last round."),
    ]
)


class Config(BaseModel):
    model_config = ConfigDict(frozen=True)

    question: str
    estimators: tuple[str, ...] = Field(min_length=2)
    rounds: int = Field(default=2, ge=1, le=5)


class Estimate(BaseModel):
    model_config = ConfigDict(frozen=True)

    estimator: str
    round: int
    value: float
    reason: str


class Board(BaseModel):
    model_config = ConfigDict(frozen=True)

    estimates: tuple[Estimate, ...] = ()


def number(value: float) -> str:
    """A value as the record and the answer write it: 12, not 12.0."""
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def final(config: Config, estimates: tuple[Estimate, ...]) -> float | None:
    """The median of the last round, once every estimator gave it."""
    if len(estimates) < len(config.estimators) * config.rounds:
        return None
    return statistics.median(e.value for e in estimates[-len(config.estimators) :])


class EstimateProtocol(DeliberationProtocol[Estimate, Board]):
    name = "estimate"
    rules = RULES
    turn_model = Estimate

    def __init__(self, config: Config) -> None:
        self.config = config

    def pending(self, state: Board) -> tuple[tuple[str, ...], int]:
        """The estimators whose estimate the current round still waits for, and the round."""
        names = self.config.estimators
        round_ = len(state.estimates) // len(names) + 1
        given = {e.estimator for e in state.estimates[(round_ - 1) * len(names) :]}
        return tuple(name for name in names if name not in given), round_

    def expected(self, state: Board) -> tuple[str, int]:
        """Who speaks next (the first estimator the round waits for) and in which round."""
        waiting, round_ = self.pending(state)
        return waiting[0], round_

    def initial_state(self) -> Board:
        return Board()

    def next_speaker(self, state: Board) -> str | None:
        return None if self.outcome(state) is not None else self.expected(state)[0]

    def validate(self, state: Board, turn: Estimate) -> list[Violation]:
        if self.outcome(state) is not None:
            return [RULES.violation("ESTIMATE_AFTER_END", "the last round has ended; start a new estimate.")]
        found = []
        waiting, round_ = self.pending(state)
        if turn.estimator not in waiting or turn.round != round_:
            whose = f"{waiting[0]}'s estimate" if len(waiting) == 1 else f"the estimates of {', '.join(waiting)}"
            found.append(RULES.violation("ESTIMATE_ORDER", f"round {round_} waits for {whose}."))
        if not math.isfinite(turn.value) or not turn.reason.strip():
            found.append(RULES.violation("ESTIMATE_NUMBER", "give a finite number and a reason."))
        return found

    def apply(self, state: Board, turn: Estimate) -> Board:
        return Board(estimates=(*state.estimates, turn))

    def outcome(self, state: Board) -> Outcome | None:
        value = final(self.config, state.estimates)
        if value is None:
            return None
        return Outcome(name="ESTIMATED", reason=f"the last round's median is {number(value)}", consensus=True)

    def summary(self, state: Board) -> Summary:
        ended = self.outcome(state)
        return Summary(
            protocol=self.name,
            turns=len(state.estimates),
            next_speaker=self.next_speaker(state),
            round=None if ended else self.expected(state)[1],
            outcome=ended,
        )

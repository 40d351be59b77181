"""Auto: a council that votes first and deliberates only when its members split.

- **Stage 1** is the council's: every member answers the question sealed and in parallel. Each answer
  ends with one line ``Final answer: …`` (at most :data:`VERDICT_CHARS` characters: a number, a choice,
  yes or no, or a short phrase) that the vote counts.
- **The vote** follows stage 1 at once and is written with it. The short answers are normalised
  (:func:`normalise`: case, spacing, quotes and trailing punctuation aside; numbers compared as numbers,
  so ``12``, ``12.0`` and ``$12`` are one answer) and grouped. Agreement is the largest group's share of
  the counted answers. Fewer counted answers than the quorum end the run ``NO_QUORUM``; agreement at or
  above the threshold, with no tie for the most votes, ends it ``VOTED`` with the winning answer;
  anything else ``ESCALATED``: the council's stage 2 (anonymous reviews) and stage 3 (the chairman's
  synthesis) follow over the same sealed answers, and the council's outcome is the run's.
- A tie for the most votes escalates whatever the threshold: a vote names one answer or none.

The threshold is an exact fraction (``1``, ``0.6``, ``2/3``), so that two of three members meet ``2/3``
and no rounding decides a vote. Pure: the answers and the vote arrive as turns.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from moot.core.machine import DeliberationProtocol, Outcome, Rule, RuleBook, Summary
from moot.errors import Violation
from moot.protocols.council.machine import (
    FAILED,
    NO_QUORUM,
    QUORUM,
    Answer,
    ChairmanFailure,
    CouncilConfig,
    CouncilProtocol,
    CouncilState,
    Review,
    Synthesis,
)

NAME = "auto"
VOTED = "VOTED"
ESCALATED = "ESCALATED"
DECISIONS = (VOTED, ESCALATED, NO_QUORUM)
FINAL_ANSWER = "Final answer:"
VERDICT_CHARS = 200
DEFAULT_THRESHOLD = "1"
DEFAULT_QUORUM = QUORUM
_FINAL_LINE = re.compile(rf"^{re.escape(FINAL_ANSWER)}[ \t]*(?P<verdict>\S.*?)\s*$")
_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[+-]?\.\d+")
_CURRENCY = "$€£¥"

RULES = RuleBook(
    [
        Rule(
            "AUTO_HEADER",
            "The header gives the agreement threshold (a fraction above 0 and at most 1, e.g. 1, 0.6 or 2/3); its "
            "quorum is the council's (2 to the number of members).",
        ),
        Rule(
            "AUTO_VERDICT",
            f"Every valid stage-1 answer ends with one line '{FINAL_ANSWER} …' of at most {VERDICT_CHARS} characters.",
        ),
        Rule(
            "AUTO_VOTE_ORDER",
            "The vote follows stage 1 once every member has answered; stage 2 and 3 follow it only when it escalated.",
        ),
        Rule(
            "AUTO_TALLY",
            "The vote's tally, agreement, threshold and quorum are those of the stage-1 answers and the header.",
        ),
        Rule(
            "AUTO_DECISION",
            "The vote's decision follows from its tally: NO_QUORUM below the quorum, VOTED at or above the threshold "
            "with one answer ahead, ESCALATED otherwise.",
        ),
        Rule(
            "AUTO_FORMAT",
            "The vote is a '## Vote' section with its tally, agreement, threshold, quorum, decision and reason as "
            "docs/formats.md shows.",
        ),
        Rule("AUTO_OUTCOME", "The outcome section agrees with the vote and the stages after it."),
    ]
)


# --- configuration and the vote ----------------------------------------------------------------


def threshold_value(text: str) -> Fraction | None:
    """The agreement threshold written as ``text`` (``1``, ``0.67``, ``2/3``); None when it is not one."""
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        return None
    return value if 0 < value <= 1 else None


class AutoConfig(CouncilConfig):
    """The council's header (its quorum is the vote's too) plus the vote's agreement threshold."""

    threshold: str = DEFAULT_THRESHOLD

    def problems(self) -> list[str]:
        found = super().problems()
        if threshold_value(self.threshold) is None:
            found.append(f"the agreement threshold {self.threshold!r} must be a fraction above 0 and at most 1")
        return found


class Vote(BaseModel):
    """The vote over the stage-1 answers, as the record writes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Literal["vote"] = "vote"
    tally: tuple[tuple[str, tuple[str, ...]], ...]  # (normalised answer, members), largest group first
    agreement: str  # as written: "2 of 3 valid answers (0.667)"
    threshold: str
    quorum: int
    decision: str
    reason: str

    @property
    def counted(self) -> int:
        return sum(len(members) for _, members in self.tally)

    @property
    def winner(self) -> tuple[str, tuple[str, ...]] | None:
        return self.tally[0] if self.decision == VOTED and self.tally else None


AutoTurn = Answer | Vote | Review | Synthesis | ChairmanFailure


@dataclass(frozen=True)
class AutoState(CouncilState):
    vote: Vote | None = None


def with_vote(state: CouncilState, vote: Vote | None) -> AutoState:
    """A council state (every field it has) with ``vote``."""
    fields = {field.name: getattr(state, field.name) for field in dataclasses.fields(CouncilState)}
    return AutoState(**fields, vote=vote)


# --- the count -----------------------------------------------------------------------------------


def verdict_of(text: str | None) -> str | None:
    """The short answer an answer's last line states (``Final answer: …``); None without one."""
    lines = [line for line in (text or "").strip().split("\n") if line.strip()]
    match = _FINAL_LINE.match(lines[-1].strip()) if lines else None
    return match["verdict"] if match else None


def normalise(verdict: str) -> str:
    """A short answer as the vote compares it: one spacing, lower case, no wrapping quotes or emphasis, no
    trailing punctuation; a number (with a currency sign or thousands commas) as its plain decimal value."""
    text = " ".join(verdict.split()).strip("\"'`*_ ").rstrip(".!?,;: ").strip("\"'`*_ ")
    bare = text.lstrip(_CURRENCY).strip() if text[:1] in _CURRENCY else text
    if _NUMBER.fullmatch(bare):
        try:
            return format(Decimal(bare.replace(",", "")).normalize(), "f")
        except InvalidOperation:
            pass
    return text.lower()


def tally(config: CouncilConfig, answers: tuple[Answer, ...] | list[Answer]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The valid answers' short answers grouped: largest group first, then by the first holder's place."""
    groups: dict[str, list[str]] = {}
    for answer in answers:
        verdict = verdict_of(answer.text) if answer.valid else None
        if verdict is not None:
            groups.setdefault(normalise(verdict), []).append(answer.member)
    order = {name: index for index, name in enumerate(config.names)}
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), min(order.get(m, len(order)) for m in item[1])))
    return tuple((answer, tuple(members)) for answer, members in ranked)


def agreement_text(groups: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    counted = sum(len(members) for _, members in groups)
    if not counted:
        return "no valid answers"
    top = len(groups[0][1])
    return f"{top} of {counted} valid answers ({top / counted:.3f})"


def decide(config: AutoConfig, answers: tuple[Answer, ...] | list[Answer]) -> Vote:
    """The vote the stage-1 answers give under the configuration's threshold and quorum."""
    groups = tally(config, answers)
    counted = sum(len(members) for _, members in groups)
    threshold = threshold_value(config.threshold) or Fraction(1)
    common = {"tally": groups, "agreement": agreement_text(groups), "threshold": config.threshold}
    if counted < config.quorum:
        reason = f"{counted} valid answer(s) of {len(config.members)}; the quorum is {config.quorum}"
        return Vote(**common, quorum=config.quorum, decision=NO_QUORUM, reason=reason)
    top = len(groups[0][1])
    tied = len(groups) > 1 and len(groups[1][1]) == top
    share = Fraction(top, counted)
    if share >= threshold and not tied:
        reason = f"{top} of {counted} agree on '{groups[0][0]}', at or above the threshold {config.threshold}"
        return Vote(**common, quorum=config.quorum, decision=VOTED, reason=reason)
    if tied:
        reason = f"a tie for the most votes ({top} each); the council deliberates"
    else:
        reason = f"only {top} of {counted} agree, below the threshold {config.threshold}; the council deliberates"
    return Vote(**common, quorum=config.quorum, decision=ESCALATED, reason=reason)


def silent(config: CouncilConfig, state: CouncilState) -> str | None:
    """Who gave no valid answer and why, and how many answered; None when every member did."""
    failed = [a for a in state.answers if not a.valid]
    if not failed:
        return None
    why = "; ".join(f"{a.member}: {a.failure or 'an empty answer'}" for a in failed)
    answered = len(config.members) - len(failed)
    return f"no valid answer from {', '.join(a.member for a in failed)} ({why}); {answered} of {len(config.members)} answered"


# --- the state machine -------------------------------------------------------------------------


class AutoProtocol(DeliberationProtocol[AutoTurn, AutoState]):
    name: ClassVar[str] = NAME
    rules: ClassVar[RuleBook] = RULES
    turn_model: ClassVar[type[BaseModel]] = Answer

    def __init__(self, config: AutoConfig) -> None:
        self.config = config
        self.council = CouncilProtocol(config)

    def initial_state(self) -> AutoState:
        return AutoState()

    def answered(self, state: AutoState) -> bool:
        return len(state.answers) >= len(self.config.members)

    def stage(self, state: AutoState) -> int | None:
        """1 until every member answered and the vote is written; then the council's stage once it escalated."""
        if self.outcome(state) is not None:
            return None
        if not self.answered(state) or state.vote is None:
            return 1
        return self.council.stage(state)

    def pending(self, state: AutoState) -> list[str]:
        """Who still has to act; nobody while only the vote (which no one is asked for) is missing."""
        stage = self.stage(state)
        if stage == 1:
            return self.council.pending(state) if not self.answered(state) else []
        return self.council.pending(state) if stage is not None else []

    def next_speaker(self, state: AutoState) -> str | None:
        pending = self.pending(state)
        return pending[0] if pending else None

    def validate(self, state: AutoState, turn: AutoTurn) -> list[Violation]:
        if isinstance(turn, Vote):
            return self._validate_vote(state, turn)
        if isinstance(turn, Answer):
            found = self.council.validate(state, turn) if state.vote is None else []
            if state.vote is not None:
                found.append(RULES.violation("AUTO_VOTE_ORDER", f"{turn.member} answers after the vote."))
            verdict = verdict_of(turn.text)
            if turn.valid and (verdict is None or len(verdict) > VERDICT_CHARS):
                found.append(
                    RULES.violation(
                        "AUTO_VERDICT",
                        f"{turn.member}'s answer does not end with a line '{FINAL_ANSWER} …' of at most "
                        f"{VERDICT_CHARS} characters.",
                    )
                )
            return found
        if state.vote is None:
            return [RULES.violation("AUTO_VOTE_ORDER", "a review or synthesis comes before the vote.")]
        if state.vote.decision != ESCALATED:
            return [RULES.violation("AUTO_VOTE_ORDER", f"the vote decided ({state.vote.decision}); nothing follows.")]
        return self.council.validate(state, turn)

    def _validate_vote(self, state: AutoState, vote: Vote) -> list[Violation]:
        if not self.answered(state) or state.vote is not None:
            where = "before every member answered" if state.vote is None else "a second time"
            return [RULES.violation("AUTO_VOTE_ORDER", f"the vote is written {where}.")]
        expected = decide(self.config, state.answers)
        found: list[Violation] = []
        if vote.tally != expected.tally or vote.agreement != expected.agreement:
            counted = "; ".join(f"{answer!r}: {', '.join(members)}" for answer, members in expected.tally)
            found.append(
                RULES.violation(
                    "AUTO_TALLY", f"the answers give the tally {counted or 'of nothing'}, {expected.agreement}."
                )
            )
        if vote.threshold != self.config.threshold or vote.quorum != self.config.quorum:
            found.append(
                RULES.violation(
                    "AUTO_TALLY",
                    f"the header's threshold is {self.config.threshold} and its quorum {self.config.quorum}.",
                )
            )
        if vote.decision != expected.decision:
            found.append(
                RULES.violation(
                    "AUTO_DECISION",
                    f"the vote says {vote.decision}, but the answers give {expected.decision}: {expected.reason}.",
                )
            )
        return found

    def apply(self, state: AutoState, turn: AutoTurn) -> AutoState:
        """The state after ``turn``; a turn out of its place is left out, as the council leaves it out."""
        if isinstance(turn, Vote):
            return with_vote(state, turn) if self.answered(state) and state.vote is None else state
        if isinstance(turn, Answer):
            return with_vote(self.council.apply(state, turn), None) if state.vote is None else state
        if state.vote is None or state.vote.decision != ESCALATED:
            return state
        return with_vote(self.council.apply(state, turn), state.vote)

    def failed(self, state: AutoState, reason: str) -> AutoState:
        """The state after a run that could not go on (an agent failed, a budget was spent)."""
        return dataclasses.replace(state, failure=Outcome(name=FAILED, reason=reason))

    def outcome(self, state: AutoState) -> Outcome | None:
        vote = state.vote
        if vote is None:
            return state.failure
        if vote.decision == VOTED:
            degraded = silent(self.config, state)
            return Outcome(name=VOTED, reason=f"a vote: {vote.reason}", consensus=degraded is None, degraded=degraded)
        if vote.decision == NO_QUORUM:
            return Outcome(name=NO_QUORUM, reason=vote.reason)
        return self.council.outcome(state)

    def summary(self, state: AutoState) -> Summary:
        council = self.council.summary(state)
        vote = state.vote
        detail = {
            **council.detail,
            "vote": None if vote is None else vote.decision,
            "tally": [] if vote is None else [[answer, list(members)] for answer, members in vote.tally],
            "threshold": self.config.threshold,
            "quorum": self.config.quorum,
        }
        return council.model_copy(
            update={
                "protocol": NAME,
                "turns": council.turns + (vote is not None),
                "next_speaker": self.next_speaker(state),
                "round": self.stage(state),
                "outcome": self.outcome(state),
                "detail": detail,
            }
        )

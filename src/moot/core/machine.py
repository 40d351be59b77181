"""The shared shape of every protocol: rules with ids, outcomes, and the state machine.

A broken rule is a :class:`moot.errors.Violation`; a refused turn, :class:`moot.errors.ProtocolViolationError`.

A protocol is pure: no I/O, no clock, no randomness. Time and ids arrive inside the turns.

Contract of :class:`DeliberationProtocol`:

- ``validate(state, turn)`` lists every rule the candidate turn would break, given the history in
  ``state``. Errors make the turn illegal; warnings are reported but allowed.
- ``apply(state, turn)`` is total: it returns the state after the turn whether or not the turn was
  legal, so that ``replay`` can keep checking a broken history instead of stopping at the first error.
- ``step`` is what a writer uses: validate, refuse with :class:`ProtocolViolationError` on any error,
  otherwise apply.
- ``outcome(state)`` is the terminal outcome, or ``None`` while the deliberation is open.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from moot.errors import ProtocolViolationError, Severity, Violation


@dataclass(frozen=True)
class Rule:
    """A named rule. ``id`` is UPPER_SNAKE and appears in every message about it."""

    id: str
    summary: str
    severity: Severity = Severity.ERROR


# Turns a record holds past the last one its protocol allows that a check reads and reports one by one; any
# further ones (a runaway writer, a record filled to its size cap) are reported together, unread.
TURNS_PAST_THE_END = 100


class RuleBook:
    """The rules of one protocol, looked up by id so that a typo in an id fails loudly in tests."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self._rules: dict[str, Rule] = {}
        for rule in rules:
            if rule.id in self._rules:
                raise ValueError(f"duplicate rule id {rule.id}")
            self._rules[rule.id] = rule

    def __contains__(self, rule_id: object) -> bool:
        return rule_id in self._rules

    def __iter__(self) -> Any:
        return iter(self._rules.values())

    def __getitem__(self, rule_id: str) -> Rule:
        return self._rules[rule_id]

    def violation(self, rule_id: str, message: str, *, turn: int | None = None) -> Violation:
        rule = self._rules[rule_id]
        return Violation(rule=rule.id, message=message, severity=rule.severity, turn=turn)


class Outcome(BaseModel):
    """How a deliberation ended. ``consensus`` says whether the ending counts as agreement."""

    model_config = ConfigDict(frozen=True)

    name: str
    reason: str
    consensus: bool = False
    # What the ending lacks (members who gave no answer, reviews that were not valid): a result to read with care,
    # never with the authority of a whole panel. None when nothing is missing.
    degraded: str | None = None


class Summary(BaseModel):
    """The state a person wants to see: whose turn, which round, how many turns, how it ended."""

    model_config = ConfigDict(frozen=True)

    protocol: str
    turns: int
    next_speaker: str | None
    round: int | None = None
    outcome: Outcome | None = None
    detail: dict[str, Any] = {}

    @property
    def status(self) -> str:
        return self.outcome.name if self.outcome is not None else "open"


TurnT = TypeVar("TurnT", bound=BaseModel)
StateT = TypeVar("StateT")
StateT_co = TypeVar("StateT_co", covariant=True)


@dataclass(frozen=True)
class Replay(Generic[StateT_co]):
    state: StateT_co
    violations: list[Violation]

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.is_error]


class DeliberationProtocol(ABC, Generic[TurnT, StateT]):
    """One protocol's rules as a state machine. Instances hold only immutable configuration."""

    name: ClassVar[str]
    rules: ClassVar[RuleBook]
    turn_model: ClassVar[type[BaseModel]]

    @abstractmethod
    def initial_state(self) -> StateT: ...

    @abstractmethod
    def next_speaker(self, state: StateT) -> str | None: ...

    @abstractmethod
    def validate(self, state: StateT, turn: TurnT) -> list[Violation]: ...

    @abstractmethod
    def apply(self, state: StateT, turn: TurnT) -> StateT: ...

    @abstractmethod
    def outcome(self, state: StateT) -> Outcome | None: ...

    @abstractmethod
    def summary(self, state: StateT) -> Summary: ...

    def step(self, state: StateT, turn: TurnT) -> tuple[StateT, list[Violation]]:
        """Apply a legal turn; refuse an illegal one. Returns the new state and any warnings."""
        violations = self.validate(state, turn)
        if any(v.is_error for v in violations):
            raise ProtocolViolationError(violations)
        return self.apply(state, turn), violations

    def replay(self, turns: Iterable[TurnT], state: StateT | None = None) -> Replay[StateT]:
        """Check a whole history, turn by turn, numbering violations by 1-based turn position."""
        current = self.initial_state() if state is None else state
        found: list[Violation] = []
        for index, turn in enumerate(turns, start=1):
            found.extend(v.at(turn=index) for v in self.validate(current, turn))
            current = self.apply(current, turn)
        return Replay(state=current, violations=found)


def sealed_digest(text: str) -> str:
    """The commitment to a sealed answer: ``sha256:`` and the hex digest of its exact text."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()

"""The seam between the engine loop and one protocol's record: a driver per protocol.

A driver owns one record on disk and the protocol state replayed from it. The loop asks it who
speaks, what to ask them, whether a reply is a legal turn, and to commit that turn durably. Because
the state always comes from the record, resuming after a crash is just constructing the driver
again from the same path.
"""

from __future__ import annotations

import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from moot.agents.base import AgentRequest, TurnBounds, debate_cache_key
from moot.core.machine import Outcome, Rule, RuleBook, Summary
from moot.errors import Violation

ENGINE_RULES = RuleBook(
    [Rule("REPLY_FORMAT", "A participant's reply must be one JSON object that matches the turn schema.")]
)


def first_error(exc: Exception) -> str:
    """The first problem of a (pydantic) validation error as one short phrase: ``field: message``."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    return str(exc)


@functools.cache
def _schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def json_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """A fresh copy of ``model``'s JSON Schema, for a driver to narrow to what is legal now.

    Pydantic rebuilds a schema on every call, which cost a quarter of a scripted turn; the copy is cheap.
    """
    schema: dict[str, Any] = json.loads(_schema_text(model))
    return schema


def no_valid_reply(role: str, what: str, attempts: int, rules: Sequence[str]) -> str:
    """Why a role's turn failed once every repair was used: the reason the record and the summary give."""
    tries = f"{attempts} attempt" + ("" if attempts == 1 else "s")
    return f"{role} gave no valid {what} in {tries} (last: {', '.join(rules)})"


def reply_format_violation(problem: str) -> Violation:
    return ENGINE_RULES.violation("REPLY_FORMAT", problem)


@dataclass(frozen=True)
class PlannedCall:
    """One call of a deliberation that runs its course, as ``moot run --dry-run`` sizes it
    (:meth:`Driver.planned_calls`, :mod:`moot.engine.estimate`).

    Its prompt is its role's first request plus the earlier replies it carries: ``reads`` names them by their
    index in the plan (``None``: every earlier call, the whole transcript in order), each cut to ``read_tokens``
    where the prompt shows a digest. ``schema`` is the reply's JSON Schema where it is not the role's first
    request's (a later stage asks for another kind of reply): the expected reply's length follows from it.
    ``when`` names the condition a call is made on, if it is made only on one ("the panel splits"): the dry run
    counts it in the upper bound and on a line of its own, not in the expected figures.
    """

    role: str
    reads: tuple[int, ...] | None = None
    read_tokens: int | None = None
    schema: Mapping[str, Any] | None = None
    when: str | None = None


@dataclass(frozen=True)
class Candidate:
    """A reply read as a turn: ``turn`` is set when there are no errors."""

    turn: Any | None
    violations: list[Violation] = field(default_factory=list)

    @property
    def errors(self) -> list[Violation]:
        return [v for v in self.violations if v.is_error]


class Driver(ABC):
    """One running deliberation, backed by its record."""

    protocol: str
    record_path: Path
    options_type: type  # the dataclass of options ``start`` takes (moot.engine.specs builds it from data)
    # Each role's bounds, from its agent (set by the engine); a role not named gets the full-size defaults.
    turn_bounds: Mapping[str, TurnBounds] = MappingProxyType({})
    # Set by ``resume``: it started the record's digest chain, or completed one a crash left short.
    repaired_chain: bool = False

    def bounds(self, role: str) -> TurnBounds:
        return self.turn_bounds.get(role) or TurnBounds()

    def caches_prefix(self, role: str) -> bool:
        """Whether ``role``'s model server caches prompt prefixes (:attr:`TurnBounds.prefix_cache`).

        Its requests keep one reply schema across its turns and share one prefix with the other roles', and the
        protocol's check and repair hold its turns to what is legal. Any other participant's schema narrows,
        turn by turn, to what is legal now: a grammar-decoded model then cannot write an illegal turn, and a
        person's form offers only the legal choices.
        """
        return self.bounds(role).prefix_cache

    def shared_cache_key(self) -> str:
        """The provider cache key of requests that every role shares the prefix of (the rules in ``system``, the
        role named in the instruction); without one, each role's requests meet a cache of their own."""
        return debate_cache_key(str(self.record_path.resolve()), "every role")

    @classmethod
    def resume(cls, path: Path, context: str | None = None) -> Driver:
        """The driver of an existing record: its state is replayed from disk. A digest chain that a crash left one
        write short is completed first (ended records included), and one another tool's record lacks is started."""
        return cls(path)  # type: ignore[call-arg]

    @classmethod
    @abstractmethod
    def start(cls, root: Path, options: Any, started: str) -> Driver:
        """Create the record of a new deliberation under ``root`` and return its driver."""

    @abstractmethod
    def roles(self) -> list[str]:
        """Every role that needs an agent, in speaking order."""

    @abstractmethod
    def next_speaker(self) -> str | None:
        """Who acts next, or ``None`` when the deliberation has ended."""

    @abstractmethod
    def request_for(self, role: str) -> AgentRequest:
        """The prompt (and the JSON Schema of the reply) for ``role``'s next turn."""

    @abstractmethod
    def read_reply(self, role: str, text: str, now: str) -> Candidate:
        """Parse an agent's raw reply into a turn and validate it against the history."""

    @abstractmethod
    def commit(self, turn: Any) -> None:
        """Write the turn durably (record, then digest chain) and advance the state."""

    def substitute(self, role: str, reason: str, now: str) -> bool:
        """Go on without ``role``, which failed (its agent raised, or it gave no valid turn after its repairs): True
        when the protocol recorded the failure and someone else acts in its place (a council's failed chairman is
        replaced by a member), so the run continues; False (the default) ends the run through :meth:`fail`."""
        return False

    @abstractmethod
    def fail(self, role: str, reason: str, now: str) -> Outcome:
        """End the deliberation with the protocol's failure outcome, recorded where the format allows."""

    @abstractmethod
    def summary(self) -> Summary:
        """The current state: turns, next speaker, round, outcome."""

    @abstractmethod
    def call_plan(self) -> list[str]:
        """The roles asked, one entry per call and in order, if the deliberation just started runs its course
        without repairs: what ``moot run --dry-run`` prices (:mod:`moot.engine.estimate`)."""

    def planned_calls(self) -> list[PlannedCall]:
        """The calls of :meth:`call_plan` with what each one's prompt carries of the earlier replies; by default
        every call reads the whole transcript. A protocol whose prompts show less (the latest turn, a digest, a
        sealed stage that sees nothing) says so here, so that the dry run's expected tokens hold."""
        return [PlannedCall(role) for role in self.call_plan()]

    def outcome(self) -> Outcome | None:
        return self.summary().outcome

    @classmethod
    def limit_refusal(cls, option: str) -> str | None:
        """Why ``moot resume --max-rounds`` or ``--max-turns`` (``option`` is ``max_rounds`` or ``max_turns``) cannot
        raise this protocol's limit, in one sentence; None when :meth:`raise_limit` can. Asked before anything is
        written, so that a refusal leaves the record as it was."""
        return f"a {cls.protocol} deliberation has no {option.replace('_', ' ')} limit that moot resume can raise."

    def raise_limit(self, option: str, value: int) -> None:
        """Raise the limit that ``option`` names to ``value`` in the record, so the deliberation goes on (only when
        :meth:`limit_refusal` gave None); a value that raises nothing is refused (UserError) before any write."""
        raise NotImplementedError(option)

    def repair_prompt(self, request: AgentRequest, reply: str, violations: list[Violation]) -> AgentRequest:
        """Send an invalid turn back to its author with the exact violations (rule ids and messages)."""
        problems = "\n".join(f"- {v.rule}: {v.message}" for v in violations if v.is_error)
        prompt = (
            f"{request.prompt}\n\nYour previous reply was:\n{reply}\n\n"
            f"It broke these rules of the protocol:\n{problems}\n\nFix the errors and try again."
        )
        return request.model_copy(update={"prompt": prompt})


def taking_turns(order: Sequence[str], first: str | None, calls: int) -> list[str]:
    """``calls`` calls of the roles in ``order`` taking turns, from ``first`` (the order's first when it is not
    in the order): the call plan of a protocol whose roles speak in rotation."""
    if not order:
        return []
    start = order.index(first) if first in order else 0
    return [order[(start + index) % len(order)] for index in range(calls)]

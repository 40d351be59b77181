"""The one loop that drives every protocol: ask -> read -> repair -> commit -> next, until an outcome.

Each accepted turn is durable (the driver's crash-safe commit) before the loop moves on, so a killed
run resumes from its record with no lost and no duplicated turn. Budgets (turns, tokens, wall time)
end the run with the protocol's failure outcome and the reason recorded.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from moot.agents.base import Agent, AgentError, AgentReply
from moot.artifacts.base import append_log_line
from moot.engine.driver import Candidate, Driver, reply_format_violation
from moot.protocols.base import Outcome, ProtocolViolationError, Summary


@dataclass(frozen=True)
class Limits:
    """Per-debate budgets. ``None`` means no cap beyond the protocol's own."""

    repairs: int = 2
    turn_timeout_s: float = 300.0
    max_turns: int | None = None
    max_tokens: int | None = None
    max_wall_s: float | None = None


@dataclass(frozen=True)
class Event:
    type: str  # turn_started | turn_rejected | turn_accepted | outcome
    role: str | None
    data: dict[str, Any]


Subscriber = Callable[[Event], None]


@dataclass
class RunResult:
    protocol: str
    record_path: Path
    summary: Summary
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    elapsed_s: float = 0.0
    usage: list[dict[str, Any]] = field(default_factory=list)

    @property
    def outcome(self) -> Outcome | None:
        return self.summary.outcome

    def to_json(self) -> dict[str, Any]:
        outcome = self.outcome
        return {
            "protocol": self.protocol,
            "artifact": str(self.record_path),
            "outcome": None if outcome is None else outcome.name,
            "consensus": bool(outcome and outcome.consensus),
            "reason": None if outcome is None else outcome.reason,
            "turns": self.summary.turns,
            "turns_this_run": self.turns,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "elapsed_s": round(self.elapsed_s, 3),
        }


def _agent_failure(role: str, exc: Exception) -> str:
    if isinstance(exc, AgentError | TimeoutError):
        return f"{role}'s agent failed: {str(exc) or type(exc).__name__}"
    # A plugin's or an SDK's own bug: the debate still ends in a valid outcome that names it.
    return f"{role}'s agent failed unexpectedly: {type(exc).__name__}: {exc}"


def usage_path(record: Path) -> Path:
    """Per-turn usage lives beside the record: ``.NAME.usage.jsonl`` (or ``DIR/.moot.usage.jsonl``)."""
    if record.is_dir():
        return record / ".moot.usage.jsonl"
    return record.with_name(f".{record.name}.usage.jsonl")


def local_timestamp() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M")


class Engine:
    """Runs one driver to its outcome with the given agents."""

    def __init__(
        self,
        driver: Driver,
        agents: Mapping[str, Agent],
        limits: Limits | None = None,
        subscribers: tuple[Subscriber, ...] = (),
        clock: Callable[[], str] = local_timestamp,
    ) -> None:
        missing = [role for role in driver.roles() if role not in agents]
        if missing:
            raise ValueError(f"no agent for role(s) {', '.join(missing)}")
        self.driver = driver
        self.agents = agents
        self.limits = limits or Limits()
        self.subscribers = subscribers
        self.clock = clock

    def emit(self, type_: str, role: str | None, **data: Any) -> None:
        event = Event(type_, role, data)
        for subscriber in self.subscribers:
            subscriber(event)

    async def run(self) -> RunResult:
        started = time.monotonic()
        result = RunResult(self.driver.protocol, self.driver.record_path, self.driver.summary())
        while (role := self.driver.next_speaker()) is not None:
            reason = self._budget_exceeded(result, started)
            if reason is not None:
                self.driver.fail(role, reason, self.clock())
                break
            if not await self._take_turn(role, result):
                break
        result.elapsed_s = time.monotonic() - started
        result.summary = self.driver.summary()
        self.emit("outcome", None, **result.to_json())
        return result

    def _budget_exceeded(self, result: RunResult, started: float) -> str | None:
        limits = self.limits
        if limits.max_turns is not None and result.turns >= limits.max_turns:
            return f"the run reached its cap of {limits.max_turns} turns"
        if limits.max_tokens is not None and result.prompt_tokens + result.completion_tokens >= limits.max_tokens:
            return f"the run spent its budget of {limits.max_tokens} tokens"
        if limits.max_wall_s is not None and time.monotonic() - started >= limits.max_wall_s:
            return f"the run used its {limits.max_wall_s:g} s of wall time"
        return None

    async def _take_turn(self, role: str, result: RunResult) -> bool:
        """Ask ``role`` for a turn, repairing up to ``limits.repairs`` times. False when the run ended."""
        # The agent's deadline for the whole turn matches the engine's; inside it, the agent gives each
        # request a shorter one, so that a hung request is retried within the turn.
        request = self.driver.request_for(role).model_copy(update={"timeout_s": self.limits.turn_timeout_s})
        number = self.driver.summary().turns + 1
        self.emit("turn_started", role, turn=number)
        for attempt in range(1, self.limits.repairs + 2):
            try:
                reply = await asyncio.wait_for(self.agents[role].reply(request), self.limits.turn_timeout_s)
            except Exception as exc:
                reason = _agent_failure(role, exc)
                self.emit("turn_rejected", role, turn=number, attempt=attempt, reason=reason)
                self.driver.fail(role, reason, self.clock())
                return False
            result.prompt_tokens += reply.prompt_tokens
            result.completion_tokens += reply.completion_tokens
            candidate = self._accept(role, reply.text)
            self._record_usage(result, number, role, reply, attempt, accepted=not candidate.errors)
            if not candidate.errors:
                result.turns += 1
                tokens = reply.prompt_tokens + reply.completion_tokens
                self.emit("turn_accepted", role, turn=number, attempt=attempt, tokens=tokens)
                return True
            rules = [v.rule for v in candidate.errors]
            self.emit("turn_rejected", role, turn=number, attempt=attempt, rules=rules)
            request = self.driver.repair_prompt(request, reply.text, candidate.errors)
        reason = f"{role} gave no valid turn in {self.limits.repairs + 1} attempts (last: {', '.join(rules)})"
        self.driver.fail(role, reason, self.clock())
        return False

    def _accept(self, role: str, text: str) -> Candidate:
        """Read the reply as a turn and commit it when legal; the candidate's errors say why not."""
        candidate = self.driver.read_reply(role, text, self.clock())
        if candidate.turn is None or candidate.errors:
            return (
                candidate if candidate.errors else Candidate(None, [reply_format_violation("the reply held no turn.")])
            )
        try:
            self.driver.commit(candidate.turn)
        except ProtocolViolationError as exc:  # the record changed between reading and writing
            return Candidate(None, exc.violations)
        return candidate

    def _record_usage(
        self, result: RunResult, number: int, role: str, reply: AgentReply, attempt: int, *, accepted: bool
    ) -> None:
        row = {
            "turn": number,
            "role": role,
            "model": reply.model,
            "attempt": attempt,
            "accepted": accepted,
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "latency_s": round(reply.latency_s, 4),
            "agent_attempts": reply.attempts,
        }
        result.usage.append(row)
        append_log_line(usage_path(self.driver.record_path), json.dumps(row, ensure_ascii=False))

"""The one loop that drives every protocol: ask -> read -> repair -> commit -> next, until an outcome.

Each accepted turn is durable (the driver's crash-safe commit) before the loop moves on, so a killed
run resumes from its record with no lost and no duplicated turn. The commit runs on a worker thread,
so that debates sharing an event loop overlap their disk writes instead of queueing behind each fsync. When the run must stop without a
protocol outcome (an agent failed, repairs ran out, a budget was spent, Ctrl-C), the driver records
what its format allows and the halt goes to the run sidecar (moot.core.run_state), where
``moot check`` and ``moot show`` report it. Every attempt (raw reply, violations, tokens, latency,
model, agent spec) goes to the attempt log beside the record, which ``moot log`` shows.

An accepted attempt's row is written to the log *before* its turn is committed, so a run killed at any
moment never leaves an accepted turn without its row. A kill between the two leaves a row that claims a
turn the record does not hold; the next run of the record marks that row not accepted before it asks for
the turn again (:meth:`Engine.settle_log`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from moot.agents.base import Agent, AgentReply, AgentRequest, TurnBounds, debate_cache_key
from moot.agents.pricing import saving_usd, total_usd, usd_text
from moot.agents.streaming import Progress, listening, within
from moot.core.files import append_log_line, rewrite_log
from moot.core.machine import Outcome, Summary
from moot.core.run_state import RUN_HALTED, read_run_state, resume_text, safe_spec, write_run_state
from moot.engine.driver import Candidate, Driver, no_valid_reply, reply_format_violation
from moot.engine.sealed import open_phase, read_commitments, run_phase
from moot.errors import AgentContextExceeded, AgentError, ProtocolViolationError


@dataclass(frozen=True)
class Attempted:
    """How asking a role for one turn ended (:meth:`Engine.attempt`)."""

    cause: Literal["accepted", "moved_on", "turn_timeout", "agent_failed", "repairs_exhausted"]
    failure: str = ""  # why the role gave no valid turn (agent_failed, repairs_exhausted)


@dataclass(frozen=True)
class Limits:
    """Per-debate budgets. ``None`` means no cap beyond the protocol's own."""

    repairs: int = 2
    turn_timeout_s: float = 300.0
    max_turns: int | None = None
    max_tokens: int | None = None
    max_wall_s: float | None = None
    max_turn_tokens: int | None = None  # completion tokens per turn, for every agent (else each agent's bounds)
    max_cost_usd: float | None = None  # every agent must have a known price (see Agent.price_usd)
    # The turn timeout is moot's default (no --turn-timeout, nothing in moot.toml): a turn whose agent expects,
    # at its measured speed, to need longer gets twice that (Agent.expected_seconds). A timeout someone set holds.
    turn_timeout_stretches: bool = False


@dataclass(frozen=True)
class Event:
    # turn_started | tokens (a reply's completion tokens so far, from an agent that streams) | attempt |
    # turn_rejected (``repairing``: a repair request follows) | turn_accepted | substituted (a failed role's place
    # goes to ``next``) | halted | outcome (also when halted)
    type: str
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
    costs: list[float | None] = field(default_factory=list)  # each attempt's USD price; None: unknown
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's cache
    cache_write_tokens: int = 0  # of prompt_tokens, written to it
    uncached_costs: list[float | None] = field(default_factory=list)  # each attempt's price without the cache
    halted: dict[str, Any] | None = None  # how the run stopped without a protocol outcome (moot.core.run_state)

    def spend(self, reply: AgentReply, cost: float | None, uncached: float | None) -> None:
        """Count one reply's tokens and its price (``Agent.reply_cost``)."""
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.cached_tokens += reply.cached_tokens
        self.cache_write_tokens += reply.cache_write_tokens
        self.costs.append(cost)
        self.uncached_costs.append(uncached)

    @property
    def cost_usd(self) -> float | None:
        return total_usd(self.costs)

    @property
    def uncached_cost_usd(self) -> float | None:
        return total_usd(self.uncached_costs)

    @property
    def outcome(self) -> Outcome | None:
        return self.summary.outcome

    @property
    def resumable(self) -> bool:
        """Whether ``moot resume`` continues the run: it halted, and its record holds no protocol outcome."""
        outcome = self.outcome
        return self.halted is not None and (outcome is None or outcome.name == RUN_HALTED)

    def to_json(self) -> dict[str, Any]:
        """The run as ``--json`` prints it; a run halted without a protocol outcome (Ctrl-C) has RUN_HALTED."""
        outcome = self.outcome
        halted = self.halted or {}
        name = outcome.name if outcome is not None else (RUN_HALTED if self.halted else None)
        return {
            "protocol": self.protocol,
            "artifact": str(self.record_path),
            "outcome": name,
            "consensus": bool(outcome and outcome.consensus),
            "reason": outcome.reason if outcome is not None else halted.get("reason"),
            "degraded": outcome.degraded if outcome is not None else None,
            "run_halted": self.halted,
            "resume": resume_text(self.record_path) if self.resumable else None,
            "turns": self.summary.turns,
            "turns_this_run": self.turns,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": rounded_usd(self.cost_usd),
            "uncached_cost_usd": rounded_usd(self.uncached_cost_usd),
            "cache_saving_usd": rounded_usd(saving_usd(self.cost_usd, self.uncached_cost_usd)),
            "elapsed_s": round(self.elapsed_s, 3),
        }


def rounded_usd(usd: float | None) -> float | None:
    """A price as --json gives it: to a millionth of a dollar, None when unknown."""
    return None if usd is None else round(usd, 6)


def _agent_failure(role: str, exc: Exception) -> str:
    if isinstance(exc, AgentError | TimeoutError):
        return f"{role}'s agent failed: {str(exc) or type(exc).__name__}"
    # A plugin's or an SDK's own bug: the debate still ends in a valid outcome that names it.
    return f"{role}'s agent failed unexpectedly: {type(exc).__name__}: {exc}"


def usage_path(record: Path) -> Path:
    """The attempt log lives beside the record: ``.NAME.usage.jsonl`` (or ``DIR/.moot.usage.jsonl``).

    One JSON line per attempt: turn, role, agent spec, model, attempt, accepted, the raw reply, its
    violations (rule and message) or the agent's error, tokens (of the prompt's, those read from and written to
    the provider's cache), the price paid and the price without the cache, and latency.
    """
    if record.is_dir():
        return record / ".moot.usage.jsonl"
    return record.with_name(f".{record.name}.usage.jsonl")


TIMEOUT_STRETCH = 2  # a stretched turn timeout: this many times what the agent expects (Limits.turn_timeout_stretches)
INTERRUPTED = "the person stopped the run"  # the reason of a Ctrl-C halt

# Why a row that claimed a turn is no longer accepted: the run stopped before the turn reached the record.
NOT_WRITTEN = "the run stopped before this turn was written to the record; a later run asked for it again"


def now_minutes() -> str:
    """The local time as records write it, to the minute: the engine's clock unless a run gives its own."""
    return datetime.now().strftime("%Y-%m-%d %H:%M")


class Engine:
    """Runs one driver to its outcome with the given agents."""

    def __init__(
        self,
        driver: Driver,
        agents: Mapping[str, Agent],
        limits: Limits | None = None,
        subscribers: tuple[Subscriber, ...] = (),
        clock: Callable[[], str] = now_minutes,
        specs: Mapping[str, str] | None = None,
    ) -> None:
        missing = [role for role in driver.roles() if role not in agents]
        if missing:
            raise ValueError(f"no agent for role(s) {', '.join(missing)}")
        self.driver = driver
        self.agents = agents
        self.limits = limits or Limits()
        self._deadlines: dict[str, float] = {}  # each role's latest turn deadline (see Limits.turn_timeout_stretches)
        driver.turn_bounds = {role: self._bounds(role) for role in driver.roles()}
        self.subscribers = subscribers
        self.clock = clock
        self.specs = {role: safe_spec(spec) for role, spec in (specs or {}).items()}
        self.usage_log = usage_path(driver.record_path)
        self._debate = str(driver.record_path.resolve())  # what names this debate in provider cache keys
        self.halted: dict[str, Any] | None = None  # how this run stopped without a protocol outcome

    def emit(self, type_: str, role: str | None, **data: Any) -> None:
        event = Event(type_, role, data)
        for subscriber in self.subscribers:
            subscriber(event)

    async def run(self) -> RunResult:
        started = time.monotonic()
        result = RunResult(self.driver.protocol, self.driver.record_path, self.driver.summary())
        self.settle_log()
        self._write_state(None)
        try:
            while True:
                phase = open_phase(self.driver)  # the roles of a sealed phase are asked at once
                role = phase.roles[0] if phase is not None else self.driver.next_speaker()
                if role is None:
                    break
                reason = self._budget_exceeded(result, started)
                if reason is not None:
                    self._halt("budget", role, reason)
                    break
                if phase is not None:
                    await run_phase(self, phase, result)
                    if self.halted is not None:  # a role ran past the turn timeout: the phase waits for a resume
                        break
                elif not await self._take_turn(role, result):
                    break
        except (asyncio.CancelledError, KeyboardInterrupt) as stop:
            # Ctrl-C, or a cancelled task (its message says who): every accepted turn is already durable; the
            # halt says where the run stopped, and the outcome event says what the run did until then.
            cancelled = isinstance(stop, asyncio.CancelledError) and stop.args and isinstance(stop.args[0], str)
            why = stop.args[0] if cancelled else INTERRUPTED
            role = self.driver.next_speaker()
            self.note_halt("interrupted", role, why)
            self._finish(result, started)
            raise
        self._finish(result, started)
        return result

    def _finish(self, result: RunResult, started: float) -> None:
        result.elapsed_s = time.monotonic() - started
        result.summary = self.driver.summary()
        result.halted = self.halted
        self.emit("outcome", None, **result.to_json())

    def _halt_entry(self, cause: str, role: str | None, reason: str) -> dict[str, Any]:
        return {
            "cause": cause,
            "role": role,
            "reason": reason,
            "at": self.clock(),
            "turns": self.driver.summary().turns,
        }

    def _halt(self, cause: str, role: str, reason: str) -> None:
        """End the run without a protocol outcome: the driver records what its format allows, the sidecar the rest."""
        self.driver.fail(role, reason, self.clock())
        self.note_halt(cause, role, reason)

    def note_halt(self, cause: str, role: str | None, reason: str) -> None:
        """Record in the run sidecar (and tell subscribers) that the run ended without a protocol outcome."""
        entry = self._halt_entry(cause, role, reason)
        self._write_state(entry)
        self.halted = entry
        self.emit("halted", role, **{key: value for key, value in entry.items() if key != "role"})

    def _write_state(self, halted: dict[str, Any] | None) -> None:
        """The run sidecar: the agent specs this run uses (merged over earlier runs') and how it halted."""
        state = read_run_state(self.driver.record_path)
        earlier = state.get("agents")
        agents: dict[str, Any] = earlier if isinstance(earlier, dict) else {}
        wanted = {"agents": {**agents, **self.specs}, "halted": halted}
        if wanted != {"agents": agents, "halted": state.get("halted")}:  # a write only for news
            # A halt is fsync'd; the agent specs alone are not: a killed run keeps them, and a power cut that
            # loses them costs only naming the agents again on `moot resume`.
            write_run_state(self.driver.record_path, wanted, durable=halted is not None)

    def _budget_exceeded(self, result: RunResult, started: float) -> str | None:
        limits = self.limits
        if limits.max_turns is not None and result.turns >= limits.max_turns:
            return f"the run reached its cap of {limits.max_turns} turns"
        if limits.max_tokens is not None and result.prompt_tokens + result.completion_tokens >= limits.max_tokens:
            return f"the run spent its budget of {limits.max_tokens} tokens"
        if limits.max_cost_usd is not None and sum(c or 0.0 for c in result.costs) >= limits.max_cost_usd:
            return f"the run spent its budget of {usd_text(limits.max_cost_usd)}"
        if limits.max_wall_s is not None and time.monotonic() - started >= limits.max_wall_s:
            return f"the run used its {limits.max_wall_s:g} s of wall time"
        return None

    def _bounds(self, role: str) -> TurnBounds:
        bounds = self.agents[role].bounds()
        return replace(bounds, max_tokens=self.limits.max_turn_tokens or bounds.max_tokens)

    async def ask(self, role: str, request: AgentRequest) -> tuple[AgentReply, AgentRequest]:
        """``role``'s reply to ``request`` within the turn's time, and the request a repair builds on.

        An agent may learn that its model's context is smaller than the request assumed: from a server that
        refused the prompt as too long (the request is then built again to fit, once, within what is left of
        the turn; a repair's notes are not in the rebuilt request), or from a reply the context cut short. Every
        later request to that model is sized by what it learnt, a repair of this turn too.
        """
        built_for = self.driver.bounds(role).context_tokens  # before the wait: other roles may refit meanwhile
        started = time.monotonic()
        try:
            reply = await self._reply(role, request, request.timeout_s)
        except AgentContextExceeded as exc:
            if self._bounds(role).context_tokens >= built_for:
                raise  # the agent knows of no smaller context than the request was built for: nothing to refit to
            self._refit(role, exc.context_tokens)
            deadline = request.timeout_s
            request = self.timed(self.driver.request_for(role))
            left = deadline - (time.monotonic() - started)
            reply = await self._reply(role, request, max(left, 0.001))
            return reply.model_copy(update={"attempts": exc.attempts + reply.attempts}), request  # every request sent
        learnt = self._bounds(role).context_tokens
        if learnt < self.driver.bounds(role).context_tokens:
            self._refit(role, learnt)
            request = self.timed(self.driver.request_for(role))
        return reply, request

    async def _reply(self, role: str, request: AgentRequest, timeout_s: float) -> AgentReply:
        """``role``'s agent's reply within ``timeout_s``; an agent that streams tells subscribers its tokens so far.

        A stretched turn timeout (Limits.turn_timeout_stretches) also waits while tokens keep coming: the turn
        ends only once the turn timeout passes with no new token as well.
        """
        loop = asyncio.get_running_loop()
        waiting = True
        stretching = self.limits.turn_timeout_stretches and self.agents[role].expected_seconds(request) is not None
        progress = Progress() if stretching else None

        def tell(tokens: int) -> None:
            if waiting:  # a count that arrives after the reply (or its cancellation) is news no more
                if progress is not None:
                    progress.moved()
                self.emit("tokens", role, tokens=tokens)

        def heard(tokens: int) -> None:  # from the agent's thread, perhaps: the event goes out on the loop
            loop.call_soon_threadsafe(tell, tokens)

        try:
            with listening(heard):
                return await within(self.agents[role].reply(request), timeout_s, progress, self.limits.turn_timeout_s)
        finally:
            waiting = False

    def _refit(self, role: str, context_tokens: int) -> None:
        """Size every role's requests by what its agent now knows of its model (what one learnt, all use)."""
        self.driver.turn_bounds = {name: self._bounds(name) for name in self.driver.roles()}
        self.emit("refitted", role, context_tokens=context_tokens)

    def timed_out(self, role: str) -> str:
        """What happened when ``role``'s turn passed its deadline (the attempt log's error)."""
        return f"{role}'s turn took longer than the turn timeout of {self._deadline(role):g} s"

    def timeout_reason(self, role: str) -> str:
        """Why a run stopped at the turn deadline, naming the limit and the flag that raises it."""
        longer = max(self._deadline(role) * 3, 60)
        return f"{self.timed_out(role)}; resume it with a longer one (--turn-timeout {longer:g}, or turn_timeout_s in moot.toml)"

    def _deadline(self, role: str) -> float:
        return self._deadlines.get(role, self.limits.turn_timeout_s)

    def timed(self, request: AgentRequest) -> AgentRequest:
        """``request`` with its turn deadline and the provider cache key of its role in this debate; a driver
        builds requests (repairs too) without them."""
        key = request.cache_key or debate_cache_key(self._debate, request.role)
        deadline = self.limits.turn_timeout_s
        agent = self.agents.get(request.role)
        expected = agent.expected_seconds(request) if agent is not None and self.limits.turn_timeout_stretches else None
        if expected is not None:
            deadline = max(deadline, math.ceil(TIMEOUT_STRETCH * expected))  # whole seconds, for the message
        self._deadlines[request.role] = deadline
        return request.model_copy(update={"timeout_s": deadline, "cache_key": key})

    async def _take_turn(self, role: str, result: RunResult) -> bool:
        """Ask ``role`` for a turn and write it. False when the run ended."""
        number = self.driver.summary().turns + 1

        async def accept(reply: AgentReply, attempt: int) -> Candidate:
            return await self._accept(result, number, role, reply, attempt)

        # Someone else wrote the record meanwhile: the loop asks who is next.
        done = await self.attempt(role, number, result, accept, moved_on=lambda: self.driver.next_speaker() != role)
        if done.cause in ("accepted", "moved_on"):
            return True
        if done.cause == "turn_timeout":  # moot's own limit, not the debate's: a longer one may finish it
            self.note_halt("turn_timeout", role, self.timeout_reason(role))
            return False
        return self._substitute_or_halt(done.cause, role, done.failure)

    async def attempt(
        self,
        role: str,
        number: int,
        result: RunResult,
        accept: Callable[[AgentReply, int], Awaitable[Candidate]],
        *,
        moved_on: Callable[[], bool] | None = None,
        what: str = "turn",
        **event: Any,
    ) -> Attempted:
        """Ask ``role`` for turn ``number`` until ``accept`` takes a reply, repairing up to ``limits.repairs`` times:
        the one attempt path of ordinary turns and sealed answers.

        ``accept(reply, attempt)`` reads the reply, logs it and writes it when legal; its candidate's errors say why
        not. ``moved_on()`` tells when the record went past ``role`` meanwhile, which ends the asking. ``event`` goes
        with the turn_started and turn_accepted events (a sealed answer's phase).
        """
        # The agent's deadline for the whole turn matches the engine's; inside it, the agent gives each
        # request a shorter one, so that a hung request is retried within the turn.
        request = self.timed(self.driver.request_for(role))
        self.emit("turn_started", role, turn=number, **event)
        rules: list[str] = []
        for attempt in range(1, self.limits.repairs + 2):
            asked = time.monotonic()
            try:
                reply, request = await self.ask(role, request)
            except Exception as exc:
                reason = self.log_failed_attempt(result, number, role, attempt, exc, time.monotonic() - asked)
                return Attempted("turn_timeout" if isinstance(exc, TimeoutError) else "agent_failed", reason)
            result.spend(reply, *self.agents[role].reply_cost(reply))
            candidate = await accept(reply, attempt)
            if not candidate.errors:
                result.turns += 1
                tokens = reply.prompt_tokens + reply.completion_tokens
                self.emit("turn_accepted", role, turn=number, attempt=attempt, tokens=tokens, **event)
                return Attempted("accepted")
            rules = [v.rule for v in candidate.errors]
            gone = moved_on is not None and moved_on()
            repairing = not gone and attempt <= self.limits.repairs
            self.emit("turn_rejected", role, turn=number, attempt=attempt, rules=rules, repairing=repairing)
            if gone:
                return Attempted("moved_on")
            request = self.timed(self.driver.repair_prompt(request, reply.text, candidate.errors))
        return Attempted("repairs_exhausted", no_valid_reply(role, what, self.limits.repairs + 1, rules))

    def _substitute_or_halt(self, cause: str, role: str, reason: str) -> bool:
        """After ``role`` failed: True when the protocol goes on without it (:meth:`Driver.substitute`), else the
        run halts (False)."""
        if self.driver.substitute(role, reason, self.clock()):
            self.emit("substituted", role, reason=reason, next=self.driver.next_speaker())
            return True
        self._halt(cause, role, reason)
        return False

    async def _accept(self, result: RunResult, number: int, role: str, reply: AgentReply, attempt: int) -> Candidate:
        """Read the reply as a turn, commit it when legal and log the attempt; the candidate's errors say why it
        was not accepted."""
        candidate = self.driver.read_reply(role, reply.text, self.clock())
        if candidate.turn is None and not candidate.errors:
            candidate = Candidate(None, [reply_format_violation("the reply held no turn.")])
        row = self.reply_row(number, role, reply, attempt, candidate, result)
        if candidate.errors:
            self.log_attempt(result, row)
            return candidate
        self._write_row(row)  # before the turn: once the turn is in the record, its row is in the log
        try:
            await self._commit(candidate.turn)
        except ProtocolViolationError as exc:  # the record changed between reading and writing: nothing written
            candidate = Candidate(None, exc.violations)
            row = self.reply_row(number, role, reply, attempt, candidate, result)
            self._correct_last_row(row)
        self._announce_row(result, row)
        return candidate

    async def _commit(self, turn: Any) -> None:
        """The driver's commit on a worker thread, so that concurrent debates overlap their disk waits and a
        second Ctrl-C cannot cut a commit in two. A cancelled run (Ctrl-C) still waits for a commit under way, so
        the halt it records counts that turn (or not) exactly as the record does."""
        commit = asyncio.get_running_loop().run_in_executor(None, self.driver.commit, turn)
        try:
            await asyncio.shield(commit)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await commit
            raise

    def log_failed_attempt(
        self, result: RunResult, number: int, role: str, attempt: int, exc: Exception, latency_s: float
    ) -> str:
        """Log an attempt whose agent raised instead of replying, tell subscribers, and return the reason."""
        reason = self.timed_out(role) if isinstance(exc, TimeoutError) else _agent_failure(role, exc)
        row = self._attempt_row(
            number,
            role,
            attempt,
            error=reason,
            prompt_tokens=0,
            completion_tokens=0,
            latency_s=latency_s,
            agent_attempts=getattr(exc, "attempts", 1),
        )
        self.log_attempt(result, row)
        self.emit("turn_rejected", role, turn=number, attempt=attempt, reason=reason, repairing=False)
        return reason

    def _attempt_row(self, number: int, role: str, attempt: int, **fields: Any) -> dict[str, Any]:
        return {
            "turn": number,
            "role": role,
            "agent": self.specs.get(role),
            "attempt": attempt,
            "accepted": False,
            **fields,
        }

    def reply_row(
        self, number: int, role: str, reply: AgentReply, attempt: int, candidate: Candidate, result: RunResult
    ) -> dict[str, Any]:
        """The log row of a reply whose price ``result`` counted last."""
        row = self._attempt_row(number, role, attempt, model=reply.model, accepted=not candidate.errors)
        row.update(
            {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "cached_tokens": reply.cached_tokens,
                "cache_write_tokens": reply.cache_write_tokens,
                "cost_usd": result.costs[-1],
                "uncached_cost_usd": result.uncached_costs[-1],
                "latency_s": round(reply.latency_s, 4),
                "agent_attempts": reply.attempts,
                "finish_reason": reply.finish_reason,
                "reply": reply.text,
                "violations": [{"rule": v.rule, "message": v.message} for v in candidate.errors],
            }
        )
        return row

    def log_attempt(self, result: RunResult, row: dict[str, Any]) -> None:
        """Write an attempt's row to the usage log and tell subscribers."""
        self._write_row(row)
        self._announce_row(result, row)

    def _write_row(self, row: dict[str, Any]) -> None:
        if "latency_s" in row:
            row["latency_s"] = round(row["latency_s"], 4)
        # Advisory, so not fsync'd: a killed run still leaves the line; only a power cut may lose the latest.
        append_log_line(self.usage_log, json.dumps(row, ensure_ascii=False), durable=False)

    def _announce_row(self, result: RunResult, row: dict[str, Any]) -> None:
        result.usage.append(row)
        self.emit("attempt", row["role"], **{key: value for key, value in row.items() if key != "role"})

    def _read_log(self) -> list[str]:
        """The log's lines; a line a kill tore mid-character reads with a replacement character (no reader takes a
        torn line), and a log that cannot be read is left to ``moot log`` to report."""
        try:
            return self.usage_log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:  # none yet, or unreadable
            return []

    def _correct_last_row(self, row: dict[str, Any]) -> None:
        """Replace the row this run wrote last (an attempt whose commit was refused) with ``row``."""
        lines = self._read_log()
        while lines and not lines[-1].strip():
            lines.pop()
        rewrite_log(self.usage_log, [*lines[:-1], json.dumps(row, ensure_ascii=False)])

    def settle_log(self) -> None:
        """Mark not accepted the rows that claim a turn the record does not hold (a kill fell between a row and its
        turn), so that each turn the record holds has exactly one accepted row once this run asks again.

        A row of a sealed phase (``phase``) holds while the phase's sidecar holds that role's answer.
        """
        turns = self.driver.summary().turns
        lines = self._read_log()
        answered: dict[str, set[str]] = {}
        changed = False
        for index, line in enumerate(lines):
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(row, dict) or row.get("accepted") is not True:
                continue
            turn, phase = row.get("turn"), row.get("phase")
            if not isinstance(turn, int) or turn <= turns:
                continue
            if isinstance(phase, str):
                if phase not in answered:
                    entries = read_commitments(self.driver.record_path, phase)
                    answered[phase] = {role for role, entry in entries.items() if entry.failure is None}
                if row.get("role") in answered[phase]:
                    continue
            lines[index] = json.dumps({**row, "accepted": False, "error": NOT_WRITTEN}, ensure_ascii=False)
            changed = True
        if changed:
            rewrite_log(self.usage_log, lines)

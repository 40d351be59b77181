"""Sealed phases: several roles asked at once, each without seeing any other answer of the phase.

A driver that has sealed phases (:class:`SealedPhases`) names the phase open now and its roles. The
engine asks every role that has not answered yet concurrently, so a phase takes about as long as its
slowest call. Each answer is validated and repaired on its own (the loop's repair budget, per answer)
and, once valid, *committed*: one append + fsync to the sidecar ``.NAME.sealed.jsonl`` with the
answer's digest. The record proper does not change until every role has answered or failed; then
the driver *reveals* the whole phase in one crash-safe write. A role that runs past moot's own turn
timeout commits nothing (a longer timeout may get its answer): the others' answers are committed, the
run halts resumably, and ``moot resume`` asks only the roles without a committed entry.

Prompts come from the record proper only, which holds no answer of the open phase, so no sealed
answer is in any other's prompt. After a crash the phase resumes from the sidecar: the committed
roles are not asked again and nothing is revealed before the last answer is in.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot.core.files import append_log_line
from moot.core.machine import sealed_digest
from moot.core.run_state import RUN_HALTED
from moot.engine.driver import Candidate, reply_format_violation
from moot.errors import ProtocolViolationError

if TYPE_CHECKING:
    from moot.agents.base import AgentReply
    from moot.engine.loop import Engine, RunResult


@dataclass(frozen=True)
class SealedPhase:
    """A phase of sealed answers: ``name`` is unique within its record; ``roles`` are asked together.

    ``retry_failures``: a role whose committed entry is a failure is asked again by a later run (the
    Roundtable's speakers); otherwise a failure is that role's final entry (the Council's members).
    """

    name: str
    roles: tuple[str, ...]
    retry_failures: bool = False


@dataclass(frozen=True)
class Commitment:
    """One role's committed entry of a phase: a valid reply (with its digest) or why it has none."""

    phase: str
    role: str
    at: str
    reply: str | None = None
    digest: str | None = None
    failure: str | None = None

    def to_json(self) -> str:
        row = {"phase": self.phase, "role": self.role, "at": self.at}
        if self.failure is not None:
            row["failure"] = self.failure
        else:
            row |= {"digest": self.digest or "", "reply": self.reply or ""}
        return json.dumps(row, ensure_ascii=False)


def sealed_path(record: Path) -> Path:
    """The sidecar of sealed answers: ``.NAME.sealed.jsonl`` (or ``DIR/.moot.sealed.jsonl``)."""
    if record.is_dir():
        return record / ".moot.sealed.jsonl"
    return record.with_name(f".{record.name}.sealed.jsonl")


def read_commitments(record: Path, phase: str) -> dict[str, Commitment]:
    """The committed entries of ``phase``, by role: a role's first answer, else its latest failure.

    A torn last line (a kill inside the append) is skipped.
    """
    path = sealed_path(record)
    if not path.is_file():
        return {}
    found: dict[str, Commitment] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(row, dict) or row.get("phase") != phase or not isinstance(row.get("role"), str):
            continue
        fields = {key: row.get(key) for key in ("reply", "digest", "failure")}
        if not all(value is None or isinstance(value, str) for value in fields.values()):
            continue
        entry = Commitment(phase, row["role"], str(row.get("at", "")), **fields)
        earlier = found.get(entry.role)
        if earlier is None or earlier.failure is not None:
            found[entry.role] = entry
    return found


def commit_answer(record: Path, commitment: Commitment) -> None:
    append_log_line(sealed_path(record), commitment.to_json())


class SealedPhases(ABC):
    """What a driver adds to have sealed phases. ``request_for`` and ``read_reply`` serve them too.

    While a phase is open, ``request_for`` and ``read_reply`` must see the record as it was when the
    phase opened (they read only the record proper, which the phase does not touch before the reveal).
    """

    @abstractmethod
    def sealed_phase(self) -> SealedPhase | None:
        """The sealed phase open now, or ``None`` when the next turn is an ordinary one."""

    @abstractmethod
    def sealed_text(self, turn: Any) -> str:
        """The text of an answer that its digest covers (as the record will show it)."""

    @abstractmethod
    def reveal(self, phase: SealedPhase, answers: Mapping[str, Any], failures: Mapping[str, str], now: str) -> None:
        """Write the whole phase into the record at once: every valid answer and every role's failure."""


def open_phase(driver: object) -> SealedPhase | None:
    return driver.sealed_phase() if isinstance(driver, SealedPhases) else None


async def run_phase(engine: Engine, phase: SealedPhase, result: RunResult) -> None:
    """Ask the roles of ``phase`` still missing at once, commit each answer, then reveal them together."""
    driver = engine.driver
    assert isinstance(driver, SealedPhases)
    record = engine.driver.record_path
    committed = read_commitments(record, phase.name)
    missing = [
        role
        for role in phase.roles
        if role not in committed or (phase.retry_failures and committed[role].failure is not None)
    ]
    together = [role for role in missing if not engine.agents[role].interactive]
    # People answer one at a time (one terminal); models and programs are asked at once.
    asked = await asyncio.gather(*(_ask(engine, phase, role, result) for role in together))
    for role in missing:
        if role not in together:
            asked.append(await _ask(engine, phase, role, result))
    late = [role for role in asked if role is not None]
    if late:  # nothing is revealed: the phase waits for the late roles' answers on a resume
        engine.note_halt("turn_timeout", late[0], engine.timeout_reason(late[0]))
        return
    committed = read_commitments(record, phase.name)
    answers: dict[str, Any] = {}
    failures: dict[str, str] = {}
    for role in phase.roles:
        entry = committed[role]
        if entry.failure is not None:
            failures[role] = entry.failure
            continue
        candidate = engine.driver.read_reply(role, entry.reply or "", entry.at)
        if (
            candidate.turn is None
            or candidate.errors
            or sealed_digest(driver.sealed_text(candidate.turn)) != entry.digest
        ):
            failures[role] = f"{role}'s sealed answer no longer matches its commitment in {sealed_path(record).name}"
            continue
        answers[role] = candidate.turn
    driver.reveal(phase, answers, failures, engine.clock())
    outcome = driver.outcome()
    if failures and outcome is not None and outcome.name == RUN_HALTED:  # the phase's failure ended the run
        role = next(r for r in phase.roles if r in failures)
        engine.note_halt("agent_failed", role, failures[role])


async def _ask(engine: Engine, phase: SealedPhase, role: str, result: RunResult) -> str | None:
    """One role's sealed answer, repaired up to the loop's limit, committed to the sidecar (or its failure); the
    role when it ran past the turn timeout instead (nothing committed), else None."""
    driver = engine.driver
    assert isinstance(driver, SealedPhases)
    record = engine.driver.record_path
    # The answer's place once revealed: the phase is written in the order of its roles.
    number = engine.driver.summary().turns + 1 + phase.roles.index(role)

    async def accept(reply: AgentReply, attempt: int) -> Candidate:
        now = engine.clock()
        candidate = _read(engine, role, reply.text, now)
        # The phase names the row: it stands while the sidecar holds the answer (see Engine.settle_log).
        row = {**engine.reply_row(number, role, reply, attempt, candidate, result), "phase": phase.name}
        engine.log_attempt(result, row)
        if not candidate.errors and candidate.turn is not None:
            digest = sealed_digest(driver.sealed_text(candidate.turn))
            await _commit(record, Commitment(phase.name, role, now, reply=reply.text, digest=digest))
        return candidate

    done = await engine.attempt(role, number, result, accept, what="answer", phase=phase.name)
    if done.cause == "turn_timeout":  # moot's own limit, not the role's failure: a longer one may finish it
        return role
    if done.cause != "accepted":
        await _commit(record, Commitment(phase.name, role, engine.clock(), failure=done.failure))
    return None


async def _commit(record: Path, commitment: Commitment) -> None:
    """Commit in a worker thread: the fsyncs of answers that arrive together overlap instead of queueing."""
    await asyncio.to_thread(commit_answer, record, commitment)


def _read(engine: Engine, role: str, text: str, now: str) -> Candidate:
    try:
        candidate = engine.driver.read_reply(role, text, now)
    except ProtocolViolationError as exc:
        return Candidate(None, exc.violations)
    if candidate.turn is None and not candidate.errors:
        return Candidate(None, [reply_format_violation("the reply held no turn.")])
    return candidate

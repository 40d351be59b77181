"""Auto's orchestration: the council's driver with a vote after stage 1.

Stage 1 asks every member at once for its reasoning and a short final answer (one JSON object, so the
vote reads a field rather than scraping prose); the record keeps them as one answer whose last line is
``Final answer: …``, so that reviewers and the chairman read the short answer with its reasoning. When
stage 1 is revealed the vote is counted and written in the same write; a split panel then goes on with
the council's stage 2 and 3 over the same sealed answers, asked by the council's own prompts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from moot.agents.base import AgentRequest
from moot.core.machine import Summary, sealed_digest
from moot.engine.driver import PlannedCall, taking_turns
from moot.engine.sealed import SealedPhase
from moot.errors import ProtocolViolationError, RecordExists, UserError
from moot.paths import record_place
from moot.protocols.auto import record
from moot.protocols.auto.machine import (
    DEFAULT_QUORUM,
    DEFAULT_THRESHOLD,
    ESCALATED,
    FINAL_ANSWER,
    VERDICT_CHARS,
    AutoConfig,
    AutoProtocol,
    AutoState,
    AutoTurn,
    decide,
)
from moot.protocols.council import record as council_record
from moot.protocols.council.driver import (
    ANSWER_CHARS,
    ANSWER_CONFIDENCE,
    ANSWER_MAX_TOKENS,
    CouncilDriver,
    CouncilOptions,
    with_confidence,
)
from moot.protocols.council.machine import Answer

# A small model's bound on the short answer: a number, a choice or a short phrase fits in 80 characters, and a
# shorter grammar leaves the 135M model less room to run on. Other models get the rule's bound.
COMPACT_VERDICT_CHARS = 80
SPLIT = "the panel splits"  # the condition the council's stages 2 and 3 are asked on, as a dry run names it


@dataclass(frozen=True)
class AutoOptions(CouncilOptions):
    agree: str = DEFAULT_THRESHOLD  # the agreement threshold, a fraction (1, 0.6, 2/3)
    quorum: int = DEFAULT_QUORUM


class VoteReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reasoning: str
    final_answer: str
    confidence: float | None = None  # asked for where the header names its aggregation, as the council asks


class AutoDriver(CouncilDriver):
    protocol = "auto"
    options_type = AutoOptions
    # The council's driver asks its machine what every council has (stages, pending roles, validation); the
    # auto machine answers the same questions with the vote in between.
    machine: AutoProtocol  # type: ignore[assignment]
    state: AutoState
    config: AutoConfig

    @classmethod
    def resume(cls, path: Path, context: str | None = None) -> AutoDriver:
        repaired = record.repair(path)
        driver = cls(path)
        driver.repaired_chain = repaired
        if driver.machine.answered(driver.state) and driver.state.vote is None and driver.outcome() is None:
            driver._write([decide(driver.config, driver.state.answers)])  # a record written without its vote
        return driver

    @classmethod
    def start(cls, root: Path, options: CouncilOptions, started: str) -> AutoDriver:
        config = AutoConfig(
            **cls.config_fields(options, started), threshold=getattr(options, "agree", DEFAULT_THRESHOLD)
        )
        problems = config.problems()
        if problems:
            raise UserError(
                f"cannot convene the panel: {problems[0]}; fix the --question, --member, --agree, --quorum or "
                "--aggregate options."
            )
        path = record.auto_path(root, config.question)
        record_place(root, path.parent.relative_to(root))
        try:
            record.create(path, config)
        except FileExistsError as exc:
            raise RecordExists(
                path, f"{path} already exists; resume it with `moot resume {path}` or ask another question."
            ) from exc
        return cls(path)

    def _load(self) -> None:
        try:
            self.machine, self.state, _ = record.load(self.record_path)
        except ProtocolViolationError as exc:
            first = exc.violations[0] if exc.violations else "unreadable"
            raise UserError(
                f"{self.record_path} is not a valid auto record ({first}); run `moot check` on it."
            ) from None
        self.config = self.machine.config

    def sealed_phase(self) -> SealedPhase | None:
        phase = super().sealed_phase()
        return phase if phase is not None and phase.roles else None

    # --- stage 1: an answer with a short final answer ------------------------------------------

    def _answer_request(self, role: str) -> AgentRequest:
        compact = self.bounds(role).compact
        verdict_chars = COMPACT_VERDICT_CHARS if compact else VERDICT_CHARS
        system = (
            f"You are one of {len(self.config.members)} members of a panel. Each member answers the same question on "
            "their own; the short final answers are counted as votes, and only if the members disagree do they review "
            "each other's answers anonymously. Give your best, self-contained answer."
        )
        instruction = (
            "\n\nReply with one JSON object: 'reasoning', your answer with the reasons for it, and 'final_answer', the "
            f"answer alone in at most {verdict_chars} characters: a number (digits only, no units), the option you "
            "choose, yes or no, or a short phrase. Two members who agree must be able to write the same final answer."
            + (ANSWER_CONFIDENCE if self.config.confident else "")
        )
        reasoning = (
            {"type": "string", "minLength": 1, "maxLength": ANSWER_CHARS}
            if compact
            else {"type": "string", "minLength": 1}
        )
        schema = {
            "type": "object",
            "properties": {
                "reasoning": reasoning,
                "final_answer": {"type": "string", "minLength": 1, "maxLength": verdict_chars},
            },
            "required": ["reasoning", "final_answer"],
            "additionalProperties": False,
        }
        schema = with_confidence(schema, self.config.confident)
        return self._request(
            role, system, ([f"Question: {self.config.question}"], instruction), schema, ANSWER_MAX_TOKENS
        )

    def _turn(self, stage: int | None, role: str, data: Any, now: str) -> AutoTurn:  # type: ignore[override]
        if stage != 1:
            return super()._turn(stage, role, data, now)
        reply = VoteReply.model_validate(data)
        # One line, as the vote reads it; a longer one than the rule allows is refused by the machine (AUTO_VERDICT).
        verdict = council_record.one_line(reply.final_answer)
        text = f"{council_record.clean_text(reply.reasoning)}\n\n{FINAL_ANSWER} {verdict}".strip()
        answer = Answer(member=role, at=now, text=text, confidence=reply.confidence)
        return answer.model_copy(update={"digest": sealed_digest(council_record.sealed_text(answer))})

    # --- writing -----------------------------------------------------------------------------

    def reveal(self, phase: SealedPhase, answers: Mapping[str, Any], failures: Mapping[str, str], now: str) -> None:
        if phase.name != "stage-1":
            super().reveal(phase, answers, failures, now)
            return
        turns: list[AutoTurn] = [
            answers[role] if role in answers else Answer(member=role, at=now, failure=failures[role])
            for role in phase.roles
        ]
        answered = [*self.state.answers, *(t for t in turns if isinstance(t, Answer))]
        complete = len(answered) >= len(self.config.members)
        self._write([*turns, decide(self.config, answered)] if complete else turns)

    def _write(self, turns: Sequence[Any], failure: str | None = None) -> None:
        try:
            record.append_turns(self.record_path, turns, failure=failure)
        finally:
            self._load()

    def summary(self) -> Summary:
        summary = self.machine.summary(self.state)
        return summary.model_copy(update={"detail": {**summary.detail, "max_turns": self._most_turns()}})

    def _most_turns(self) -> int:
        """The members' answers and the vote, and, unless the vote decided, a review per valid answer and the
        synthesis."""
        vote = self.state.vote
        if vote is not None and vote.decision != ESCALATED:
            return len(self.config.members) + 1
        valid = len(self.state.valid_answers()) or len(self.config.members)
        return len(self.config.members) + 1 + valid + 1

    def call_plan(self) -> list[str]:
        """One call per member's answer (the vote asks no one), then, should the vote escalate, one per review
        and the synthesis: an upper bound, as a dry run prices it."""
        vote = self.state.vote
        if vote is not None and vote.decision != ESCALATED:
            return []
        valid = len(self.state.valid_answers()) or len(self.config.members)
        answering = 0 if vote is not None else len(self.config.members) - len(self.state.answers)
        return taking_turns(self.roles(), self.next_speaker(), answering + valid + 1)

    def planned_calls(self) -> list[PlannedCall]:
        """The council's calls; before the vote, the reviews and the synthesis are asked only if the panel splits,
        so a dry run expects the answers alone and prices the escalation apart (and in its upper bound)."""
        calls = super().planned_calls()
        if self.state.vote is not None:
            return calls
        answering = len(self.config.members) - len(self.state.answers)
        return [*calls[:answering], *(replace(call, when=SPLIT) for call in calls[answering:])]

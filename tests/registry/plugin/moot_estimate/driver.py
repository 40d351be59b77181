"""Estimate's engine driver and its ``moot run estimate`` command."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from moot import UserError
from moot.plugin import (
    RUN_HALTED,
    AgentRequest,
    Candidate,
    Driver,
    Outcome,
    PlannedCall,
    RecordExists,
    RunFlags,
    SealedPhase,
    SealedPhases,
    Summary,
    execute,
    read_text,
    reply_format_violation,
    run_options,
    start_record,
)
from moot_estimate import record
from moot_estimate.protocol import Config, Estimate, EstimateProtocol, number

SCHEMA = {
    "type": "object",
    "properties": {"estimate": {"type": "number"}, "reason": {"type": "string"}},
    "required": ["estimate", "reason"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class EstimateOptions:
    question: str
    estimators: tuple[str, ...] = ("a", "b", "c")
    rounds: int = 2


class EstimateDriver(Driver, SealedPhases):
    """Each round is a sealed phase: moot asks the estimators at once, none seeing another's estimate of the round,
    commits each by its digest, then :meth:`reveal` writes the round in one append."""

    protocol = "estimate"
    options_type = EstimateOptions

    def __init__(self, path: Path) -> None:
        self.record_path = path
        text, _ = read_text(path)
        parsed = record.parse(text or "")
        if parsed.config is None or parsed.violations:
            raise UserError(f"{path} is not a clean estimate record; run `moot check` on it.")
        self.config, self.machine = parsed.config, EstimateProtocol(parsed.config)
        self.failure: Outcome | None = None
        self.state = self.machine.replay(parsed.estimates).state

    @classmethod
    def start(cls, root: Path, options: EstimateOptions, started: str) -> EstimateDriver:
        path = record.path_for(root, options.question)
        if path.exists():
            raise RecordExists(path, f"{path} already exists; resume it with `moot resume {path}`.")
        config = Config(question=options.question, estimators=options.estimators, rounds=options.rounds)
        record.create(path, config)
        return cls(path)

    def roles(self) -> list[str]:
        return list(self.config.estimators)

    def sealed_phase(self) -> SealedPhase | None:
        if self.failure is not None or self.machine.outcome(self.state) is not None:
            return None
        waiting, round_ = self.machine.pending(self.state)
        # An estimator that failed is asked again on a resume; the others' committed estimates stand.
        return SealedPhase(f"round-{round_}", waiting, retry_failures=True)

    def next_speaker(self) -> str | None:
        return None  # every estimate is asked in a sealed round

    def sealed_text(self, turn: Any) -> str:
        return record.turn_text(turn)

    def reveal(self, phase: SealedPhase, answers: Mapping[str, Any], failures: Mapping[str, str], now: str) -> None:
        turns = [answers[role] for role in phase.roles if role in answers]
        if turns:
            self.state = record.RECORD.append(self.record_path, turns)
        if failures:  # the run halts, resumably: the record keeps the round open for the estimators that failed
            role, reason = next(iter(failures.items()))
            self.failure = Outcome(name=RUN_HALTED, reason=f"{reason}; `moot resume` asks {role} again")

    def request_for(self, role: str) -> AgentRequest:
        round_ = self.machine.expected(self.state)[1]
        seen = [e for e in self.state.estimates if e.round < round_]  # a round's estimates are made apart
        lines = "".join(f"- {e.estimator} (round {e.round}): {number(e.value)}: {e.reason}\n" for e in seen)
        prompt = (
            f"{self.config.question}\n\nYou are {role}, one of {len(self.config.estimators)} estimators; this is "
            f"round {round_} of {self.config.rounds}.\n"
            + (
                f"The estimates of the rounds before:\n{lines}Revise yours if their reasons convince you.\n"
                if seen
                else ""
            )
            + 'Reply with JSON: {"estimate": NUMBER, "reason": "why, in a sentence or two"}.'
        )
        return AgentRequest(prompt=prompt, json_schema=SCHEMA, max_tokens=300, role=role, protocol=self.protocol)

    def read_reply(self, role: str, text: str, now: str) -> Candidate:
        try:
            reply = json.loads(text)
            value, reason = reply["estimate"], " ".join(str(reply["reason"]).split())
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(value)
        except (ValueError, TypeError, KeyError):
            return Candidate(None, [reply_format_violation('answer with {"estimate": NUMBER, "reason": "..."}')])
        turn = Estimate(estimator=role, round=self.machine.expected(self.state)[1], value=value, reason=reason)
        return Candidate(turn, self.machine.validate(self.state, turn))

    def commit(self, turn: Any) -> None:
        self.state = record.RECORD.append(self.record_path, [turn])

    def fail(self, role: str, reason: str, now: str) -> Outcome:
        self.failure = Outcome(name=RUN_HALTED, reason=f"{reason}; `moot resume` asks {role} again")
        return self.failure

    def summary(self) -> Summary:
        summary = self.machine.summary(self.state)
        if self.failure is not None and summary.outcome is None:
            return summary.model_copy(update={"outcome": self.failure, "next_speaker": None})
        return summary

    def call_plan(self) -> list[str]:
        """The estimators the open round still waits for, then every estimator in each round after it."""
        if self.machine.outcome(self.state) is not None:
            return []
        waiting, round_ = self.machine.pending(self.state)
        return [*waiting, *(name for _ in range(round_, self.config.rounds) for name in self.config.estimators)]

    def planned_calls(self) -> list[PlannedCall]:
        """A round's prompt shows the rounds before it, never its own: the calls of the earlier rounds only."""
        size, open_calls = len(self.config.estimators), len(self.machine.pending(self.state)[0])
        return [
            PlannedCall(role, reads=tuple(range(0 if i < open_calls else open_calls + (i - open_calls) // size * size)))
            for i, role in enumerate(self.call_plan())
        ]


@run_options()
def run_estimate(
    question: Annotated[str, typer.Option("--question", help="What to estimate (a number).")],
    estimator: Annotated[
        list[str] | None, typer.Option("--estimator", help="An estimator's name (repeatable).")
    ] = None,
    rounds: Annotated[int, typer.Option("--rounds", min=1, max=5, help="Rounds of estimates.")] = 2,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """Estimators each give a number with a reason, round after round; the answer is the last round's median."""
    options = EstimateOptions(question, tuple(estimator or EstimateOptions.estimators), rounds)
    execute(start_record(EstimateDriver, options, flags, force=force), flags)

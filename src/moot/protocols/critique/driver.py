"""The Critique Loop's orchestration, as the seed's orchestrator skill does it.

- The orchestrator (moot) writes the header, never a turn.
- The first role may get the user's context; the partner never does: it reads only the dialogue.
- Each participant sees the dialogue file as it is on disk and answers with a CritiqueReply; moot
  fills in role, round, time and the awaited role, and appends the turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from moot.agents.base import AgentRequest
from moot.core.files import read_text
from moot.core.hollow import content_pattern
from moot.core.machine import Outcome, Summary
from moot.core.run_state import RUN_HALTED
from moot.core.turn_record import TurnWriter
from moot.engine.driver import Candidate, Driver, first_error, json_schema_of, reply_format_violation, taking_turns
from moot.engine.replies import parse_reply
from moot.errors import RecordExists, Severity, UserError, Violation
from moot.limits import require_subject
from moot.paths import record_place
from moot.protocols.critique import record
from moot.protocols.critique.machine import (
    RULES,
    TEMPLATES,
    CritiqueConfig,
    CritiqueProtocol,
    CritiqueReply,
    CritiqueState,
    CritiqueTurn,
    StatusKind,
)

ROLE_GUIDANCE = {
    "critic": "Challenge assumptions. Identify gaps, risks, and edge cases. Acknowledge when concerns are "
    "addressed. Don't be contrarian for its own sake: if something is solid, say so.",
    "reviewer": "Be specific and actionable. Distinguish blocking issues from suggestions. Approve when "
    "standards are met.",
    "partner": "Raise concerns, suggest alternatives, sanity-check decisions. Support the lead while providing "
    "honest feedback.",
    "proposer": "Drive discussion forward. Make concrete proposals. Incorporate valid critiques into revised "
    "proposals. Push back on critiques you disagree with and explain your reasoning.",
    "author": "Present work clearly. Respond to feedback: accept, push back with reasoning, or ask for clarification.",
    "lead": "Set direction, make decisions when stuck, keep progress moving.",
}
CUSTOM_GUIDANCE = "Use your role name as guidance for your perspective. Be a genuine collaborator, not a yes-person."

# A small model's bounds: the dialogue shown is cut to its latest part beyond this size (the header's
# facts are in the prompt itself), and the message is short so that its JSON ends within the budget.
# Other models see the dialogue up to their context and write as much as a turn needs.
COMPACT_DIALOGUE_CHARS = 6000
COMPACT_REPLY_TOKENS = 320
COMPACT_MESSAGE_CHARS = 400
CHARS_PER_TOKEN = 3  # a conservative guess for English text
COMPACT_LENGTH = "two to four sentences"
FULL_LENGTH = "as long as the point needs, from a few sentences to several paragraphs"


@dataclass(frozen=True)
class CritiqueOptions:
    topic: str
    roles: tuple[str, str] | None = None  # custom roles; without them the template's
    template: str | None = None  # planning | review | pair; default planning, or custom with roles
    max_rounds: int | None = None
    context: str | None = None  # the user's context: given to the first role only


class CritiqueDriver(Driver):
    protocol = "critique"
    options_type = CritiqueOptions

    def __init__(self, path: Path, context: str | None = None) -> None:
        self.record_path = path
        self.context = context
        self.failure: Outcome | None = None
        self.human_note: str | None = None  # a person's answer to a STUCK turn, for the next speaker
        self._load()

    @classmethod
    def resume(cls, path: Path, context: str | None = None) -> CritiqueDriver:
        repaired = record.repair(path)
        driver = cls(path, context)
        driver.repaired_chain = repaired
        return driver

    @classmethod
    def start(cls, root: Path, options: CritiqueOptions, started: str) -> CritiqueDriver:
        require_subject("topic", options.topic)
        template = options.template or ("custom" if options.roles else "planning")
        if options.roles is not None and template != "custom":
            raise UserError("give either a template or two roles, not both.")
        try:
            if template in TEMPLATES:
                config = CritiqueConfig.from_template(
                    template,  # type: ignore[arg-type]
                    topic=options.topic,
                    started=started,
                    max_rounds=options.max_rounds,
                    directory=str(root),
                )
            else:
                if options.roles is None:
                    raise UserError(f"template {template!r} is unknown; use planning, review, pair or two roles.")
                config = CritiqueConfig.custom(
                    options.roles,
                    topic=options.topic,
                    started=started,
                    max_rounds=options.max_rounds or 5,
                    directory=str(root),
                )
        except ValueError as exc:
            raise UserError(f"cannot start the dialogue: {first_error(exc)}.") from exc
        path = record.dialogue_path(root, options.topic)
        record_place(root, path.parent.relative_to(root))
        try:
            record.create(path, config)
        except FileExistsError as exc:
            raise RecordExists(
                path, f"{path} already exists; resume it with `moot resume {path}` or choose another topic."
            ) from exc
        return cls(path, options.context)

    def _load(self) -> None:
        text, problems = read_text(self.record_path)
        if text is None:
            raise UserError(f"cannot read {self.record_path}: {problems[0].message}")
        parsed, violations = record.parse(text, str(self.record_path))
        if parsed is None:
            first = next(v for v in violations if v.is_error)
            raise UserError(f"{self.record_path} is not a valid dialogue ({first}); run `moot check` on it.")
        self.text = text
        self.config = parsed.config
        self.protocol_machine = CritiqueProtocol(parsed.config)
        self.state: CritiqueState = self.protocol_machine.replay(parsed.turns).state
        self.writer: TurnWriter[CritiqueConfig, CritiqueTurn, CritiqueState, record.CritiqueEntry] | None = None

    def roles(self) -> list[str]:
        return list(self.config.roles)

    def next_speaker(self) -> str | None:
        if self.failure is not None:
            return None
        last = self.state.last
        if self.human_note is not None and last is not None and last.status is StatusKind.STUCK:
            return self.config.other(last.role)  # the seed resumes the role that should respond next
        return self.protocol_machine.next_speaker(self.state)

    def answer_stuck(self, note: str) -> None:
        """A person answered the escalation; the other participant continues with that answer."""
        self.human_note = note

    def request_for(self, role: str) -> AgentRequest:
        """The topic, the user's context and the dialogue so far as the stable prefix, one part a turn; then the
        person's answer to a STUCK turn, the role and its rules, and what to write.

        A model whose server caches prefixes gets its role and rules after the dialogue, so that both roles'
        requests share one prefix and one cache; any other participant keeps them in the system message, where
        the small model's turns were measured.
        """
        rules = self.role_rules(role)
        bounds = self.bounds(role)
        tokens = bounds.turn_tokens(COMPACT_REPLY_TOKENS)
        shown = COMPACT_DIALOGUE_CHARS if bounds.compact else (bounds.context_tokens - tokens) * CHARS_PER_TOKEN
        turns = _tail(self.text[self.text.find("\n---\n") + 5 :].strip(), shown)
        private = bool(self.context) and role == self.config.roles[0]
        parts = [*self.shared_context(), f"Topic: {self.config.topic}\n\n"]
        if private:
            parts.append(f"Context from the user (only you have it):\n{self.context}\n\n")
        if turns:
            parts += _turn_parts(f"The dialogue so far ({self.record_path.name}):\n", turns)
        instruction = [] if turns else ["No turns yet: you open."]
        if self.human_note is not None:
            instruction.append(f"A person answered the STUCK escalation:\n{self.human_note}")
        narrowed = not self.caches_prefix(role)
        if not narrowed:
            instruction.append(rules)
        round_ = self.protocol_machine.expected_round(self.state)
        instruction.append(
            f"Write your turn as the {role} for round {round_} of {self.config.max_rounds}: "
            f"message = your own words ({COMPACT_LENGTH if bounds.compact else FULL_LENGTH}), status, "
            "summary (only with DONE)."
        )
        return AgentRequest.with_prefix(
            parts,
            "\n\n".join(instruction),
            system=rules if narrowed else None,
            json_schema=self._reply_schema(role),
            max_tokens=tokens,
            role=role,
            protocol=self.protocol,
            cache_key=None if narrowed or private else self.shared_cache_key(),
        )

    def role_rules(self, role: str) -> str:
        """Who ``role`` is and the dialogue's rules as it reads them."""
        other = self.config.other(role)
        guidance = ROLE_GUIDANCE.get(role, CUSTOM_GUIDANCE)
        return (
            f"You are the {role} in a structured dialogue with the {other} about: {self.config.topic}.\n"
            f"{guidance}\n"
            "Rules: respond to the latest turn. Status AWAITING passes the "
            f"turn to the {other}. PROPOSING_DONE says you believe the dialogue can conclude. DONE only confirms "
            f"the {other}'s PROPOSING_DONE and needs a summary of what was agreed. STUCK means a human must decide; "
            "explain the blocker in the message."
        )

    def shared_context(self) -> list[str]:
        """Fixed context both roles read before the topic (each part ending in a blank line); none here."""
        return []

    def _reply_schema(self, role: str) -> dict[str, object]:
        """The reply schema; narrowed to the statuses that are legal now, so that decoding cannot pick another,
        except for a model whose server caches prefixes (one schema for all its turns; see Driver.caches_prefix).

        DONE is offered only to confirm the other's PROPOSING_DONE (Rule 5), and concluding or
        escalating only once both parties have spoken: a dialogue needs two voices.
        """
        schema = json_schema_of(CritiqueReply)
        if self.caches_prefix(role):
            return schema
        allowed = self._legal_statuses()
        schema["properties"]["status"]["enum"] = allowed
        if "DONE" not in allowed:
            schema["properties"]["summary"]["maxLength"] = 0
        if self.bounds(role).compact:
            # Bounded strings keep a small model from running past max_tokens in the middle of the JSON.
            schema["properties"]["message"]["maxLength"] = COMPACT_MESSAGE_CHARS
            # and opening with a letter or digit keeps it from a message of brackets alone (CRITIQUE_EMPTY_MESSAGE).
            schema["properties"]["message"]["pattern"] = content_pattern(COMPACT_MESSAGE_CHARS)
            schema["properties"]["summary"]["maxLength"] = COMPACT_MESSAGE_CHARS if "DONE" in allowed else 0
        return schema

    def _legal_statuses(self) -> list[str]:
        last = self.state.last
        if last is not None and last.status is StatusKind.PROPOSING_DONE:
            return ["DONE", "AWAITING"]
        if self.state.turns < 2:
            return ["AWAITING"]
        return ["AWAITING", "PROPOSING_DONE", "STUCK"]

    def read_reply(self, role: str, text: str, now: str) -> Candidate:
        reply, problem = parse_reply(text, CritiqueReply)
        if reply is None:
            return Candidate(None, [problem] if problem else [])
        try:
            turn = self.protocol_machine.turn_from_reply(self.state, role, reply, now)
        except ValueError as exc:
            return Candidate(None, [RULES.violation("CRITIQUE_TURN_HEADER", first_error(exc))])
        violations = [_in_a_run(v) for v in self.protocol_machine.validate(self.state, turn)]
        legal = self._legal_statuses()
        if self.caches_prefix(role) and reply.status not in legal:
            # What the narrowed schema leaves out, asked of a model that gets the whole schema (see _reply_schema).
            violations.append(
                reply_format_violation(f"status {reply.status} is not legal now; use {' or '.join(legal)}.")
            )
        candidate = Candidate(turn, violations)
        return candidate

    def commit(self, turn: CritiqueTurn) -> None:
        try:
            if self.writer is None:  # opening it checks the whole record and its chain once
                self.writer = record.RECORD.writer(self.record_path)
            appended = self.writer.append([turn])
        except BaseException:
            self._load()  # on a refusal the record changed under us; the caller sees the error
            raise
        # The writer keeps the text and the validated state in memory: the record is not read back.
        self.text, self.state = self.writer.text, appended.state
        self.human_note = None

    def fail(self, role: str, reason: str, now: str) -> Outcome:
        # The orchestrator never writes a turn, so the failure is the run's outcome, not the record's; it is
        # not the protocol's STUCK (which asks a person to decide): the engine records it as a run halt.
        self.failure = Outcome(name=RUN_HALTED, reason=reason)
        return self.failure

    def summary(self) -> Summary:
        summary = self.protocol_machine.summary(self.state)
        summary = summary.model_copy(update={"detail": {**summary.detail, "max_turns": 2 * self.config.max_rounds}})
        if self.failure is not None and summary.outcome is None:
            return summary.model_copy(update={"outcome": self.failure, "next_speaker": None})
        return summary

    def extend(self, extra_rounds: int) -> None:
        """The seed's 'continue for another 5 rounds?': raise Max rounds in the header."""
        record.extend(self.record_path, extra_rounds)
        self._load()

    @classmethod
    def limit_refusal(cls, option: str) -> str | None:
        if option == "max_rounds":
            return None
        return "a Critique Loop's limit is in rounds (two turns each): give --max-rounds instead."

    def raise_limit(self, option: str, value: int) -> None:
        """The orchestrator's extension (as ``moot critique extend`` makes it): 'Max rounds' in the header goes up,
        the turns stay as they are, so the record stays valid and the dialogue goes on from where it stopped."""
        current = self.config.max_rounds
        outcome = self.protocol_machine.outcome(self.state)
        if outcome is not None and outcome.name != "MAX_ROUNDS":
            raise UserError(
                f"{self.record_path} ended with {outcome.name}, not at its round limit; more rounds would not reopen it."
            )
        if value <= current:
            raise UserError(f"{self.record_path} already allows {current} round(s); give --max-rounds above {current}.")
        try:
            self.extend(value - current)
        except ValueError as exc:
            raise UserError(f"--max-rounds {value} is too high: {first_error(exc)}.") from exc

    def call_plan(self) -> list[str]:
        """The two roles taking turns from the first speaker, two turns a round, for every round."""
        return taking_turns(self.roles(), self.next_speaker(), 2 * self.config.max_rounds)


def _in_a_run(violation: Violation) -> Violation:
    """Consensus needs both parties: a run refuses the DONE that confirms nobody's PROPOSING_DONE.

    The seed only warns (CRITIQUE_DONE_CONFIRMS), and ``moot check`` keeps that warning for records
    written by hand; a run sends the turn back instead, so one speaker cannot end the dialogue alone.
    A turn that copies an earlier one (CRITIQUE_ECHO) stays a warning in a run too: the embedded model
    hands back the same words on every repair, so refusing it ends its runs RUN_HALTED.
    """
    if violation.rule == "CRITIQUE_DONE_CONFIRMS":
        return violation.model_copy(update={"severity": Severity.ERROR})
    return violation


def _turn_parts(heading: str, turns: str) -> list[str]:
    """The dialogue as prefix parts, one a turn (the first after ``heading``), each ending as it does in the
    prompt: the parts of the next request begin with these."""
    starts = [0, *(match.start() for match in _TURN_START.finditer(turns, 1))]
    pieces = [
        turns[start:end].rstrip("\n") + "\n\n" for start, end in zip(starts, [*starts[1:], len(turns)], strict=True)
    ]
    return [heading + pieces[0], *pieces[1:]]


_TURN_START = re.compile(r"^---\n\n## \[", re.MULTILINE)  # a turn as render_turn writes it


def _tail(turns: str, chars: int) -> str:
    """The latest turns of the dialogue, within the context the participant has."""
    if len(turns) <= chars:
        return turns
    return "[… earlier turns omitted …]\n" + turns[-chars:]

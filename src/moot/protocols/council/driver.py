"""The Council's orchestration: two sealed stages asked in parallel, then the chairman.

- Stage 1 asks every member the question at once (a sealed phase); no member sees another's answer.
- Stage 2 asks every member with a valid answer at once to rank the others' answers, shown as
  Answer A, B, … in the order the council's seed gives that reviewer, with every member name and
  model taken out. The prompt follows karpathy/llm-council's ranking prompt (evaluate each answer,
  then rank best to worst), as one JSON object so the ranking is read, not scraped from prose.
- Each answer and each review also states the member's confidence, 0.0 to 1.0 (one of moot's 0.05 steps, so a
  grammar-bound model writes a legal one), where the council's header names its aggregation; with the
  ``confidence`` aggregation it weighs that reviewer's Borda points.
- Stage 3 asks the chairman (a member, or a separate agent) for the final answer, showing every
  answer and review with their authors, the Borda ranking and Kendall's W. A chairman whose agent fails,
  or that gives no valid synthesis after its repairs, is recorded as failed (:meth:`CouncilDriver.substitute`)
  and the top-ranked member with a valid answer writes the synthesis instead.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from moot.agents.base import AgentRequest
from moot.core.confidence import BANDS, confidence_schema
from moot.core.machine import Outcome, Summary, sealed_digest
from moot.engine.driver import Candidate, Driver, PlannedCall, first_error, reply_format_violation, taking_turns
from moot.engine.sealed import SealedPhase, SealedPhases
from moot.engine.session import parse_member as parse_member  # where moot review's --member is read too
from moot.errors import ProtocolViolationError, RecordExists, UserError, Violation
from moot.limits import require_subject
from moot.paths import record_place
from moot.protocols.council import record
from moot.protocols.council.machine import (
    BORDA,
    CHAIRMAN,
    CONFIDENCE,
    QUORUM,
    Answer,
    ChairmanFailure,
    CouncilConfig,
    CouncilTurn,
    Dissent,
    Member,
    Review,
    Synthesis,
    borda,
    fallback_for,
    first_place_text,
    kendall_w,
    label,
    points_text,
    ranked_first,
    redact,
    review_order,
    rounded_w,
    shown_parts,
)

# A small model's bounds: a concise answer of about 130 words. llama.cpp turns each maxLength into a grammar
# rule repeated that many times and refuses the grammar at 1500 characters. Its token caps leave room for the
# JSON around the text (about 4 characters a token). Other models get no character caps and their own budget.
ANSWER_CHARS = 800
REASON_CHARS = 240
ANSWER_MAX_TOKENS = 400
REVIEW_MAX_TOKENS = 400
SYNTHESIS_MAX_TOKENS = 700
SEED_BOUND = 2**32


@dataclass(frozen=True)
class CouncilOptions:
    question: str
    members: Sequence[Sequence[str]]  # (name, agent spec) pairs
    chairman: str | None = None  # a separate chairman's agent spec; without one the first member chairs
    seed: int | None = None  # the seed of the review shuffles; drawn at random when not given
    quorum: int = QUORUM  # the fewest valid answers that let the council go on to its reviews
    aggregate: str = BORDA  # how the reviews' rankings are aggregated: borda, or confidence (weighted)

    def agent_specs(self) -> dict[str, str]:
        """Each role's agent spec as these options name it (the members', and a separate chairman's)."""
        specs = {str(member[0]): str(member[1]) for member in self.members if len(member) == 2}
        return {**specs, CHAIRMAN: self.chairman} if self.chairman else specs


class AnswerReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str
    confidence: float | None = None  # asked for where the council's header names its aggregation


class RankedAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str
    reason: str


class ReviewReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ranking: list[RankedAnswer]
    confidence: float | None = None


class DissentReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    member: str
    position: str
    why_not_adopted: str


class SynthesisReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str
    basis: str
    dissent: list[DissentReply]


def _text(max_chars: int, compact: bool) -> dict[str, Any]:
    """A non-empty text field, capped at ``max_chars`` for a small (compact) model only."""
    return {"type": "string", "minLength": 1, "maxLength": max_chars} if compact else {"type": "string", "minLength": 1}


def _naming(member: str, max_side: int) -> dict[str, Any]:
    """One line that names ``member`` as a word: a grammar-bound model then cannot forget to cite the ranking.

    A pattern, as the Agora's text fields are: quotes, backslashes and control characters are left out, so
    each character is one character of the reply. Member names hold no pattern syntax (letters, digits, - and _).
    """
    side = rf'[^"\\\x00-\x1f]{{0,{max_side}}}'
    return {"type": "string", "pattern": rf"^({side} )?{member}[ .,;:!]{side}$"}


ANSWER_CONFIDENCE = (
    "\n\nAlso give 'confidence': how likely your answer is to be right, from 0.0 to 1.0 ("
    + BANDS
    + "). Say honestly how sure you are; a low confidence is no failure."
)
REVIEW_CONFIDENCE = (
    " Also give 'confidence': how sure you are that your ranking is right, from 0.0 to 1.0 ("
    + BANDS
    + "). If you could not tell the answers apart, say so with a low confidence."
)


def with_confidence(schema: dict[str, Any], confident: bool) -> dict[str, Any]:
    """``schema`` with a required ``confidence`` (one of moot's confidence steps) last, when ``confident``."""
    if not confident:
        return schema
    return {
        **schema,
        "properties": {**schema["properties"], "confidence": confidence_schema()},
        "required": [*schema["required"], "confidence"],
    }


def _review_schema(labels: list[str], compact: bool, confident: bool = False) -> dict[str, Any]:
    """A review: every answer's label once, best first, each with a reason (and the reviewer's confidence)."""
    item = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": labels}, "reason": _text(REASON_CHARS, compact)},
        "required": ["answer", "reason"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {"ranking": {"type": "array", "items": item, "minItems": len(labels), "maxItems": len(labels)}},
        "required": ["ranking"],
        "additionalProperties": False,
    }
    return with_confidence(schema, confident)


def _synthesis_schema(top: str, others: list[str], compact: bool) -> dict[str, Any]:
    """The final answer: its text, a basis naming the top-ranked member, and one dissent for each other member."""
    dissent_item = {
        "type": "object",
        "properties": {
            "member": {"type": "string", "enum": others},
            "position": _text(REASON_CHARS, compact),
            "why_not_adopted": _text(REASON_CHARS, compact),
        },
        "required": ["member", "position", "why_not_adopted"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "answer": _text(ANSWER_CHARS, compact),
            "basis": _naming(top, REASON_CHARS // 2 if compact else 4 * REASON_CHARS),
            "dissent": {"type": "array", "items": dissent_item, "minItems": len(others), "maxItems": len(others)},
        },
        "required": ["answer", "basis", "dissent"],
        "additionalProperties": False,
    }


class CouncilDriver(Driver, SealedPhases):
    protocol = "council"
    options_type = CouncilOptions

    def __init__(self, path: Path) -> None:
        self.record_path = path
        self._load()

    @classmethod
    def resume(cls, path: Path, context: str | None = None) -> CouncilDriver:
        repaired = record.repair(path)
        driver = cls(path)
        driver.repaired_chain = repaired
        return driver

    @staticmethod
    def config_fields(options: CouncilOptions, started: str) -> dict[str, Any]:
        """The header's fields ``options`` give (a council's and a panel that builds on it): the question, the
        members, the chairman, the seed (drawn when none is given), the start, the quorum and the aggregation."""
        require_subject("question", options.question)
        members = tuple(Member(name=name, model=spec) for name, spec in options.members)
        return {
            "question": record.clean_text(options.question),
            "members": members,
            "chairman": CHAIRMAN if options.chairman else (members[0].name if members else ""),
            "chairman_model": options.chairman or None,
            "seed": options.seed if options.seed is not None else secrets.randbelow(SEED_BOUND),
            "started": started,
            "quorum": options.quorum,
            "aggregate": options.aggregate,
        }

    @classmethod
    def start(cls, root: Path, options: CouncilOptions, started: str) -> CouncilDriver:
        config = CouncilConfig(**cls.config_fields(options, started))
        problems = config.problems()
        if problems:
            raise UserError(
                f"cannot convene the council: {problems[0]}; fix the --question, --member, --quorum or --aggregate "
                "options."
            )
        path = record.council_path(root, config.question)
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
            raise UserError(f"{self.record_path} is not a valid council ({first}); run `moot check` on it.") from None
        self.config: CouncilConfig = self.machine.config

    # --- who is asked ------------------------------------------------------------------------

    def roles(self) -> list[str]:
        return self.config.names + ([CHAIRMAN] if self.config.chairman == CHAIRMAN else [])

    def agent_specs(self) -> dict[str, str]:
        """Each role's agent spec as the record names it, so a resumed council asks the same models."""
        specs = {member.name: member.model for member in self.config.members}
        if self.config.chairman_model is not None:
            specs[CHAIRMAN] = self.config.chairman_model
        return specs

    def sealed_phase(self) -> SealedPhase | None:
        stage = self.machine.stage(self.state)
        if stage in (1, 2):
            return SealedPhase(f"stage-{stage}", tuple(self.machine.pending(self.state)))
        return None

    def next_speaker(self) -> str | None:
        return self.machine.next_speaker(self.state) if self.machine.stage(self.state) == 3 else None

    # --- prompts -----------------------------------------------------------------------------

    def request_for(self, role: str) -> AgentRequest:
        stage = self.machine.stage(self.state)
        if stage == 1:
            return self._answer_request(role)
        if stage == 2:
            return self._review_request(role)
        return self._synthesis_request(role)

    def _answer_request(self, role: str) -> AgentRequest:
        system = (
            f"You are one of {len(self.config.members)} members of a council. Each member answers the same question "
            "on their own; the others then review the answers anonymously. Give your best, self-contained answer."
        )
        schema = {
            "type": "object",
            "properties": {"answer": _text(ANSWER_CHARS, self.bounds(role).compact)},
            "required": ["answer"],
            "additionalProperties": False,
        }
        confident = self.config.confident
        instruction = ANSWER_CONFIDENCE if confident else ""
        return self._request(
            role,
            system,
            ([f"Question: {self.config.question}"], instruction),
            with_confidence(schema, confident),
            ANSWER_MAX_TOKENS,
        )

    def _pending_review(self, role: str) -> Review:
        answered = [answer.member for answer in self.state.valid_answers()]
        return Review(reviewer=role, shown=tuple(review_order(self.config.seed, role, answered)))

    def _review_request(self, role: str) -> AgentRequest:
        shown = self._pending_review(role).shown
        labels = [label(index) for index in range(len(shown))]
        # The question and the answers in the order this reviewer is shown them are the stable prefix (of its
        # repairs: each reviewer is shown its own order).
        material = shown_parts(self.config, self.state, self._pending_review(role))
        parts = [
            f"You are evaluating different answers to the following question.\n\n{material[0]}",
            *(f"\n\n{part}" for part in material[1:]),
        ]
        instruction = (
            "\n\nYour task: evaluate each answer on its own (what it does well, what it does poorly), then rank all "
            f"of them from best to worst: {', '.join(labels)}, each exactly once, each with a one- or two-sentence "
            "reason. Refer to answers only by their labels; the authors are anonymous."
            + (REVIEW_CONFIDENCE if self.config.confident else "")
        )
        schema = _review_schema(labels, self.bounds(role).compact, self.config.confident)
        system = "You are a member of a council reviewing anonymous answers. Judge the answers, not their authors."
        # The system message and prompt name no member and no model: redact() took them out of the answers.
        redacted = ([redact(part, self.config) for part in parts], redact(instruction, self.config))
        return self._request(role, system, redacted, schema, REVIEW_MAX_TOKENS)

    def repair_prompt(self, request: AgentRequest, reply: str, violations: list[Violation]) -> AgentRequest:
        """A review sent back is redacted too: the identity it named (and the rule's message that quotes it) is
        shown as [redacted] in place, so the repair confirms no guess about who wrote what."""
        repaired = super().repair_prompt(request, reply, violations)
        if self.machine.stage(self.state) != 2:
            return repaired
        return repaired.model_copy(update={"prompt": redact(repaired.prompt, self.config)})

    def _synthesis_request(self, role: str) -> AgentRequest:
        aggregate = borda(self.config, self.state)
        others = [member for member, _ in aggregate[1:]]
        answers = [f"{a.member}'s answer:\n{a.text}" for a in self.state.valid_answers()]
        reviews = [
            f"{review.reviewer}'s ranking, best first:\n"
            + "\n".join(f"- {m}: {reason}" for m, reason in zip(review.ranked_members(), review.reasons, strict=False))
            for review in self.state.reviews
            if review.valid
        ]
        weighted = "confidence-weighted " if self.config.aggregate == CONFIDENCE else ""
        ranking = "\n".join(
            f"{rank}. {member} ({points_text(points)} {weighted}Borda points)"
            for rank, member, points in record.ranked_rows(aggregate)
        )
        agreement = record.agreement_text(kendall_w(self.state))
        tied = first_place_text(aggregate) if len(ranked_first(aggregate)) > 1 else None
        tie = f"The ranking is a tie: {tied}; say so in 'basis' rather than crown one. " if tied else ""
        # The question, the answers and the reviews in the record's order are the stable prefix.
        parts = [
            f"Question: {self.config.question}",
            *(f"\n\n{answer}" for answer in answers),
            "\n\nThe members' reviews:\n" + (reviews[0] if reviews else ""),
            *(f"\n\n{review}" for review in reviews[1:]),
        ]
        instruction = (
            f"\n\nThe aggregate ranking:\n{ranking}\nAgreement between the reviewers (Kendall's W): {agreement}\n\n"
            "Write the council's final answer. In 'basis', say how the ranking shaped it and name the top-ranked "
            f"member, {aggregate[0][0]}. {tie}In 'dissent', give one entry for each of {', '.join(others)}: the "
            "position of their answer and why it was not adopted (or which part was)."
        )
        schema = _synthesis_schema(aggregate[0][0], others, self.bounds(role).compact)
        system = "You chair a council. You write its final answer from the members' answers and their reviews."
        failed = self.state.chairman_failure
        if failed is not None:  # the member writing in a failed chairman's place
            system += f" The chairman, {failed.chairman}, failed; you write the final answer in its place."
        return self._request(role, system, (parts, instruction), schema, SYNTHESIS_MAX_TOKENS)

    def _request(
        self, role: str, system: str, prompt: tuple[list[str], str], schema: dict[str, Any], max_tokens: int
    ) -> AgentRequest:
        """A request whose ``prompt`` is its fixed parts, in order, and its instruction. ``max_tokens`` is a small
        model's budget; other agents get their own (see TurnBounds).

        Its prefix is not marked: each prompt is asked once (a stage's members all at once, each reviewer in
        its own order), so a provider cache written for it would never be read, and writing costs more than
        reading the prompt uncached.
        """
        parts, instruction = prompt
        return AgentRequest(
            prompt="".join(parts) + instruction,
            prefix_ends=(),
            system=system,
            json_schema=schema,
            max_tokens=self.bounds(role).turn_tokens(max_tokens),
            role=role,
            protocol=self.protocol,
        )

    # --- replies -----------------------------------------------------------------------------

    def read_reply(self, role: str, text: str, now: str) -> Candidate:
        stage = self.machine.stage(self.state)
        try:
            # strict=False takes a raw line break inside a string: answers run to paragraphs, and a grammar-bound
            # model (llama.cpp) writes the break itself rather than \n.
            data = json.loads(text, strict=False)
        except (ValueError, RecursionError):
            return Candidate(
                None, [reply_format_violation("the reply is not a JSON object; answer with one JSON object.")]
            )
        try:  # a \ud800 escape decodes to a lone surrogate, which no UTF-8 record can hold
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            surrogate = "the reply holds a lone surrogate (an escape from \\ud800 to \\udfff); send plain text."
            return Candidate(None, [reply_format_violation(surrogate)])
        try:
            turn = self._turn(stage, role, data, now)
        except ValidationError as exc:
            return Candidate(
                None, [reply_format_violation(f"the reply does not match the schema ({first_error(exc)}).")]
            )
        return Candidate(turn, self.machine.validate(self.state, turn))

    def _turn(self, stage: int | None, role: str, data: Any, now: str) -> CouncilTurn:
        if stage == 1:
            stated = AnswerReply.model_validate(data)
            answer = Answer(member=role, at=now, text=record.clean_text(stated.answer), confidence=stated.confidence)
            return answer.model_copy(update={"digest": sealed_digest(record.sealed_text(answer))})
        if stage == 2:
            review_reply = ReviewReply.model_validate(data)
            review = self._pending_review(role).model_copy(
                update={
                    "at": now,
                    "ranking": tuple(item.answer.strip() for item in review_reply.ranking),
                    "reasons": tuple(record.one_line(item.reason) for item in review_reply.ranking),
                    "confidence": review_reply.confidence,
                }
            )
            return review.model_copy(update={"digest": sealed_digest(record.sealed_text(review))})
        reply = SynthesisReply.model_validate(data)
        return Synthesis(
            chairman=role,
            at=now,
            ranking=tuple(borda(self.config, self.state)),
            agreement=rounded_w(kendall_w(self.state)),
            answer=record.clean_text(reply.answer),
            basis=record.clean_text(reply.basis),
            dissent=tuple(
                Dissent(
                    member=d.member,
                    position=record.one_line(d.position),
                    why_not_adopted=record.one_line(d.why_not_adopted),
                )
                for d in reply.dissent
            ),
        )

    def sealed_text(self, turn: Any) -> str:
        assert isinstance(turn, (Answer, Review))
        return record.sealed_text(turn)

    # --- writing -----------------------------------------------------------------------------

    def reveal(self, phase: SealedPhase, answers: Mapping[str, Any], failures: Mapping[str, str], now: str) -> None:
        turns: list[CouncilTurn] = []
        for role in phase.roles:
            if role in answers:
                turns.append(answers[role])
            elif phase.name == "stage-1":
                turns.append(Answer(member=role, at=now, failure=failures[role]))
            else:
                turns.append(Review(reviewer=role, at=now, failure=failures[role]))
        self._write(turns)
        reviewed = {m for review in self.state.reviews if review.valid for m in review.ranked_members()}
        unreviewed = [a.member for a in self.state.valid_answers() if a.member not in reviewed]
        if phase.name == "stage-2" and unreviewed:
            self._write([], failure=f"no valid review ranked the answer of {', '.join(unreviewed)}")

    def commit(self, turn: CouncilTurn) -> None:
        self._write([turn])

    def _write(self, turns: Sequence[CouncilTurn], failure: str | None = None) -> None:
        try:
            record.append_turns(self.record_path, turns, failure=failure)
        finally:
            self._load()

    def substitute(self, role: str, reason: str, now: str) -> bool:
        """A failed chairman is recorded with its fallback, the top-ranked member with a valid answer, who writes
        the synthesis instead: True when that was written (the run goes on). A failed fallback, or a failure in
        another stage, is not substituted (False)."""
        state = self.state
        if self.machine.stage(state) != 3 or state.chairman_failure is not None or role != self.config.chairman:
            return False
        fallback = fallback_for(self.config, state)
        if fallback is None:
            return False
        self._write([ChairmanFailure(chairman=role, at=now, failure=reason, fallback=fallback)])
        return True

    def fail(self, role: str, reason: str, now: str) -> Outcome:
        if self.machine.outcome(self.state) is None:
            self._write([], failure=reason)
        outcome = self.machine.outcome(self.state)
        assert outcome is not None
        return outcome

    def summary(self) -> Summary:
        summary = self.machine.summary(self.state)
        valid = len(self.state.valid_answers()) or len(self.config.members)
        total = len(self.config.members) + valid + 1
        return summary.model_copy(update={"detail": {**summary.detail, "max_turns": total}})

    def call_plan(self) -> list[str]:
        """One call per member's answer, one per review (one for each valid answer) and the synthesis, counted as
        the roles in rotation from the first speaker."""
        valid = len(self.state.valid_answers()) or len(self.config.members)
        return taking_turns(self.roles(), self.next_speaker(), len(self.config.members) + valid + 1)

    def planned_calls(self) -> list[PlannedCall]:
        """A new council's calls by stage: the answers see nothing (sealed), each review reads every answer and
        ranks them, the synthesis reads the answers and the reviews."""
        plan = self.call_plan()
        if self.machine.stage(self.state) != 1 or len(plan) < 2:
            return super().planned_calls()
        answers = len(self.config.members)
        answered = tuple(range(answers))
        calls = [PlannedCall(role, reads=()) for role in plan[:answers]]
        labels = [label(index) for index in range(answers)]
        for role in plan[answers:-1]:
            schema = _review_schema(labels, self.bounds(role).compact, self.config.confident)
            calls.append(PlannedCall(role, reads=answered, schema=schema))
        chairman, names = plan[-1], self.config.names
        schema = _synthesis_schema(names[0], names[1:], self.bounds(chairman).compact)
        return [*calls, PlannedCall(chairman, reads=tuple(range(len(calls))), schema=schema)]

"""The Socratic Duel's orchestration, as the seed's skill does it, with moot as the coordinator.

- The source document is read-only material: moot reads it, never writes it. The topic is
  ``--topic``, else the source's first heading, else its file stem.
- Two participants (default ``advocate`` and ``skeptic``, harness ``moot``, model = the agent spec)
  alternate; moot numbers the turns, checks them with the protocol and appends them to the debate
  artifact under ``debates/``.
- A participant answers with a :class:`GuidedDuelReply`. Its evidence names a *section* of the source
  (an enum of the source's headings) and moot writes the citation (`` `path` § Heading ``), so even a
  small model produces support of a valid kind; moot turns the reply into the protocol's
  :class:`~moot.protocols.duel.machine.DuelReply` and that into the turn.
- When the turns reach ACCEPTED_CONSENSUS, DISSENT or MAX_TURNS moot writes the Terminal Conclusion;
  when a participant gives no valid turn (or its agent fails) moot concludes INVALIDATED with the
  reason. Candidate convergence is reported in ``summary().detail`` and never ends the duel.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from moot.agents.base import AgentRequest
from moot.agents.tokens import clip_to_tokens, estimate_tokens
from moot.core.files import read_text
from moot.core.hollow import content_pattern
from moot.core.machine import Outcome, Summary
from moot.core.participant_defaults import UNKNOWN_MODEL
from moot.engine.driver import (
    Candidate,
    Driver,
    PlannedCall,
    first_error,
    json_schema_of,
    reply_format_violation,
    taking_turns,
)
from moot.engine.grounding import Grounding, offered_items
from moot.engine.loop import now_minutes
from moot.engine.replies import parse_reply
from moot.errors import ProtocolViolationError, RecordChangedError, RecordExists, UserError, Violation
from moot.limits import require_subject
from moot.paths import record_place
from moot.protocols.duel import grounding as duel_grounding
from moot.protocols.duel import record
from moot.protocols.duel.machine import (
    MAX_TURNS,
    SOURCE_SUFFIXES,
    DuelConfig,
    DuelProtocol,
    DuelReply,
    DuelState,
    DuelTurn,
    OutcomeName,
    Participant,
    ReplyCounterpoint,
    Stance,
    UnresolvedItem,
    computed_outcome,
    draft_conclusion,
    infer_topic,
    markdown_headings,
)

HARNESS = "moot"
DEFAULT_ROLES = ("advocate", "skeptic")

ROLE_GUIDANCE = {
    "advocate": "Defend the source document's proposal where the evidence supports it, and concede what it gets wrong.",
    "skeptic": "Test the source document's claims: look for gaps, risks and unsupported assumptions; agree only when "
    "the evidence is adequate.",
}
CUSTOM_GUIDANCE = "Argue from your role's perspective and follow the evidence, not your peer's confidence."

# The reply's budget is kept free in the participant's context and the prompt is fitted into the rest,
# the source document being cut first (it is the largest part).
COMPACT_REPLY_TOKENS = 640
TEMPLATE_TOKENS = 48  # the chat template's own tokens
HISTORY_SHARE = 0.4  # at most this part of what the instructions leave goes to earlier turns
MAX_SECTIONS = 40
SECTION_CHARS = 80

# A small model's caps, added to its schema so that it cannot run past max_tokens in the middle of the
# JSON: characters per text field (by schema definition, "" for the reply itself), each a one-line text that
# opens with a letter or digit (core.hollow: no blank or bracket-only item to send back), one item per list,
# and evidence that names its section without a principle (optional in the protocol). The embedded model
# writes about 20 tokens a second on two quiet cores and one or two on a busy machine: with two items per list
# and principles its turns on a 20-line design ran to 360-570 tokens, and a blank item cost a whole repair;
# with these, 210-280 tokens.
COMPACT_CHARS = {
    "": {"position": 160, "novel_argument": 160, "limitation": 100, "agreements": 100, "blocking_issues": 100},
    "GuidedCounterpoint": {"claim": 120},
    "StanceRevision": {"why": 100},
}
COMPACT_ITEMS = 1
COMPACT_DROPPED = {"Evidence": ("principle",)}
MAX_ITEMS = 6  # list lengths for everyone: room for a full answer, not an essay per list

_REPLY = ConfigDict(frozen=True, extra="forbid")
Line = Annotated[str, Field(min_length=1)]  # one list item: a non-empty sentence


# --- what a participant fills in ---------------------------------------------------------------
# The enums (stance, sections, what a counterpoint addresses) are filled in per request.


class Evidence(BaseModel):
    model_config = _REPLY

    section: str = Field(
        description="The section of the source document that supports this; moot cites it as `<source path> § <section>`."
    )
    principle: str = Field(default="", description="Optionally a general principle that supports it too, or ''.")
    supporting: str = Field(
        default="", description="Optionally the line of a supporting file that supports it too (path:line), or ''."
    )


class GuidedCounterpoint(BaseModel):
    model_config = _REPLY

    addresses: str = Field(description="What this answers: an earlier turn or a section of the source.")
    claim: str = Field(min_length=1, description="Your counter-claim.")
    evidence: Evidence


class StanceRevision(BaseModel):
    model_config = _REPLY

    because_of: str = Field(default="", description="The earlier turn or source section that would change your stance.")
    why: str = Field(default="", description="How it changes your stance.")


class GuidedDuelReply(BaseModel):
    """Your turn in a Socratic duel: a position, counterpoints and a new argument, each with evidence."""

    model_config = _REPLY

    stance: str = Field(description="Where you stand now.")
    position: str = Field(min_length=1, description="Your position on the topic.")
    counterpoints: list[GuidedCounterpoint] = Field(min_length=1, max_length=MAX_ITEMS)
    agreements: list[Line] = Field(min_length=1, max_length=MAX_ITEMS, description="Points you agree with.")
    novel_argument: str = Field(min_length=1, description="A claim nobody has made in an earlier turn.")
    novel_evidence: Evidence
    limitation: str = Field(min_length=1, description="A limitation or open question that does not block agreement.")
    blocking_issues: list[Line] = Field(
        default=[],
        max_length=MAX_ITEMS,
        description="Issues that make agreement impossible until resolved; [] if none.",
    )
    stance_revision: StanceRevision = StanceRevision()

    def to_reply(
        self, source_path: str, changed_stance: bool, supporting: Mapping[str, str] | None = None
    ) -> DuelReply:
        """The protocol's reply: moot writes every citation and marks every unresolved item.

        ``supporting`` maps each offered ``path:line`` of a supporting file to its citation.
        """
        lines = supporting or {}
        return DuelReply(
            stance=self.stance,  # checked against the enum by read_reply
            position=self.position,
            counterpoints=[
                ReplyCounterpoint(
                    addresses=c.addresses, claim=c.claim, support=_support(c.evidence, source_path, lines)
                )
                for c in self.counterpoints
            ],
            agreements=self.agreements,
            novel_argument=self.novel_argument,
            novel_support=_support(self.novel_evidence, source_path, lines),
            unresolved=[
                UnresolvedItem(text=self.limitation, blocking=False),
                *(UnresolvedItem(text=issue, blocking=True) for issue in self.blocking_issues),
            ],
            stance_revision_support=[_revision(self.stance_revision, source_path)] if changed_stance else [],
        )


def _citation(section: str, source_path: str) -> str:
    if section.startswith("lines "):  # a source without headings is cited by its line range
        return f"`{source_path}` {section}"
    return f"`{source_path}` § {section}"


def _principle(text: str) -> str:
    return "Principle: " + re.sub(r"^\s*principle\s*:\s*", "", text.strip(), flags=re.IGNORECASE)


def _support(evidence: Evidence, source_path: str, supporting: Mapping[str, str]) -> list[str]:
    """The source citation, with the chosen supporting line after it (the item still cites the source)."""
    cited = supporting.get(evidence.supporting.strip())
    items = [_citation(evidence.section, source_path) + (f"; {cited}" if cited else "")]
    if evidence.principle.strip():
        items.append(_principle(evidence.principle))
    return items


def _revision(revision: StanceRevision, source_path: str) -> str:
    reference = revision.because_of
    if not reference.startswith("Turn "):
        reference = _citation(reference.removeprefix("source § "), source_path)
    return f"{reference}: {revision.why.strip()}" if revision.why.strip() else reference


# --- options and the driver --------------------------------------------------------------------


@dataclass(frozen=True)
class DuelOptions:
    source: Path
    topic: str | None = None
    roles: tuple[str, str] = DEFAULT_ROLES
    models: tuple[str, str] = (UNKNOWN_MODEL, UNKNOWN_MODEL)  # each role's agent spec, recorded per turn
    max_turns: int = MAX_TURNS
    supporting: tuple[Path, ...] = ()  # --source files and directories whose lines evidence may quote too

    def with_models(self, spec_for: Callable[[str], str]) -> DuelOptions:
        """These options with each role's agent spec (``spec_for(role)``) as its recorded model."""
        first, second = self.roles
        return replace(self, models=(spec_for(first), spec_for(second)))


class DuelDriver(Driver):
    protocol = "duel"
    options_type = DuelOptions

    def __init__(self, path: Path) -> None:
        self.record_path = path
        self.failure: Outcome | None = None
        self._now: str | None = None  # the time of the reply being committed: the conclusion's Closed At
        self._load()

    @classmethod
    def resume(cls, path: Path, context: str | None = None) -> DuelDriver:
        repaired = record.repair(path)
        driver = cls(path)
        driver.repaired_chain = repaired
        return driver

    @classmethod
    def start(cls, root: Path, options: DuelOptions, started: str) -> DuelDriver:
        source = Path(os.path.abspath(options.source))
        if source.suffix.lower() not in SOURCE_SUFFIXES:
            raise UserError(f"{source} is not a Markdown file; give a .md or .markdown source document.")
        text, problems = read_text(source)
        if text is None:
            raise UserError(f"cannot read the source document: {problems[0].message}")
        if not 2 <= options.max_turns <= MAX_TURNS:
            raise UserError(
                f"--max-turns {options.max_turns} is outside 2..{MAX_TURNS}; both participants must speak and "
                f"a duel has at most {MAX_TURNS} turns."
            )
        topic = infer_topic(options.topic, text, source.stem)
        require_subject("topic", topic)  # given, or the source's first heading
        config = DuelConfig(
            duel_id="duel-" + hashlib.sha256(f"{source}\n{topic}\n{started}".encode()).hexdigest()[:8],
            source_path=str(source),
            topic=topic,
            topic_slug=record.slugify(topic),
            max_turns=options.max_turns,
            created=started,
        )
        participants = [
            Participant(name=name, harness=HARNESS, model=model, joined=started)
            for name, model in zip(options.roles, options.models, strict=True)
        ]
        path = record.debate_path(root, _day(started), config.topic_slug)
        record_place(root, path.parent.relative_to(root))
        try:
            record.create(path, config, participants)
        except FileExistsError as exc:
            raise RecordExists(
                path, f"{path} already exists; resume it with `moot resume {path}` or choose another --topic."
            ) from exc
        except ProtocolViolationError as exc:
            raise UserError(f"cannot start the duel: {exc.violations[0].message}") from exc
        if options.supporting:
            duel_grounding.write_supporting(path, [os.path.abspath(given) for given in options.supporting])
        return cls(path)

    def _load(self) -> None:
        text, problems = read_text(self.record_path)
        if text is None:
            raise UserError(f"cannot read {self.record_path}: {problems[0].message}")
        document, _ = record.parse_document(text, str(self.record_path))
        if document is None:
            raise UserError(f"{self.record_path} is not a Socratic Duel record; run `moot check` on it.")
        report = record.check(self.record_path)
        self._writer: record.DuelWriter | None = None  # opened by the first commit, kept while nobody else writes
        parsed = document.record
        if report.errors and parsed.conclusion is None:
            raise UserError(
                f"{self.record_path} cannot be continued ({report.errors[0]}); run `moot check {self.record_path}` "
                "and repair or discard the record."
            )
        self.config = parsed.config
        # The seed keeps the source's absolute path; turns and the conclusion cite it relative to the work root.
        self.cited = duel_grounding.cited_path(self.config.source_path, self.record_path)
        self.participants = parsed.participants
        self.machine = DuelProtocol(parsed.config, parsed.participants)
        replayed = self.machine.replay(parsed.turns).state
        self.state: DuelState = replayed.model_copy(update={"conclusion": parsed.conclusion})
        if parsed.conclusion is None and computed_outcome(self.config, self.state.turns) is not None:
            # The turns reached an outcome: after an append, or after a crash that came between the
            # turn and its conclusion. Either way the conclusion is written now.
            conclusion = draft_conclusion(
                self.config, self.state.turns, closed_at=self._now or now_minutes(), source=self.cited
            )
            record.write_conclusion(self.record_path, conclusion)
            self._load()
            return
        self.source_text = ""
        self.sections: list[str] = []
        self.supporting: dict[str, tuple[str, str]] = {}  # offered path:line -> (its citation, its text)
        if self.next_speaker() is not None:
            source_text, problems = read_text(Path(self.config.source_path))
            if source_text is None:
                raise UserError(f"cannot read the duel's source document: {problems[0].message} Restore it to go on.")
            self.source_text = source_text
            self.sections = source_sections(source_text)
            supporting = duel_grounding.read_supporting(self.record_path)
            self.supporting = _supporting_lines(supporting, self.config.topic, self.record_path)

    def roles(self) -> list[str]:
        return [p.name for p in self.participants]

    def next_speaker(self) -> str | None:
        if self.failure is not None:
            return None
        return self.machine.next_speaker(self.state)

    # --- asking ----------------------------------------------------------------------------------

    def request_for(self, role: str) -> AgentRequest:
        return self._request(role, "")

    def repair_prompt(self, request: AgentRequest, reply: str, violations: list[Violation]) -> AgentRequest:
        """The request again, with the rule ids and messages; the prompt is rebuilt (not appended to)
        so that it still fits the small model's context after several repairs."""
        problems = "\n".join(f"- {v.rule}: {v.message}" for v in violations if v.is_error)
        compact = self.bounds(request.role).compact
        extra = (
            f"Your previous reply was:\n{clip_to_tokens(reply, 160) if compact else reply}\n\n"
            f"It broke these rules of the protocol:\n{clip_to_tokens(problems, 220) if compact else problems}\n\n"
            "Fix the errors and try again."
        )
        return self._request(request.role, extra)

    def _request(self, role: str, extra: str) -> AgentRequest:
        """The topic, the source and the supporting lines, then the duel so far, one part a turn, as the stable
        prefix; then what to write, and a repair's notes after it.

        A model whose server caches prefixes gets its role and the duel's rules after the duel so far, so that
        both roles' requests share one prefix and one cache; any other participant keeps them in the system
        message, where the small model's turns were measured.
        """
        system = self._system(role)
        fixed = self._instructions(role)
        bounds = self.bounds(role)
        tokens = bounds.turn_tokens(COMPACT_REPLY_TOKENS)
        budget = bounds.context_tokens - tokens - TEMPLATE_TOKENS
        budget -= estimate_tokens(system) + estimate_tokens(fixed) + estimate_tokens(extra) + 40
        history = self._history(max(0, int(budget * HISTORY_SHARE)))
        source = clip_to_tokens(self.source_text, max(0, budget - estimate_tokens("".join(history))))
        shown = "\n".join(f"{where}: {text}" for where, (_, text) in self.supporting.items())
        parts = [
            f"Topic: {self.config.topic}\n\n",
            f"Source document (read-only): {self.cited}\n<<<\n{source}\n>>>\n\n",
            f"Supporting files (evidence may add one of these lines as 'supporting'):\n{shown}\n\n" if shown else "",
            *history,
        ]
        narrowed = not self.caches_prefix(role)
        instruction = [
            "" if history else "No turns yet: you open the duel.",
            "" if narrowed else system,
            fixed,
            extra,
        ]
        return AgentRequest.with_prefix(
            parts,
            ("\n\n" if history else "") + "\n\n".join(part for part in instruction if part),
            system=system if narrowed else None,
            json_schema=self._reply_schema(role),
            max_tokens=tokens,
            role=role,
            protocol=self.protocol,
            cache_key=None if narrowed else self.shared_cache_key(),
        )

    def _system(self, role: str) -> str:
        other = next((p.name for p in self.participants if p.name != role), "your peer")
        guidance = ROLE_GUIDANCE.get(role, CUSTOM_GUIDANCE)
        return (
            f"You are {role} in a Socratic duel with {other} about: {self.config.topic}.\n{guidance}\n"
            "Stay on the topic. Every claim needs evidence from the source document. Do not accept consensus because "
            "your peer is confident, first or authoritative. Never repeat an earlier argument as your novel argument."
        )

    def _instructions(self, role: str) -> str:
        number = len(self.state.turns) + 1
        lines = [
            f"Write turn {number} of at most {self.config.max_turns} as {role}.",
            "Evidence: choose the source section that supports each point; moot cites it as "
            f"`{self.cited}` § <section>."
            + ("" if self.bounds(role).compact else " Add a general principle when it helps."),
            "The duel ends ACCEPTED_CONSENSUS when both latest turns are ACCEPTING_CONSENSUS with no blocking issue, "
            f"DISSENT when both are DISSENTING, and otherwise after turn {self.config.max_turns}.",
            "ACCEPTING_CONSENSUS still needs evidence, a limitation, and no blocking issues.",
        ]
        previous = self._previous_turn(role)
        if previous is not None:
            lines.append(
                f"Your previous stance was {previous.stance}; if you change it, stance_revision names the turn or "
                "section that changed your mind."
            )
        return "\n".join(lines)

    def _previous_turn(self, role: str) -> DuelTurn | None:
        return next((t for t in reversed(self.state.turns) if t.participant == role), None)

    def _history(self, tokens: int) -> list[str]:
        """The latest turns, newest kept first, each as a short digest of what it claimed: a part each."""
        kept: list[str] = []
        used = 0
        for turn in reversed(self.state.turns):
            digest = _digest(turn)
            cost = estimate_tokens(digest)
            if used + cost > tokens:
                kept.append("[earlier turns omitted]")
                break
            kept.append(digest)
            used += cost
        if not kept:
            return []
        shown = list(reversed(kept))
        return [f"The duel so far:\n{shown[0]}", *(f"\n{digest}" for digest in shown[1:])]

    def _addressable(self) -> list[str]:
        return [f"Turn {t.number}" for t in self.state.turns] + [f"source § {s}" for s in self.sections]

    def _allowed_stances(self) -> list[str]:
        # The opening turn has nobody to agree or disagree with yet.
        return [Stance.OPEN_TO_DEBATE.value] if not self.state.turns else [s.value for s in Stance]

    def _reply_schema(self, role: str) -> dict[str, Any]:
        """The reply schema, narrowed to the choices legal now (stances, what a counterpoint addresses); for a
        model whose server caches prefixes, one schema for all its turns, and read_reply holds its
        choices to what is legal (:meth:`_choice_problems`)."""
        narrowed = not self.caches_prefix(role)
        schema = json_schema_of(GuidedDuelReply)
        defs = schema["$defs"]
        schema["properties"]["stance"]["enum"] = self._allowed_stances() if narrowed else [s.value for s in Stance]
        defs["Evidence"]["properties"]["section"]["enum"] = self.sections
        if self.supporting:
            defs["Evidence"]["properties"]["supporting"]["enum"] = ["", *self.supporting]
        else:
            del defs["Evidence"]["properties"]["supporting"]
        if narrowed:
            defs["GuidedCounterpoint"]["properties"]["addresses"]["enum"] = self._addressable()
        if narrowed and self._previous_turn(role) is None:
            del schema["properties"]["stance_revision"], defs["StanceRevision"]
        else:
            schema["properties"]["stance_revision"] = {"$ref": "#/$defs/StanceRevision"}
            if narrowed:
                defs["StanceRevision"]["properties"]["because_of"]["enum"] = self._addressable()
        # Every property is asked for, so decoding writes each one (an optional one would be skipped); a cached
        # model's stance revision stays optional, as it is before the role's second turn.
        for part in (schema, *defs.values()):
            part["required"] = [name for name in part["properties"] if narrowed or name != "stance_revision"]
            for value in part["properties"].values():
                value.pop("default", None)
        if self.bounds(role).compact:
            _compact(schema)
            if Stance.ACCEPTING_CONSENSUS.value in self._allowed_stances():
                schema = _consensus_without_blocking(schema)
        return schema

    # --- reading and writing ---------------------------------------------------------------------

    def read_reply(self, role: str, text: str, now: str) -> Candidate:
        self._now = now
        guided, problems = self._parse(text, role)
        if guided is None:
            return Candidate(None, problems)
        previous = self._previous_turn(role)
        participant = next(p for p in self.participants if p.name == role)
        try:
            citations = {where: citation for where, (citation, _) in self.supporting.items()}
            changed = previous is not None and previous.stance != guided.stance
            reply = guided.to_reply(self.cited, changed, citations)
            turn = reply.to_turn(
                number=len(self.state.turns) + 1,
                participant=role,
                harness=participant.harness,
                model=participant.model,
                source_path=self.config.source_path,
            )
        except ValidationError as exc:
            return Candidate(None, [reply_format_violation(f"the reply does not make a turn ({first_error(exc)}).")])
        if self.supporting:  # each supporting line is quoted from its file: marked verified, as the tools mark
            turn = duel_grounding.marked(turn, self.config, self.record_path)
        return Candidate(turn, self._reads_back(turn) or self.machine.validate(self.state, turn))

    def _reads_back(self, turn: DuelTurn) -> list[Violation]:
        """A turn whose text would not read back as written (a stray Markdown label, say) is refused
        here, with the rule the writer would refuse it by, so that its author can repair it."""
        whole = record.DuelRecord(config=self.config, participants=self.participants, turns=[*self.state.turns, turn])
        parsed, problems = record.parse(record.render(whole), str(self.record_path))
        if parsed is not None and parsed.turns and parsed.turns[-1] == turn and not any(p.is_error for p in problems):
            return []
        return [
            record.FORMAT_RULES.violation(
                "DUEL_TURN_STRUCTURE",
                "the turn's text would not read back as written; keep Markdown headings, bold labels and '---' "
                "lines out of the text.",
            )
        ]

    def _parse(self, text: str, role: str) -> tuple[GuidedDuelReply | None, list[Violation]]:
        guided, problem = parse_reply(text, GuidedDuelReply, one_line=True)
        if guided is None:
            return None, [problem] if problem else []
        problems = [reply_format_violation(p) for p in self._choice_problems(guided, role)]
        return (None, problems) if problems else (guided, [])

    def _choice_problems(self, guided: GuidedDuelReply, role: str) -> list[str]:
        """The enums of the schema, for participants whose decoding is not held to it."""
        found: list[str] = []

        def choose(field: str, value: str, allowed: list[str]) -> None:
            if value not in allowed:
                shown = ", ".join(repr(a) for a in allowed[:12])
                found.append(f"{field} {value!r} is not one of the choices now; choose one of {shown}.")

        choose("stance", guided.stance, self._allowed_stances())
        evidence = [guided.novel_evidence, *(c.evidence for c in guided.counterpoints)]
        for item in evidence:
            choose("evidence section", item.section, self.sections)
            if item.supporting:
                choose("evidence supporting", item.supporting, ["", *self.supporting])
        for point in guided.counterpoints:
            choose("counterpoint addresses", point.addresses, self._addressable())
        previous = self._previous_turn(role)
        if previous is not None and previous.stance != guided.stance:
            choose("stance_revision.because_of", guided.stance_revision.because_of, self._addressable())
        return found

    def commit(self, turn: DuelTurn) -> None:
        """One append + fsync while the header stays as it was (record.DuelTurns); the state stays in memory."""
        try:
            if self._writer is None:
                self._writer = record.RECORD.writer(self.record_path)
            self._writer.append([turn])
        except ProtocolViolationError:
            self._load()  # the record changed under us; the caller sees the refusal
            raise
        self.state = self._writer.state
        if computed_outcome(self.config, self.state.turns) is not None:
            self._load()  # writes the Terminal Conclusion

    def fail(self, role: str, reason: str, now: str) -> Outcome:
        """The seed's TIMEOUT ("bounded waiting expires without valid continuation"), in the Terminal Conclusion.

        Not INVALIDATED, which the seed keeps for a broken source, record or turn sequence.
        """
        reason = " ".join(reason.split()) or f"{role} gave no valid turn"
        failure = Outcome(name=OutcomeName.TIMEOUT.value, reason=reason)
        conclusion = draft_conclusion(
            self.config, self.state.turns, closed_at=now, outcome=OutcomeName.TIMEOUT, reason=reason, source=self.cited
        )
        try:
            record.write_conclusion(self.record_path, conclusion)
            self._load()
        except (ProtocolViolationError, RecordChangedError, UserError, OSError):
            self.failure = failure  # the record could not take the conclusion; the run still ends with it
        return failure

    def summary(self) -> Summary:
        summary = self.machine.summary(self.state)
        detail = {**summary.detail, "record": str(self.record_path)}
        if self.failure is not None and summary.outcome is None:
            return summary.model_copy(update={"outcome": self.failure, "next_speaker": None, "detail": detail})
        return summary.model_copy(update={"detail": detail})

    @classmethod
    def limit_refusal(cls, option: str) -> str | None:
        return (
            f"the Socratic Duel's spec stops a duel at {MAX_TURNS} turns at most and its terminal conclusion closes it, "
            "so its limit cannot be raised; start a new duel with `moot run duel`."
        )

    def call_plan(self) -> list[str]:
        """The two participants taking turns from the first speaker up to the turn limit."""
        return taking_turns(self.roles(), self.next_speaker(), self.config.max_turns)

    def planned_calls(self) -> list[PlannedCall]:
        """Each turn's prompt carries every earlier turn as its digest (:func:`_digest`)."""
        return [PlannedCall(role, read_tokens=DIGEST_TOKENS) for role in self.call_plan()]


# --- helpers -----------------------------------------------------------------------------------

SUPPORTING_LINES = 8  # offered per request: enough to choose from, few enough for a small model's grammar
SUPPORTING_CHARS = 160  # a longer line is offered cut at a word, still a verbatim part of the file


def _supporting_lines(paths: list[str], topic: str, record: Path) -> dict[str, tuple[str, str]]:
    """The supporting files' lines that best match the topic: ``path:line`` -> (citation, the line's text)."""
    existing = [Path(p) for p in paths if Path(p).exists()]
    if not existing:
        return {}
    root = Path(os.path.commonpath([p if p.is_dir() else p.parent for p in existing]))
    grounding = Grounding(tuple(str(p) for p in existing), root)
    lines = [pair for passage in grounding.passages(topic) for pair in passage.numbered()]
    offered = offered_items(lines, SUPPORTING_CHARS, SUPPORTING_LINES)
    found: dict[str, tuple[str, str]] = {}
    for item in offered:
        path, _, line = item["source"].rpartition(":")
        cited = duel_grounding.cited_path(str(root / path), record)
        citation = duel_grounding.supporting_citation(cited, int(line), item["content"])
        found[item["source"]] = (citation, item["content"])
    return found


def _compact(schema: dict[str, Any]) -> None:
    """A small model's caps on the reply schema: short one-line text fields, at most COMPACT_ITEMS per list, and
    no optional field of COMPACT_DROPPED."""
    for name, fields in COMPACT_CHARS.items():
        part = schema["$defs"].get(name) if name else schema
        for field, chars in fields.items() if part is not None else ():
            value = part["properties"].get(field)
            if value is not None:
                text = value["items"] if value.get("type") == "array" else value
                text.pop("minLength", None)
                text["pattern"] = content_pattern(chars)
    for name, dropped in COMPACT_DROPPED.items():
        definition = schema["$defs"].get(name, {"properties": {}, "required": []})
        for field in dropped:
            definition["properties"].pop(field, None)
            definition["required"] = [kept for kept in definition.get("required", []) if kept != field]
    for part in (schema, *schema["$defs"].values()):
        for value in part["properties"].values():
            if value.get("type") == "array":
                value["maxItems"] = COMPACT_ITEMS


def _consensus_without_blocking(schema: dict[str, Any]) -> dict[str, Any]:
    """The reply schema as two shapes: any other stance, or ACCEPTING_CONSENSUS with no blocking issue.

    A small model decoding under a grammar otherwise writes ACCEPTING_CONSENSUS beside a blocking issue and
    repeats it under repair; the alternative makes that turn impossible to write. Only for grammar-decoded
    participants: hosted structured-output modes refuse a schema whose root is not one object.
    """
    body = {key: value for key, value in schema.items() if key != "$defs"}
    stance = body["properties"]["stance"]
    others = [s for s in stance["enum"] if s != Stance.ACCEPTING_CONSENSUS.value]
    accepting = {
        **body,
        "properties": {
            **body["properties"],
            "stance": {**stance, "enum": [Stance.ACCEPTING_CONSENSUS.value]},
            "blocking_issues": {**body["properties"]["blocking_issues"], "maxItems": 0},
        },
    }
    other = {**body, "properties": {**body["properties"], "stance": {**stance, "enum": others}}}
    return {"$defs": schema["$defs"], "anyOf": [other, accepting]}


def source_sections(text: str) -> list[str]:
    """What evidence may cite: the source's headings, or its whole line range when it has none."""
    sections = list(dict.fromkeys(h[:SECTION_CHARS].rstrip() for h in markdown_headings(text)))[:MAX_SECTIONS]
    return sections or [f"lines 1-{max(1, len(text.splitlines()))}"]


# A turn's digest keeps its position and novel argument cut to 70 tokens each and each counterpoint's claim to
# 50 (conservative counts, about three quarters of that in a hosted model's tokens): with its heading and one
# counterpoint, about this many tokens, what the dry run counts per earlier turn.
DIGEST_POINT_TOKENS, DIGEST_CLAIM_TOKENS = 70, 50
DIGEST_TOKENS = (2 * DIGEST_POINT_TOKENS + DIGEST_CLAIM_TOKENS) * 3 // 4 + 30


def _digest(turn: DuelTurn) -> str:
    lines = [
        f"Turn {turn.number} — {turn.participant} — {turn.stance}",
        f"  Position: {clip_to_tokens(turn.position, DIGEST_POINT_TOKENS)}",
    ]
    lines += [
        f"  Counterpoint ({c.addresses}): {clip_to_tokens(c.claim, DIGEST_CLAIM_TOKENS)}" for c in turn.counterpoints
    ]
    lines.append(f"  Novel argument: {clip_to_tokens(turn.novel_argument, DIGEST_POINT_TOKENS)}")
    lines += [
        f"  Unresolved: {clip_to_tokens(u.text, 35)} ({'blocking' if u.blocking else 'non-blocking'})"
        for u in turn.unresolved
    ]
    return "\n".join(lines)


def _day(started: str) -> dt.date:
    try:
        return dt.date.fromisoformat(started[:10])
    except ValueError:
        return dt.date.today()

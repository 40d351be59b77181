"""Agora debates, run as the seed's orchestrator runs its debate drones (agora-debate-drone.md).

- moot writes the header and the drones' turns; each drone gets exactly the seed's context-injection
  block (DIALOGUE, TURN, YOUR ROLE, YOUR POSITION, TOPIC, OPPONENT SAID, [EVIDENCE POOL], YOUR TURN)
  as its prompt, the drone rules as its system message, and at most 100 tokens for its JSON.
- The reply schema offers only what is legal now (see :meth:`AgoraDriver.reply_schema`), so a
  grammar-constrained small model cannot pick an illegal signal or target.
- ``--research N``: before the first turn, N research drones (role ``researcher``) each report
  evidence items; together they are the EVIDENCE POOL every debater sees. The pool lives in the
  sidecar ``.NAME.evidence.json`` (see :class:`ResearchFile`), so a resumed debate sees the same pool.
- ``--source PATH`` grounds the debate (``moot.engine.grounding``): research needs it; each research
  drone reads the passages retrieved for the topic and its focus and cites their lines as
  ``path:line``; every evidence item (a researcher's or a debater's) must be in the file it cites or
  come from the pool, else the reply is sent back; each accepted item is marked in the record with
  where it was found.
- ``--require-reasons`` writes ``- Require reasons: yes`` in the header: a drone that changes its stance must
  cite evidence no earlier turn cites (``AGORA_STANCE_REASON``, checked by the machine, so the engine sends such
  a turn back); the drones are told so, and every drone may then carry one evidence item.
- On deadlock the protocol recruits the mediator; its turns are asked of the ``mediator`` role with
  ``MEDIATOR_POSITION`` and every participant's latest message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from moot.agents.base import AgentRequest
from moot.core.confidence import confidence_schema
from moot.core.files import atomic_write_text, read_text
from moot.core.grounding import CitationCheck, citation_violations, fact_based_violations
from moot.core.hollow import content_pattern
from moot.core.machine import Outcome, Summary
from moot.core.run_state import RUN_HALTED
from moot.core.turn_record import TurnWriter
from moot.engine.driver import Candidate, Driver, PlannedCall, first_error, reply_format_violation, taking_turns
from moot.engine.grounding import Grounding, numbered_lines, offered_items
from moot.engine.replies import find_object, parse_reply
from moot.engine.sealed import SealedPhase, SealedPhases, sealed_path
from moot.errors import ProtocolViolationError, RecordExists, UserError, Violation
from moot.limits import require_subject
from moot.paths import record_place
from moot.protocols.agora import PLUGIN as AGORA
from moot.protocols.agora import record
from moot.protocols.agora.grounding import mark_for, work_root
from moot.protocols.agora.machine import (
    DEFAULT_DEADLOCK_WINDOW,
    DEFAULT_MAX_TURNS,
    MAX_SENTENCES,
    MEDIATOR,
    MEDIATOR_POSITION,
    METHODOLOGIES,
    RULES,
    SIGNALS,
    AgoraConfig,
    AgoraProtocol,
    AgoraState,
    AgoraTurn,
    Evidence,
    Position,
    Signal,
    make_turn,
)
from moot.sources.collect import cited_path

RESEARCHER = "researcher"
FAILED = RUN_HALTED  # the run's outcome when a participant cannot go on; the record itself stays open

# The seed's cap: "Max 100 tokens per response". With SmolLM2's tokenizer the reply JSON without its
# free text costs 36 tokens, 53 with one evidence item; English at these caps comes to 69 and 82
# tokens (tests/engine_agora pins that). SmolLM2's own text runs at 2-6 characters a token, so a
# degenerate reply can still be cut short: measured, 1 in 44 was, and the engine's repair recovered it.
REPLY_MAX_TOKENS = 100
MESSAGE_CHARS = 200  # when the turn carries no evidence
MESSAGE_CHARS_WITH_EVIDENCE = 80
EVIDENCE_SOURCE_CHARS = 24
EVIDENCE_CONTENT_CHARS = 48
RECENT_TURN_TARGETS = 8  # the turn-N targets offered: the latest ones (any earlier turn is legal too)

# Research drones are not debate drones: they get room for two findings each.
RESEARCH_MAX_TOKENS = 160
RESEARCH_ITEMS = 2
RESEARCH_SOURCE_CHARS = 32
RESEARCH_CONTENT_CHARS = 120
RESEARCH_PASSAGES = 3  # passages of six lines each drone reads, within a small context
OFFERED_LINES = 6  # source lines evidence is chosen from: each is an alternative in the reply grammar
POOL_ITEMS_SHOWN = 12
POOL_CONTENT_CHARS = 160


def default_positions(topic: str) -> tuple[tuple[str, str], ...]:
    """Two opposing drones when the user names none."""
    return (("advocate", f"Argue for: {topic}"), ("skeptic", f"Argue against: {topic}"))


def parse_position(value: str) -> tuple[str, str]:
    """``--position ROLE=TEXT`` -> (role, text), with a clear error otherwise."""
    role, sep, text = value.partition("=")
    if not sep or not role.strip() or not text.strip():
        raise UserError(f"--position {value!r} is not ROLE=TEXT; write it like --position advocate='Use Strategy'.")
    return role.strip(), text.strip()


@dataclass(frozen=True)
class AgoraOptions:
    topic: str
    positions: Sequence[Sequence[str]] = ()  # (role, position) in speaking order; default two opposing drones
    methodology: str = "opinion"  # opinion | fact-based | mixed
    max_turns: int = DEFAULT_MAX_TURNS
    deadlock_window: int = DEFAULT_DEADLOCK_WINDOW
    research: int = 0  # research drones asked for evidence before the debate
    sources: Sequence[Path] = ()  # --source files and directories the evidence must come from
    models: Sequence[Sequence[str]] = ()  # (role, agent spec) pairs, shown in the summary only
    sealed: bool = False  # every drone's opening proposal is asked at once, none seeing another's
    require_reasons: bool = False  # a change of stance must cite new evidence (AGORA_STANCE_REASON)

    def with_models(self, spec_for: Callable[[str], str]) -> AgoraOptions:
        """These options with each drone's agent spec (``spec_for(role)``) for the summary."""
        return replace(self, models=tuple((role, spec_for(role)) for role, _ in _positions(self)))


# --- the research stage ------------------------------------------------------------------------


class ResearchReply(BaseModel):
    """What a research drone answers: its findings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence: tuple[Evidence, ...] = Field(min_length=1)


class ResearchReport(BaseModel):
    """One research drone's accepted findings (what ``commit`` gets for a researcher's turn)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    drone: int = Field(ge=1)
    evidence: tuple[Evidence, ...]


class ResearchFile(BaseModel):
    """The sidecar ``.NAME.evidence.json`` beside the record: the research stage and its pool.

    ``excerpts`` are the source passages each drone reads, one ``path:line: text`` line per source
    line (kept, so a resumed stage asks the same questions even if the files changed); ``reports``
    grow as drones answer.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    drones: int = Field(ge=1)
    excerpts: tuple[str, ...] = ()
    reports: tuple[ResearchReport, ...] = ()

    @property
    def pool(self) -> list[Evidence]:
        """Every reported item once, in the order they were reported."""
        seen: set[tuple[str, str]] = set()
        pool: list[Evidence] = []
        for report in self.reports:
            for item in report.evidence:
                if (item.source, item.content) not in seen:
                    seen.add((item.source, item.content))
                    pool.append(item)
        return pool


def research_path(record_path: Path) -> Path:
    return record_path.with_name(f".{record_path.name}.evidence.json")


def _write_research(path: Path, research: ResearchFile) -> None:
    atomic_write_text(path, json.dumps(research.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")


def _research_excerpts(grounding: Grounding, config: AgoraConfig, drones: int) -> tuple[str, ...]:
    """Each drone's passages: those retrieved for the topic and its focus position."""
    excerpts = []
    for drone in range(1, drones + 1):
        focus = config.participants[(drone - 1) % len(config.participants)]
        passages = grounding.passages(f"{config.topic} {focus.position}", RESEARCH_PASSAGES)
        excerpts.append("\n".join(passage.render() for passage in passages))
    return tuple(excerpts)


# --- the prompts -------------------------------------------------------------------------------

_METHODOLOGY_RULE = {
    "opinion": "opinion: evidence is optional; argue with reasoning and logic.",
    "fact-based": "fact-based: every turn MUST include at least one evidence item (data, code references, measurements).",
    "mixed": "mixed: balance reasoning and evidence; evidence is encouraged.",
}

DRONE_RULES = f"""\
You are a debate drone in an Agora dialogue. You argue your assigned position and answer with one JSON object.
Rules: stay in your role and argue your position. Respond to your opponent's points directly. Be concise: \
at most {MAX_SENTENCES} sentences, the whole reply within {REPLY_MAX_TOKENS} tokens. Signal honestly: if convinced, \
approve. JSON only: no prose, no markdown.
Signals: propose = a new argument or proposal (resets equilibrium). counter = disagree with the target; \
acknowledge the opponent's strongest point, say why your position still holds, give counter-evidence \
(resets equilibrium). approve = accept the target proposal of another participant (toward consensus). \
no-change = hold your position (toward consensus). defer = yield to the opponent's expertise (neutral).
Target: the turn ("turn-3") or proposal ("proposal-advocate") your signal addresses.
Consensus: every participant's last signal is approve or no-change and all approvals name the same proposal, \
never one's own. Endless counters recruit a mediator.
Confidence: 0.9-1.0 near-certain, strong evidence. 0.7-0.8 confident, some uncertainty. 0.5-0.6 balanced. \
0.3-0.4 weak, the opponent has strong points. 0.1-0.2 mostly convinced by the opponent, ready to approve. \
Lower it when the opponent presents evidence you cannot counter; raise it with concrete evidence."""

MEDIATOR_RULES = f"""\
You are the mediator of a deadlocked Agora debate: the participants keep countering each other. \
{MEDIATOR_POSITION} Be fair to every side; at most {MAX_SENTENCES} sentences, the whole reply within \
{REPLY_MAX_TOKENS} tokens. JSON only: no prose, no markdown.
Signals: propose = your compromise. approve = accept a participant's proposal. no-change = hold your compromise. \
counter = dispute the target. defer = yield.
Confidence: 0.0 to 1.0, how likely every participant is to approve."""

# The seed's OUTPUT FORMAT block, on one line. Shown even to grammar-constrained models: SmolLM2
# without it fills the message with digits, with an example it copies the example's argument.
OUTPUT_FORMAT = (
    'Output format: {"signal": "propose|counter|approve|no-change|defer", "message": "Your argument '
    '(2-4 sentences max)", "confidence": 0.0-1.0, "target": "what this signal targets", "evidence": '
    '[{"source": "where you found this", "content": "key fact", "confidence": 0.9}]}'
)

REASONS_RULE = (
    "No change without a reason: when you back another proposal than before, approve one you countered, or "
    "counter the one you backed, cite at least one evidence item that no earlier turn cited."
)

POOL_RULE = (
    "The EVIDENCE POOL was gathered by research drones: use it, and cite only evidence from the pool "
    "or that you can verify."
)


def drone_system(role: str, methodology: str, max_turns: int, pool: bool, reasons: bool = False) -> str:
    """The system message: the seed's drone rules, the limit, the methodology, the reasons rule (when the debate
    requires reasons) and the output format."""
    parts = [
        MEDIATOR_RULES if role == MEDIATOR else DRONE_RULES,
        f"The debate times out after {max_turns} turns; don't waste turns repeating yourself.",
        f"Methodology {_METHODOLOGY_RULE[methodology]}",
        *([REASONS_RULE] if reasons and role != MEDIATOR else []),
        *([POOL_RULE] if pool else []),
        OUTPUT_FORMAT,
    ]
    return "\n".join(parts)


RESEARCH_SYSTEM = """\
You are a research drone. Before an Agora debate you gather evidence that the debate drones will cite. \
Report facts, not opinions: each item gives its source (a document, file section, study or measurement), \
the key fact in one short sentence, and your confidence in it from 0.0 to 1.0. \
When SOURCE PASSAGES are given, each item cites one line as path:line and its content is copied word for word \
from that line; never fabricate. JSON only: no prose, no markdown."""


def _target_schema(targets: list[str], cached: bool) -> dict[str, Any]:
    """The target: one of ``targets`` (none on a first turn); any, or none, for a model whose server caches the
    schema with the prompt's prefix (the protocol's check names the targets that exist)."""
    if cached:
        return {"type": ["string", "null"]}
    return {"type": "string", "enum": targets} if targets else {"type": "null"}


def text_schema(max_chars: int) -> dict[str, Any]:
    """A one-line string of 1 to ``max_chars`` characters that starts with a letter or digit.

    A pattern rather than maxLength: it also keeps the text on one line, keeps a message of brackets alone
    (AGORA_EMPTY_TEXT) out, and keeps quotes and backslashes out, so every character of the 100-token reply is
    one character of the message (an escape would cost several).
    """
    return {"type": "string", "pattern": content_pattern(max_chars)}


def _evidence_item_schema(
    source_chars: int, content_chars: int, offered: Sequence[Mapping[str, str]] = ()
) -> dict[str, Any]:
    """An evidence item; with ``offered`` lines, one of them (its path:line and text), any confidence."""
    if offered:
        confidence = confidence_schema()
        return {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "source": {"const": item["source"]},
                        "content": {"const": item["content"]},
                        "confidence": confidence,
                    },
                    "required": ["source", "content", "confidence"],
                    "additionalProperties": False,
                }
                for item in offered
            ]
        }
    return {
        "type": "object",
        "properties": {
            "source": text_schema(source_chars),
            "content": text_schema(content_chars),
            "confidence": confidence_schema(),
        },
        "required": ["source", "content", "confidence"],
        "additionalProperties": False,
    }


def research_schema(offered: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "evidence": {
                "type": "array",
                "items": _evidence_item_schema(RESEARCH_SOURCE_CHARS, RESEARCH_CONTENT_CHARS, offered),
                "minItems": 1,
                "maxItems": RESEARCH_ITEMS,
            }
        },
        "required": ["evidence"],
        "additionalProperties": False,
    }


def _pool_text(pool: Sequence[Evidence]) -> str:
    lines = [
        f"- [{item.source}] {item.content[:POOL_CONTENT_CHARS]} (confidence {item.confidence:g})"
        for item in pool[:POOL_ITEMS_SHOWN]
    ]
    return "\n".join(lines)


# --- the driver --------------------------------------------------------------------------------


SEALED_OPENING = "openings"


class AgoraDriver(Driver, SealedPhases):
    protocol = "agora"
    options_type = AgoraOptions

    def __init__(self, path: Path, models: Mapping[str, str] | None = None) -> None:
        self.record_path = path
        self.models = dict(models or {})
        self.failure: Outcome | None = None
        self._load()

    @classmethod
    def resume(cls, path: Path, context: str | None = None) -> AgoraDriver:
        repaired = record.repair(path)
        driver = cls(path)
        driver.repaired_chain = repaired
        return driver

    @classmethod
    def start(cls, root: Path, options: AgoraOptions, started: str) -> AgoraDriver:
        require_subject("topic", options.topic)
        positions = _positions(options)
        if options.methodology.removeprefix(":") not in METHODOLOGIES:
            raise UserError(f"methodology {options.methodology!r} is unknown; use one of {', '.join(METHODOLOGIES)}.")
        if options.research < 0:
            raise UserError(f"--research is {options.research}; give 0 or more research drones.")
        if options.research and not options.sources:
            raise UserError(
                "research drones gather evidence from the sources; add --source PATH (a file or directory) "
                "so their evidence is read, not invented."
            )
        if options.research and any(role == RESEARCHER for role, _ in positions):
            raise UserError(f"'{RESEARCHER}' names the research drones; give that participant another role.")
        slug = record.slugify(options.topic)
        try:
            config = AgoraConfig(
                dialogue_id=slug,
                topic=options.topic,
                methodology=options.methodology.removeprefix(":"),
                participants=tuple(Position(role=role, position=text) for role, text in positions),
                max_turns=options.max_turns,
                deadlock_window=options.deadlock_window,
                require_reasons=options.require_reasons,
            )
        except ValidationError as exc:
            raise UserError(f"cannot start the debate: {first_error(exc)}.") from exc
        path = root / AGORA.folder / f"{slug}.md"
        record_place(root, AGORA.folder)
        if path.exists() or path.is_symlink():
            raise RecordExists(
                path, f"{path} already exists; resume it with `moot resume {path}` or choose another topic."
            )
        sources = tuple(cited_path(Path(source), root) for source in options.sources)
        grounding = Grounding(sources, root) if sources else None
        excerpts = _research_excerpts(grounding, config, options.research) if grounding and options.research else ()
        if options.research:
            # The sidecar first: a record without its pool would start debating without evidence.
            _write_research(research_path(path), ResearchFile(drones=options.research, excerpts=excerpts))
        try:
            record.create(path, config, started, sources)
        except FileExistsError as exc:  # created by someone else meanwhile
            raise RecordExists(path, f"{path} already exists; resume it with `moot resume {path}`.") from exc
        if options.sealed:  # the sealed answers' sidecar, present from the start, marks the openings as sealed
            atomic_write_text(sealed_path(path), "")
        return cls(path, {str(role): str(spec) for role, spec in options.models})

    # --- state ---

    def _load(self) -> None:
        text, problems = read_text(self.record_path)
        if text is None:
            raise UserError(f"cannot read {self.record_path}: {problems[0].message}")
        parsed, violations = record.parse(text, str(self.record_path))
        try:
            machine, state, _ = record.RECORD.load(self.record_path)
        except ProtocolViolationError as exc:
            violations = [*violations, *exc.violations]
            parsed = None
        if parsed is None:
            first = next((v for v in violations if v.is_error), None)
            raise UserError(f"{self.record_path} is not a valid Agora record ({first}); run `moot check` on it.")
        self.config = parsed.config
        self.turns = parsed.turns
        self.writer: TurnWriter[record.AgoraHeader, AgoraTurn, AgoraState, record.AgoraEntry] | None = None
        assert isinstance(machine, AgoraProtocol)
        self.machine: AgoraProtocol = machine
        self.state: AgoraState = state
        self.research = self._load_research()
        self.sealed = sealed_path(self.record_path).is_file()
        root = work_root(self.record_path)
        self.grounding = Grounding(parsed.sources, root) if parsed.sources else None

    def _load_research(self) -> ResearchFile | None:
        path = research_path(self.record_path)
        if not path.exists():
            return None
        try:
            return ResearchFile.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValidationError) as exc:
            raise UserError(
                f"the research sidecar {path} cannot be read ({first_error(exc)}); restore it or delete it "
                "to debate without an evidence pool."
            ) from exc

    def _research_pending(self) -> bool:
        return self.research is not None and self.state.turns == 0 and len(self.research.reports) < self.research.drones

    def roles(self) -> list[str]:
        extra = [RESEARCHER] if self.research is not None else []
        return [*self.config.roles, MEDIATOR, *extra]

    def next_speaker(self) -> str | None:
        if self.failure is not None:
            return None
        if self._research_pending():
            return RESEARCHER
        return self.machine.next_speaker(self.state)

    # --- the sealed openings ---

    def sealed_phase(self) -> SealedPhase | None:
        """With --sealed, the first round is one sealed phase: every drone that has not opened yet proposes,
        all asked at once. A drone that failed is asked again by ``moot resume``."""
        roles = self.config.roles
        if not self.sealed or self.failure is not None or self._research_pending() or self.state.turns >= len(roles):
            return None
        return SealedPhase(SEALED_OPENING, tuple(roles[self.state.turns :]), retry_failures=True)

    def _opening_number(self, role: str) -> int | None:
        """The turn a drone's sealed opening will be, while the openings are open."""
        phase = self.sealed_phase()
        if phase is None or role not in phase.roles:
            return None
        return self.state.turns + 1 + phase.roles.index(role)

    def sealed_text(self, turn: Any) -> str:
        opening: AgoraTurn = turn
        return opening.model_dump_json()

    def reveal(self, phase: SealedPhase, answers: Mapping[str, Any], failures: Mapping[str, str], now: str) -> None:
        """The openings as turns 1…n in speaking order, right after the last is in; with any failure, none."""
        if failures:
            role = next(r for r in phase.roles if r in failures)
            self.fail(role, failures[role], now)
            return
        for role in phase.roles:
            self.commit(answers[role])

    # --- asking ---

    def request_for(self, role: str) -> AgentRequest:
        if role == RESEARCHER:
            return self._research_request()
        fixed, instruction = self._context_block(role)
        config = self.config
        system = drone_system(role, config.methodology, config.max_turns, bool(self._pool()), config.require_reasons)
        return AgentRequest.with_prefix(
            [fixed],
            instruction,
            system=system,
            json_schema=self.reply_schema(role),
            max_tokens=REPLY_MAX_TOKENS,
            role=role,
            protocol=self.protocol,
        )

    def _pool(self) -> list[Evidence]:
        return self.research.pool if self.research is not None else []

    def _context_block(self, role: str) -> tuple[str, str]:
        """The seed's context injection, the mediator hearing every side instead of one opponent: the lines
        that stay the same across the role's turns (the stable prefix), then the turn and what was said."""
        lines = [
            f"DIALOGUE: {self.config.dialogue_id}",
            f"YOUR ROLE: {role}",
            f"YOUR POSITION: {self.config.position_of(role)}",
            f"TOPIC: {self.config.topic}",
        ]
        pool = self._pool()
        if pool:
            lines += ["", f"EVIDENCE POOL:\n{_pool_text(pool)}"]
        elif self.grounding is not None:
            passages = self._passages(role)
            lines += ["", "SOURCE PASSAGES (cite a line as path:line, copying its text):", passages]
        turn = [f"TURN: {self._opening_number(role) or self.state.turns + 1}", ""]
        if role == MEDIATOR:
            turn.append("PARTICIPANTS SAID:")
            for participant in self.config.participants:
                latest = next((t for t in reversed(self.turns) if t.role == participant.role), None)
                said = f"{latest.signal} (turn-{latest.number}): {latest.message}" if latest else "nothing yet"
                turn.append(f"- {participant.role}, arguing '{participant.position}': {said}")
        else:
            previous = self.turns[-1] if self.turns else None
            turn.append(f"OPPONENT SAID: {previous.message if previous else '(nothing yet: you open the debate)'}")
        turn += ["", "YOUR TURN. Output JSON only:"]
        return "\n".join(lines) + "\n\n", "\n".join(turn)

    def _passages(self, role: str) -> str:
        """The source passages for a debater without a pool: those retrieved for the topic and its position."""
        assert self.grounding is not None
        query = f"{self.config.topic} {self.config.position_of(role) or ''}"
        return "\n".join(p.render() for p in self.grounding.passages(query)) or "(nothing in the sources matches)"

    def _offered(self, role: str) -> list[dict[str, Any]]:
        """The evidence a grounded debater may cite: the pool's items, else its passages' lines."""
        if self.grounding is None:
            return []
        pool = self._pool()
        if pool:
            lines = [(item.source, item.content) for item in pool[:POOL_ITEMS_SHOWN]]
        else:
            lines = numbered_lines(self._passages(role))
        return offered_items(lines, EVIDENCE_CONTENT_CHARS, OFFERED_LINES)

    def choices(self, role: str) -> tuple[list[Signal], list[str]]:
        """The signals and targets ``role`` may use now, chosen so that every combination is legal.

        - Another participant's proposal exists: all five signals, and the targets are those
          proposals, latest first (an approve needs one; the other signals may name one too).
        - Otherwise, once turns exist: no approve (there is nothing to approve), and the targets
          are the latest turns.
        - The first turn: propose, no-change or defer, with no target (there is nothing to name).
        - The mediator's first turn is its compromise: propose.
        """
        # Latest first: a model that takes the first choice answers what was said last.
        latest = {proposal: turn for turn, proposal in sorted(self.state.proposal_turns.items())}
        others = sorted(
            (p for p, owner in self.state.proposals.items() if owner != role), key=lambda p: -latest.get(p, 0)
        )
        if role == MEDIATOR and MEDIATOR not in self.state.proposals.values():
            return ["propose"], others or self._recent_turns()
        if self._opening_number(role) is not None:
            return ["propose"], []  # a sealed opening: each drone's own proposal, nothing to name yet
        if others:
            return list(SIGNALS), others
        if self.state.turns:
            return [s for s in SIGNALS if s != "approve"], self._recent_turns()
        return ["propose", "no-change", "defer"], []

    def _recent_turns(self) -> list[str]:
        first = max(1, self.state.turns - RECENT_TURN_TARGETS + 1)
        return [f"turn-{n}" for n in range(self.state.turns, first - 1, -1)]

    def reply_schema(self, role: str) -> dict[str, Any]:
        """The seed's drone JSON, restricted to what is legal for ``role`` now and sized for 100 tokens.

        Every field is required so a small model writes them all, in the seed's order; the target
        is an enum (or null on the first turn); confidence is an enum of 0.05 steps, so it is in
        range by construction; a fact-based turn must carry one evidence item. Evidence is capped
        at one item (none in an opinion debate without a research pool or required reasons) to fit
        the 100 tokens.
        """
        signals, targets = self.choices(role)
        if self.caches_prefix(role):  # one schema for all its turns: read_reply holds it to the choices
            signals, targets = list(SIGNALS), []
        methodology = self.config.methodology
        offered = self._offered(role)
        quiet = methodology == "opinion" and not self.config.require_reasons and not self._pool() and not offered
        max_evidence = 0 if quiet else 1
        message_chars = MESSAGE_CHARS_WITH_EVIDENCE if max_evidence else MESSAGE_CHARS
        return {
            "type": "object",
            "properties": {
                "signal": {"type": "string", "enum": signals},
                "message": text_schema(message_chars),
                "confidence": confidence_schema(),
                "target": _target_schema(targets, self.caches_prefix(role)),
                "evidence": {
                    "type": "array",
                    "items": _evidence_item_schema(EVIDENCE_SOURCE_CHARS, EVIDENCE_CONTENT_CHARS, offered),
                    "minItems": 1 if methodology == "fact-based" else 0,
                    "maxItems": max_evidence,
                },
            },
            "required": ["signal", "message", "confidence", "target", "evidence"],
            "additionalProperties": False,
        }

    def _research_request(self) -> AgentRequest:
        assert self.research is not None
        research = self.research
        drone = len(research.reports) + 1
        focus = self.config.participants[(drone - 1) % len(self.config.participants)]
        lines = [
            f"DIALOGUE: {self.config.dialogue_id}",
            f"RESEARCH DRONE: {drone} of {research.drones}",
            f"TOPIC: {self.config.topic}",
            "POSITIONS:",
            *(f"- {p.role}: {p.position}" for p in self.config.participants),
            f"FOCUS: evidence for or against '{focus.position}'",
        ]
        excerpt = research.excerpts[(drone - 1) % len(research.excerpts)] if research.excerpts else ""
        if excerpt:
            lines += ["", "SOURCE PASSAGES (cite a line as path:line, copying its text):", excerpt]
        lines += ["", f"Report up to {RESEARCH_ITEMS} evidence items. Output JSON only:"]
        offered = offered_items(numbered_lines(excerpt), RESEARCH_CONTENT_CHARS, OFFERED_LINES)
        return AgentRequest(
            prompt="\n".join(lines),
            system=RESEARCH_SYSTEM,
            json_schema=research_schema(offered),
            max_tokens=RESEARCH_MAX_TOKENS,
            role=RESEARCHER,
            protocol=self.protocol,
        )

    # --- reading and writing turns ---

    def read_reply(self, role: str, text: str, now: str) -> Candidate:
        if role == RESEARCHER:
            return self._read_research(text)
        found = find_object(text)
        if isinstance(found, str):
            return Candidate(None, [reply_format_violation(found)])
        reply = record.decode_reply(found.text, first_line=found.line)
        if isinstance(reply, list):
            return Candidate(None, reply)
        number = self._opening_number(role)
        signals = self.choices(role)[0]
        if self.caches_prefix(role) and reply.signal not in signals:  # what a narrowed schema would offer
            return Candidate(
                None, [reply_format_violation(f"signal {reply.signal} is not legal now; use {' or '.join(signals)}.")]
            )
        if number is None:
            turn = make_turn(reply, self.state.turns + 1, role)
            return Candidate(turn, [*self.machine.validate(self.state, turn), *self._grounding_problems(turn.evidence)])
        if reply.signal != "propose":
            return Candidate(None, [reply_format_violation("a sealed opening is a propose; send signal propose.")])
        # Its place comes when all openings are revealed: check its content now as if it opened the debate.
        first = self.config.roles[self.state.turns]
        as_first = make_turn(reply, self.state.turns + 1, first)
        turn = make_turn(reply, number, role)
        return Candidate(turn, [*self.machine.validate(self.state, as_first), *self._grounding_problems(turn.evidence)])

    def _evidence_checks(self, items: Sequence[Evidence]) -> list[CitationCheck]:
        return self.grounding.check_evidence(items, self._pool()) if self.grounding is not None else []

    def _grounding_problems(self, items: Sequence[Evidence], researcher: bool = False) -> list[Violation]:
        checks = self._evidence_checks(items)
        problems = citation_violations(checks)
        if self.config.methodology == "fact-based" and not researcher:
            problems += fact_based_violations(checks)
        return problems

    def _read_research(self, text: str) -> Candidate:
        assert self.research is not None
        reply, problem = parse_reply(text, ResearchReply)
        if reply is None:
            return Candidate(None, [problem] if problem else [])
        problems = [*_evidence_problems(reply.evidence), *self._grounding_problems(reply.evidence, researcher=True)]
        report = ResearchReport(drone=len(self.research.reports) + 1, evidence=reply.evidence)
        return Candidate(report, problems)

    def commit(self, turn: AgoraTurn | ResearchReport) -> None:
        if isinstance(turn, ResearchReport):
            assert self.research is not None
            research = self.research.model_copy(update={"reports": (*self.research.reports, turn)})
            _write_research(research_path(self.record_path), research)
            self.research = research
            return
        marks = [mark_for(check) for check in self._evidence_checks(turn.evidence)]
        try:
            if self.writer is None:  # opening it checks the whole record and its chain once
                self.writer = record.RECORD.writer(self.record_path)
            self.state = self.writer.append([turn], notes=[marks]).state
        except BaseException:
            self._load()  # on a refusal the record changed under us; the caller sees the error
            raise
        # The writer keeps the validated state in memory: the record is not read back.
        self.turns = (*self.turns, turn)

    def fail(self, role: str, reason: str, now: str) -> Outcome:
        # The Outcome section holds only CONSENSUS or TIMEOUT (what the turns give), so a failure
        # is the run's outcome; the record stays open and `moot resume` continues it.
        self.failure = Outcome(name=FAILED, reason=reason)
        return self.failure

    def summary(self) -> Summary:
        summary = self.machine.summary(self.state)
        detail = dict(summary.detail)
        if self.research is not None:
            detail["research"] = {
                "drones": self.research.drones,
                "reported": len(self.research.reports),
                "evidence": len(self.research.pool),
            }
        if self.models:
            detail["models"] = dict(self.models)
        update: dict[str, Any] = {"detail": detail, "next_speaker": self.next_speaker()}
        if self.failure is not None and summary.outcome is None:
            update["outcome"] = self.failure
        return summary.model_copy(update=update)

    @classmethod
    def limit_refusal(cls, option: str) -> str | None:
        return (
            "the Agora spec ends a debate at its turn limit with TIMEOUT, which is final, so its limit cannot be "
            "raised; start a new debate with a higher one: `moot run agora --max-turns N`."
        )

    def call_plan(self) -> list[str]:
        """Every role (the drones, the mediator, a research drone) in rotation from the first speaker, up to the
        turn limit."""
        return taking_turns(self.roles(), self.next_speaker(), self.config.max_turns)

    def planned_calls(self) -> list[PlannedCall]:
        """A debater's prompt carries the latest turn (what its opponent said), the mediator's each debater's
        latest turn, a research drone's none."""
        plan = self.call_plan()
        latest: dict[str, int] = {}
        calls = []
        for index, role in enumerate(plan):
            if role == MEDIATOR:
                reads = tuple(sorted(latest.values()))
            else:
                reads = () if role == RESEARCHER or index == 0 else (index - 1,)
            calls.append(PlannedCall(role, reads=reads))
            if role in self.config.roles:
                latest[role] = index
        return calls


def _positions(options: AgoraOptions) -> tuple[tuple[str, str], ...]:
    if not options.positions:
        return default_positions(options.topic)
    if any(isinstance(p, str) or len(p) != 2 for p in options.positions):
        raise UserError("each position is a pair (role, position); write them like [['advocate', 'Use Strategy'], …].")
    return tuple((str(role), str(text)) for role, text in options.positions)


def _evidence_problems(items: Sequence[Evidence]) -> list[Violation]:
    found: list[Violation] = []
    for number, item in enumerate(items, start=1):
        if not 0.0 <= item.confidence <= 1.0:
            message = f"evidence item {number} has confidence {item.confidence}; give a number from 0.0 to 1.0."
            found.append(RULES.violation("AGORA_CONFIDENCE", message))
        for field in ("source", "content"):
            if not getattr(item, field).strip():
                message = f"evidence item {number} has an empty {field}; fill it in."
                found.append(RULES.violation("AGORA_EMPTY_TEXT", message))
    return found

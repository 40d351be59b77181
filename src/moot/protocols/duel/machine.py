"""The Socratic Duel: two participants, at most six evidence-backed turns, an explicit ending.

Pure: no I/O, no clock, no randomness. Timestamps arrive as text inside the config, the turns and the
conclusion. The rules are the seed skill's §TURN_RULES, §OUTCOMES and §DONT; their ids start with
``DUEL_``.

How a duel ends (decided here, from the turns alone; see docs/formats.md):

- ``ACCEPTED_CONSENSUS``: both participants have spoken and the latest turn of each is
  ``ACCEPTING_CONSENSUS`` with no blocking unresolved item.
- ``DISSENT``: both participants have spoken and the latest turn of each is ``DISSENTING`` (an explicit
  impasse); or the last allowed turn is accepted while a latest stance is ``DISSENTING`` or a latest
  turn still lists a blocking unresolved item.
- ``MAX_TURNS``: the last allowed turn (``max_turns``, 6 by default) is accepted without either.
- ``TIMEOUT`` and ``INVALIDATED`` are never computed: a coordinator records them in the conclusion.

Candidate convergence (both latest stances in {CONVERGING, ACCEPTING_CONSENSUS}, no blocking item) is
reported beside the outcome and never ends the duel by itself.

Not enforced here: topic focus (needs judgement, not text rules) and the peer-timeout exception to
alternation (the artifact format has no field that records a peer timeout).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from moot.core.machine import DeliberationProtocol, Outcome, Replay, Rule, RuleBook, Summary
from moot.errors import ProtocolViolationError, Severity, Violation

NAME = "duel"
SOURCE_SUFFIXES = frozenset({".md", ".markdown"})  # what a duel's source document may be
MAX_TURNS = 6  # the seed: "Do not exceed 3 turn pairs or 6 total turns." Also the default.
OPEN_STATUS = "OPEN"


class Stance(StrEnum):
    OPEN_TO_DEBATE = "OPEN_TO_DEBATE"
    CONVERGING = "CONVERGING"
    ACCEPTING_CONSENSUS = "ACCEPTING_CONSENSUS"
    DISSENTING = "DISSENTING"
    REVISING = "REVISING"


class OutcomeName(StrEnum):
    ACCEPTED_CONSENSUS = "ACCEPTED_CONSENSUS"
    DISSENT = "DISSENT"
    MAX_TURNS = "MAX_TURNS"
    TIMEOUT = "TIMEOUT"
    INVALIDATED = "INVALIDATED"


# Outcomes a coordinator records; the other three follow from the turns.
RECORDED_ONLY = frozenset({OutcomeName.TIMEOUT.value, OutcomeName.INVALIDATED.value})
STANCES = frozenset(s.value for s in Stance)
OUTCOMES = frozenset(o.value for o in OutcomeName)


class SupportKind(StrEnum):
    URL = "URL"
    SOURCE = "SOURCE"
    TURN = "TURN"
    PRINCIPLE = "PRINCIPLE"
    UNKNOWN = "UNKNOWN"


RULES = RuleBook(
    [
        Rule("DUEL_STANCE", "A turn's stance must be one of the five stances."),
        Rule(
            "DUEL_SECTION_EMPTY", "Position, Counterpoints, Agreements, Novel Argument, Unresolved Items are non-empty."
        ),
        Rule("DUEL_COUNTERPOINT_FIELDS", "Every counterpoint names what it addresses and states a claim."),
        Rule("DUEL_COUNTERPOINT_SUPPORT", "Every counterpoint includes support."),
        Rule("DUEL_SUPPORT_KIND", "Support is a URL, a source-file reference, a turn reference, or 'Principle: ...'."),
        Rule("DUEL_SOURCE_CITATION", "Source evidence cites the source path with a heading, line or quoted excerpt."),
        Rule("DUEL_TURN_REFERENCE", "A turn reference names an earlier turn of this duel."),
        Rule("DUEL_NOVEL_SUPPORT", "The novel argument includes support."),
        Rule("DUEL_NOVEL_REPEAT", "The novel argument adds a claim not already present in prior turns."),
        Rule("DUEL_STANCE_REVISION_SUPPORT", "A stance change from the participant's prior turn cites support."),
        Rule("DUEL_CONSENSUS_EVIDENCE", "ACCEPTING_CONSENSUS still includes evidence."),
        Rule("DUEL_CONSENSUS_UNRESOLVED", "ACCEPTING_CONSENSUS names a non-blocking limitation and no blocking item."),
        Rule("DUEL_ALTERNATION", "The same participant never takes two turns in a row."),
        Rule("DUEL_TURN_NUMBER", "Turns are numbered 1, 2, 3, ... without gaps or repeats."),
        Rule("DUEL_MAX_TURNS", "A duel has at most max_turns (6 by default) turns."),
        Rule("DUEL_PARTICIPANTS", "A duel has at most two participants."),
        Rule("DUEL_PARTICIPANT_UNLISTED", "A turn's author is a listed participant with the same harness and model."),
        Rule("DUEL_AFTER_TERMINAL", "Nothing is appended after a terminal outcome."),
        Rule("DUEL_CONCLUSION_FIELDS", "A conclusion has an outcome, closed time, convergence, reason and summary."),
        Rule("DUEL_CONCLUSION_INCONSISTENT", "A recorded conclusion agrees with the turns."),
        Rule(
            "DUEL_CONCLUSION_MISSING", "A duel whose turns reached an outcome records its conclusion.", Severity.WARNING
        ),
    ]
)

_FROZEN = ConfigDict(frozen=True)
_REPLY = ConfigDict(frozen=True, extra="forbid")

_SUPPORT_HELP = (
    "Evidence, one item each: a URL, the source path with a heading, line or quoted excerpt, 'Turn N', "
    "or 'Principle: ...'."
)


class DuelConfig(BaseModel):
    """What ``join`` decides once per duel; timestamps are text so the protocol stays clock-free."""

    model_config = _FROZEN

    duel_id: str
    source_path: str
    topic: str
    topic_slug: str
    max_turns: int = Field(default=MAX_TURNS, ge=1, le=MAX_TURNS)
    created: str = ""


class Participant(BaseModel):
    model_config = _FROZEN

    name: str
    harness: str
    model: str
    joined: str = ""


class Support(BaseModel):
    """One support item: the raw text as written and the kind :func:`classify_support` gave it."""

    model_config = _FROZEN

    kind: SupportKind
    text: str

    @classmethod
    def of(cls, text: str, source_path: str) -> Support:
        return cls(kind=classify_support(text, source_path), text=text)


class Counterpoint(BaseModel):
    model_config = _FROZEN

    addresses: str
    claim: str
    support: list[Support] = []


class UnresolvedItem(BaseModel):
    model_config = _REPLY

    text: str = Field(description="A question or limitation that is still open, in one line.")
    blocking: bool = Field(description="true if consensus is impossible until it is resolved.")


class DuelTurn(BaseModel):
    """One accepted turn. ``stance`` is text so that a record with an unknown stance still parses."""

    model_config = _FROZEN

    number: int
    participant: str
    harness: str
    model: str
    stance: str
    position: str
    counterpoints: list[Counterpoint] = []
    agreements: list[str] = []
    novel_argument: str
    novel_support: list[Support] = []
    unresolved: list[UnresolvedItem] = []
    stance_revision_support: list[str] = []

    @property
    def blocking(self) -> list[UnresolvedItem]:
        return [item for item in self.unresolved if item.blocking]


class ReplyCounterpoint(BaseModel):
    model_config = _REPLY

    addresses: str = Field(description="What this answers: 'Turn N' or a section of the source document.")
    claim: str = Field(description="Your counter-claim, in one line.")
    support: list[str] = Field(description=_SUPPORT_HELP)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _paragraphs(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


# What a model fills in for one turn (moot adds the number and the author's identity). The docstring
# and descriptions are shown to the model; the schema stays plain objects, strings, booleans, arrays
# and one string enum so that it turns into a decoding grammar easily.
class DuelReply(BaseModel):
    """Your turn in a Socratic duel: a position, counterpoints and a new argument, each with evidence."""

    model_config = _REPLY

    stance: Literal["OPEN_TO_DEBATE", "CONVERGING", "ACCEPTING_CONSENSUS", "DISSENTING", "REVISING"] = Field(
        description="Where you stand now. ACCEPTING_CONSENSUS still needs evidence and one non-blocking limitation."
    )
    position: str = Field(description="Your position on the topic, in a short paragraph.")
    counterpoints: list[ReplyCounterpoint] = Field(description="At least one counterpoint, each with support.")
    agreements: list[str] = Field(description="At least one point you agree with, one line each.")
    novel_argument: str = Field(description="A claim nobody has made in an earlier turn.")
    novel_support: list[str] = Field(description=_SUPPORT_HELP)
    unresolved: list[UnresolvedItem] = Field(description="At least one open item.")
    stance_revision_support: list[str] = Field(
        description="If your stance differs from your previous turn: the support that changed it. Otherwise empty."
    )

    def to_turn(self, *, number: int, participant: str, harness: str, model: str, source_path: str) -> DuelTurn:
        """The turn this reply makes; list items become single lines so they render unambiguously."""
        return DuelTurn(
            number=number,
            participant=participant,
            harness=harness,
            model=model,
            stance=self.stance,
            position=_paragraphs(self.position),
            counterpoints=[
                Counterpoint(
                    addresses=_one_line(c.addresses),
                    claim=_one_line(c.claim),
                    support=[Support.of(_one_line(s), source_path) for s in c.support],
                )
                for c in self.counterpoints
            ],
            agreements=[_one_line(a) for a in self.agreements],
            novel_argument=_paragraphs(self.novel_argument),
            novel_support=[Support.of(_one_line(s), source_path) for s in self.novel_support],
            unresolved=[UnresolvedItem(text=_one_line(u.text), blocking=u.blocking) for u in self.unresolved],
            stance_revision_support=[_one_line(s) for s in self.stance_revision_support],
        )


def reply_json_schema() -> dict[str, Any]:
    return DuelReply.model_json_schema()


def turn_json_schema() -> dict[str, Any]:
    return DuelTurn.model_json_schema()


class DuelConclusion(BaseModel):
    """The ``## Terminal Conclusion`` section. Outcome is text and convergence may be unknown
    (``None``) so that a malformed conclusion still parses and is reported by rule."""

    model_config = _FROZEN

    outcome: str
    closed_at: str
    candidate_convergence: bool | None
    reason: str
    summary: str


class DuelState(BaseModel):
    model_config = _FROZEN

    turns: tuple[DuelTurn, ...] = ()
    conclusion: DuelConclusion | None = None


# --- support classification -------------------------------------------------------------------

_PRINCIPLE = re.compile(r"^\s*principle\s*:\s*\S", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s<>()\[\]`\"']+", re.IGNORECASE)
_TURN_REF = re.compile(r"\bturn\s+(\d+)\b", re.IGNORECASE)
_LINE_REF = re.compile(r"\blines?\s+\d+|\bL\d+\b|\.(?:md|markdown)`?:\d+", re.IGNORECASE)
_HEADING_REF = re.compile(r"§\s*\S|#+\s*\w|\b(?:heading|section)\b\s*\S", re.IGNORECASE)
_QUOTE = re.compile(r"\"[^\"]{3,}\"|“[^”]{3,}”|«[^»]{3,}»")
_SOURCE_WORD = re.compile(r"^\s*(?:source|src)\b", re.IGNORECASE)


@functools.cache
def _source_names(source_path: str) -> tuple[str, ...]:
    name = re.split(r"[\\/]", source_path.strip())[-1]
    return tuple(n for n in (source_path.strip(), name) if n)


def source_citations(source_path: str) -> list[str]:
    """What cites the source: its path as the record writes it and, for a path relative to the record
    (``../docs/a.md``, a duel shared between hosts), any path that ends in ``/docs/a.md`` (each host's
    own absolute path to its copy)."""
    named = source_path.strip()
    tail = named
    while tail.startswith("../"):
        tail = tail[3:]
    return [n for n in (named, f"/{tail}" if tail != named else "") if n]


_BACKTICKED = re.compile(r"`([^`\s/][^`\s]*)`")


def cites_source(text: str, source_path: str) -> bool:
    """``text`` names the source by a path :func:`source_citations` lists or, for an absolute source, by a path
    in backticks that the absolute one ends in (``docs/a.md``: its path relative to the work root, which moot
    writes so that a record shows no path of the machine it was written on)."""
    if any(name in text for name in source_citations(source_path)):
        return True
    named = source_path.strip()
    return named.startswith("/") and any(
        named.endswith(f"/{cited}") and ".." not in cited.split("/") for cited in _BACKTICKED.findall(text)
    )


def has_source_locator(text: str) -> bool:
    """A heading, a line number or a quoted excerpt."""
    return any(p.search(text) for p in (_LINE_REF, _HEADING_REF, _QUOTE))


def quoted_excerpts(text: str) -> list[tuple[str, int | None]]:
    """The quoted excerpts of a support item, each with the line the item cites (or None)."""
    line = _LINE_REF.search(text)
    number = re.search(r"\d+", line.group(0)) if line else None
    cited = int(number.group(0)) if number and len(number.group(0)) <= 9 else None
    return [(match.group(0)[1:-1], cited) for match in _QUOTE.finditer(text)]


def classify_support(text: str, source_path: str) -> SupportKind:
    """Which of the four kinds of support ``text`` is, or UNKNOWN.

    Order matters: an explicit ``Principle:`` wins, then a mention of the source document, a URL, a
    turn reference, and last anything that looks like a source locator without naming the source
    (classified SOURCE so that :data:`DUEL_SOURCE_CITATION` asks for the path).
    """
    if _PRINCIPLE.search(text):
        return SupportKind.PRINCIPLE
    if any(name in text for name in _source_names(source_path)):
        return SupportKind.SOURCE
    if _URL.search(text):
        return SupportKind.URL
    if _TURN_REF.search(text):
        return SupportKind.TURN
    if _SOURCE_WORD.search(text) or has_source_locator(text):
        return SupportKind.SOURCE
    return SupportKind.UNKNOWN


def is_evidence(text: str, source_path: str) -> bool:
    return classify_support(text, source_path) is not SupportKind.UNKNOWN


# --- repeated arguments -----------------------------------------------------------------------

_JACCARD_REPEAT = 0.9
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def normalise_claim(text: str) -> str:
    """casefold, punctuation removed, whitespace collapsed: two claims that differ only so are one.

    Each distinct character is classified once and the text translated in one pass: a long turn costs a
    pass over its characters, not a Python call per character.
    """
    folded = text.casefold()
    blanked = {ord(ch): " " for ch in set(folded) if unicodedata.category(ch).startswith(("P", "S"))}
    return " ".join(folded.translate(blanked).split())


def _claim_units(turn: DuelTurn) -> Iterable[str]:
    units = [turn.position, turn.novel_argument, *(c.claim for c in turn.counterpoints), *turn.agreements]
    for unit in units:
        yield unit
        yield from _SENTENCE_END.split(unit)


def repeated_claim(claim: str, prior_turns: Sequence[DuelTurn]) -> int | None:
    """The number of the first prior turn whose position, claim, novel argument or agreement (or one
    of their sentences) ``claim`` equals, nearly equals (token-set Jaccard >= 0.9) or quotes whole
    (four words or more), after :func:`normalise_claim`; ``None`` when the claim is new."""
    mine = normalise_claim(claim)
    if not mine:
        return None
    tokens = set(mine.split())
    for turn in prior_turns:
        for unit in _claim_units(turn):
            theirs = normalise_claim(unit)
            if not theirs:
                continue
            other = set(theirs.split())
            near = len(tokens & other) / len(tokens | other) >= _JACCARD_REPEAT
            if mine == theirs or near or (len(tokens) >= 4 and f" {mine} " in f" {theirs} "):
                return turn.number
    return None


# --- state queries ----------------------------------------------------------------------------


def latest_turns(turns: Sequence[DuelTurn]) -> dict[str, DuelTurn]:
    """Each participant's latest turn, in order of first appearance."""
    latest: dict[str, DuelTurn] = {}
    for turn in turns:
        latest[turn.participant] = turn
    return latest


def candidate_convergence(turns: Sequence[DuelTurn]) -> bool:
    """Both participants lean to agreement with nothing blocking. A signal, never an ending."""
    latest = list(latest_turns(turns).values())
    leaning = {Stance.CONVERGING.value, Stance.ACCEPTING_CONSENSUS.value}
    return len(latest) == 2 and all(t.stance in leaning and not t.blocking for t in latest)


def computed_outcome(config: DuelConfig, turns: Sequence[DuelTurn]) -> Outcome | None:
    """The outcome the turns themselves reach (see the module docstring), or ``None`` while open."""
    latest = list(latest_turns(turns).values())
    if len(latest) == 2:
        if all(t.stance == Stance.ACCEPTING_CONSENSUS.value and not t.blocking for t in latest):
            return Outcome(
                name=OutcomeName.ACCEPTED_CONSENSUS.value,
                reason=f"the latest turns of both participants accept consensus with no blocking item "
                f"(turns {latest[0].number} and {latest[1].number})",
                consensus=True,
            )
        if all(t.stance == Stance.DISSENTING.value for t in latest):
            return Outcome(
                name=OutcomeName.DISSENT.value,
                reason="the latest turns of both participants are DISSENTING",
            )
    if len(turns) < config.max_turns:
        return None
    if len(latest) == 2:
        dissenting = [t.participant for t in latest if t.stance == Stance.DISSENTING.value]
        blocked = [t.participant for t in latest if t.blocking]
        if dissenting or blocked:
            who = ", ".join(dict.fromkeys([*dissenting, *blocked]))
            return Outcome(
                name=OutcomeName.DISSENT.value,
                reason=f"turn {len(turns)} of {config.max_turns} was accepted while material disagreement "
                f"remains ({who}: a DISSENTING stance or a blocking unresolved item)",
            )
    return Outcome(
        name=OutcomeName.MAX_TURNS.value,
        reason=f"turn {len(turns)} of {config.max_turns} was accepted without consensus or dissent",
    )


def expected_status(conclusion: DuelConclusion | None) -> str:
    """The Status a record shows: OPEN until a conclusion is written, then its outcome."""
    return conclusion.outcome if conclusion is not None and conclusion.outcome else OPEN_STATUS


# --- conclusions ------------------------------------------------------------------------------


def check_conclusion(config: DuelConfig, turns: Sequence[DuelTurn], conclusion: DuelConclusion) -> list[Violation]:
    """Every way a recorded terminal conclusion is incomplete or disagrees with the turns."""
    found: list[Violation] = []

    def missing(message: str) -> None:
        found.append(RULES.violation("DUEL_CONCLUSION_FIELDS", message))

    if conclusion.outcome not in OUTCOMES:
        missing(f"Outcome {conclusion.outcome!r} is not one of {', '.join(sorted(OUTCOMES))}; write one of them.")
    if not conclusion.closed_at.strip():
        missing("Closed At is empty; write the time the duel closed.")
    if conclusion.candidate_convergence is None:
        missing("Candidate Convergence is missing or unreadable; write true or false.")
    if not conclusion.reason.strip():
        missing("Reason is empty; write why the duel ended.")
    if not conclusion.summary.strip():
        missing("the conclusion has no summary text; add a summary naming the source and the topic.")
    else:
        if not any(name in conclusion.summary for name in _source_names(config.source_path)):
            missing(f"the conclusion summary does not mention the source; cite `{config.source_path}` in it.")
        if config.topic.strip() and config.topic.strip().casefold() not in conclusion.summary.casefold():
            missing(f"the conclusion summary does not mention the topic; name {config.topic!r} in it.")

    computed = computed_outcome(config, turns)
    if conclusion.outcome in OUTCOMES and conclusion.outcome not in RECORDED_ONLY:
        if computed is None or computed.name != conclusion.outcome:
            actual = "leave the duel open" if computed is None else f"reach {computed.name}"
            found.append(
                RULES.violation(
                    "DUEL_CONCLUSION_INCONSISTENT",
                    f"the conclusion records {conclusion.outcome} but the turns {actual}; record the outcome the "
                    "turns reach or INVALIDATED.",
                )
            )
    elif conclusion.outcome == OutcomeName.TIMEOUT.value and computed is not None:
        found.append(
            RULES.violation(
                "DUEL_CONCLUSION_INCONSISTENT",
                f"the conclusion records TIMEOUT but the turns already reach {computed.name}; record {computed.name}.",
            )
        )
    converging = candidate_convergence(turns)
    if conclusion.candidate_convergence is not None and conclusion.candidate_convergence != converging:
        found.append(
            RULES.violation(
                "DUEL_CONCLUSION_INCONSISTENT",
                f"the conclusion records Candidate Convergence {str(conclusion.candidate_convergence).lower()} but the "
                f"turns give {str(converging).lower()}; write {str(converging).lower()}.",
            )
        )
    return found


def draft_conclusion(
    config: DuelConfig,
    turns: Sequence[DuelTurn],
    *,
    closed_at: str,
    outcome: OutcomeName | None = None,
    reason: str | None = None,
    source: str | None = None,
) -> DuelConclusion:
    """A conclusion that :func:`check_conclusion` accepts: the computed outcome unless the
    coordinator names TIMEOUT or INVALIDATED (with its reason). ``source`` is how its summary names the source
    document (default: the seed's path; it must end in the source's file name)."""
    computed = computed_outcome(config, turns)
    if outcome is None:
        if computed is None:
            raise ValueError("the duel is still open; pass outcome=TIMEOUT or INVALIDATED with a reason")
        outcome, reason = OutcomeName(computed.name), reason or computed.reason
    if not reason:
        raise ValueError(f"a {outcome.value} conclusion needs a reason")
    summary = (
        f"Socratic duel on {config.topic} over `{source or config.source_path}` ended {outcome.value} after "
        f"{len(turns)} turn(s): {reason.rstrip('.')}."
    )
    return DuelConclusion(
        outcome=outcome.value,
        closed_at=closed_at,
        candidate_convergence=candidate_convergence(turns),
        reason=reason,
        summary=summary,
    )


# --- the state machine ------------------------------------------------------------------------

_REQUIRED_SECTIONS = ("Position", "Counterpoints", "Agreements", "Novel Argument", "Unresolved Items")


def _empty_sections(turn: DuelTurn) -> list[str]:
    filled = {
        "Position": bool(turn.position.strip()),
        "Counterpoints": bool(turn.counterpoints),
        "Agreements": any(a.strip() for a in turn.agreements),
        "Novel Argument": bool(turn.novel_argument.strip()),
        "Unresolved Items": bool(turn.unresolved),
    }
    return [name for name in _REQUIRED_SECTIONS if not filled[name]]


class DuelProtocol(DeliberationProtocol[DuelTurn, DuelState]):
    """Validates turns against one duel's config and (when known) its participants table."""

    name: ClassVar[str] = "duel"
    rules: ClassVar[RuleBook] = RULES
    turn_model: ClassVar[type[BaseModel]] = DuelTurn

    def __init__(self, config: DuelConfig, participants: Sequence[Participant] = ()) -> None:
        self.config = config
        self.participants = tuple(participants)

    def initial_state(self) -> DuelState:
        return DuelState()

    def _names(self, state: DuelState) -> list[str]:
        return list(dict.fromkeys([*(p.name for p in self.participants), *(t.participant for t in state.turns)]))

    def next_speaker(self, state: DuelState) -> str | None:
        if self.outcome(state) is not None:
            return None
        names = self._names(state)
        if not state.turns:
            return names[0] if names else None
        others = [n for n in names if n != state.turns[-1].participant]
        return others[0] if others else None

    def outcome(self, state: DuelState) -> Outcome | None:
        recorded = state.conclusion
        if recorded is not None and recorded.outcome in RECORDED_ONLY:
            return Outcome(name=recorded.outcome, reason=recorded.reason or "recorded by the coordinator")
        return computed_outcome(self.config, state.turns)

    def apply(self, state: DuelState, turn: DuelTurn) -> DuelState:
        return state.model_copy(update={"turns": (*state.turns, turn)})

    def conclude(self, state: DuelState, conclusion: DuelConclusion) -> DuelState:
        """Record the terminal conclusion, refusing one that is incomplete or disagrees with the turns."""
        problems = self.conclusion_violations(state, conclusion)
        if any(v.is_error for v in problems):
            raise ProtocolViolationError(problems)
        return state.model_copy(update={"conclusion": conclusion})

    def conclusion_violations(self, state: DuelState, conclusion: DuelConclusion) -> list[Violation]:
        """What is wrong with writing ``conclusion`` now (nothing may follow an earlier conclusion)."""
        if state.conclusion is not None:
            return [
                RULES.violation(
                    "DUEL_AFTER_TERMINAL", f"the duel already concluded {state.conclusion.outcome}; leave it closed."
                )
            ]
        return check_conclusion(self.config, state.turns, conclusion)

    def recorded_conclusion_violations(self, state: DuelState) -> list[Violation]:
        """The recorded conclusion checked against the turns, or a warning when one is due but missing."""
        if state.conclusion is not None:
            return check_conclusion(self.config, state.turns, state.conclusion)
        reached = computed_outcome(self.config, state.turns)
        if reached is None:
            return []
        return [
            RULES.violation(
                "DUEL_CONCLUSION_MISSING",
                f"the turns reached {reached.name} but no Terminal Conclusion is recorded; write the conclusion.",
            )
        ]

    def validate(self, state: DuelState, turn: DuelTurn) -> list[Violation]:
        position = len(state.turns) + 1
        previous = state.turns[-1] if state.turns else None
        if len(state.turns) >= self.config.max_turns:
            return [v.at(turn=position) for v in self._past_limit(len(state.turns), previous, turn)]
        found = []
        if (ended := self.outcome(state)) is not None or state.conclusion is not None:
            name = ended.name if ended is not None else state.conclusion.outcome if state.conclusion else ""
            found.append(
                RULES.violation(
                    "DUEL_AFTER_TERMINAL",
                    f"the duel already ended with {name}; record the conclusion and append nothing.",
                )
            )
        found += [
            *self._place_violations(len(state.turns), previous, turn),
            *self._participant_violations(state, turn),
            *self._content_violations(state, turn),
        ]
        return [v.at(turn=position) for v in found]

    def replay(self, turns: Iterable[DuelTurn], state: DuelState | None = None) -> Replay[DuelState]:
        """As every protocol replays, except that the turns past the limit join the state once, at the end: they
        are checked by their place alone (:meth:`_past_limit`), so a record of thousands costs each the same."""
        current = self.initial_state() if state is None else state
        found: list[Violation] = []
        late: list[DuelTurn] = []
        for index, turn in enumerate(turns, start=1):
            count = len(current.turns) + len(late)
            if count < self.config.max_turns:
                found.extend(v.at(turn=index) for v in self.validate(current, turn))
                current = self.apply(current, turn)
                continue
            previous = late[-1] if late else current.turns[-1] if current.turns else None
            found.extend(v.at(turn=index) for v in self._past_limit(count, previous, turn))
            late.append(turn)
        if late:
            current = current.model_copy(update={"turns": (*current.turns, *late)})
        return Replay(state=current, violations=found)

    def _past_limit(self, count: int, previous: DuelTurn | None, turn: DuelTurn) -> Iterable[Violation]:
        """A turn after ``count`` turns, past the limit: it must go whatever it says, so only its place is told."""
        yield RULES.violation(
            "DUEL_MAX_TURNS",
            f"turn {count + 1} exceeds the limit of {self.config.max_turns} turns; conclude the duel instead.",
        )
        yield from self._place_violations(count, previous, turn)

    def _place_violations(self, count: int, previous: DuelTurn | None, turn: DuelTurn) -> Iterable[Violation]:
        """The turn's number and the alternation: what the count and the previous turn alone decide."""
        if turn.number != count + 1:
            yield RULES.violation("DUEL_TURN_NUMBER", f"turn is numbered {turn.number}; number it {count + 1}.")
        if previous is not None and previous.participant == turn.participant:
            yield RULES.violation(
                "DUEL_ALTERNATION",
                f"{turn.participant} also wrote the previous turn; wait for the other participant's turn.",
            )

    def _participant_violations(self, state: DuelState, turn: DuelTurn) -> Iterable[Violation]:
        names = self._names(state)
        if turn.participant not in names and len(names) >= 2:
            yield RULES.violation(
                "DUEL_PARTICIPANTS",
                f"{turn.participant} would be a third participant after {' and '.join(names)}; a duel has exactly two.",
            )
        if self.participants:
            listed = next((p for p in self.participants if p.name == turn.participant), None)
            if listed is None:
                yield RULES.violation(
                    "DUEL_PARTICIPANT_UNLISTED",
                    f"{turn.participant} is not in the Participants table; add the participant before their turn.",
                )
            elif (listed.harness, listed.model) != (turn.harness, turn.model):
                yield RULES.violation(
                    "DUEL_PARTICIPANT_UNLISTED",
                    f"{turn.participant} is listed as ({listed.harness} / {listed.model}) but the turn says "
                    f"({turn.harness} / {turn.model}); use the listed harness and model.",
                )

    def _support_violations(self, turn: DuelTurn, where: str, texts: Iterable[str]) -> Iterable[Violation]:
        source = self.config.source_path
        for text in texts:
            kind = classify_support(text, source)
            if kind is SupportKind.UNKNOWN:
                yield RULES.violation(
                    "DUEL_SUPPORT_KIND",
                    f"support {text!r} in {where} is not a URL, source reference, turn reference or "
                    "'Principle: ...'; rewrite it as one of those.",
                )
            elif kind is SupportKind.SOURCE and not cites_source(text, source):
                yield RULES.violation(
                    "DUEL_SOURCE_CITATION",
                    f"source evidence {text!r} in {where} does not cite the source path; write `{source}` with a "
                    "heading, line or quoted excerpt.",
                )
            elif kind is SupportKind.SOURCE and not has_source_locator(text):
                yield RULES.violation(
                    "DUEL_SOURCE_CITATION",
                    f"source evidence {text!r} in {where} names no heading, line or quoted excerpt; add one.",
                )
            elif kind is SupportKind.TURN:
                yield from self._turn_reference_violations(turn, where, text)

    def _turn_reference_violations(self, turn: DuelTurn, where: str, text: str) -> Iterable[Violation]:
        for match in _TURN_REF.finditer(text):
            digits = match.group(1)
            # Longer numbers are past any turn (and int() refuses more than 4300 digits).
            number = int(digits) if len(digits) <= 9 else None
            if number is None or not 1 <= number < turn.number:
                shown = digits if number is not None else digits[:9] + "…"
                yield RULES.violation(
                    "DUEL_TURN_REFERENCE",
                    f"{where} refers to turn {shown}, which is not an earlier turn; refer to a turn before "
                    f"turn {turn.number} or to the source.",
                )

    def _content_violations(self, state: DuelState, turn: DuelTurn) -> Iterable[Violation]:
        source = self.config.source_path
        if turn.stance not in STANCES:
            yield RULES.violation(
                "DUEL_STANCE", f"stance {turn.stance!r} is not one of {', '.join(s.value for s in Stance)}; use one."
            )
        for section in _empty_sections(turn):
            yield RULES.violation("DUEL_SECTION_EMPTY", f"the {section} section is empty; write at least one entry.")
        for index, point in enumerate(turn.counterpoints, start=1):
            where = f"counterpoint {index}"
            if not point.addresses.strip() or not point.claim.strip():
                field = "Addresses" if not point.addresses.strip() else "Claim"
                yield RULES.violation("DUEL_COUNTERPOINT_FIELDS", f"{where} has no {field}; write '{field}: ...'.")
            if not point.support:
                yield RULES.violation(
                    "DUEL_COUNTERPOINT_SUPPORT", f"{where} has no support; add a 'Support:' list with evidence."
                )
            yield from self._support_violations(turn, where, (s.text for s in point.support))
            if _TURN_REF.match(point.addresses.strip()):
                yield from self._turn_reference_violations(turn, f"{where} Addresses", point.addresses)
        if turn.novel_argument.strip() and not turn.novel_support:
            yield RULES.violation(
                "DUEL_NOVEL_SUPPORT", "the novel argument has no support; add a 'Support:' list under it."
            )
        yield from self._support_violations(turn, "the novel argument", (s.text for s in turn.novel_support))
        repeated = repeated_claim(turn.novel_argument, state.turns)
        if repeated is not None:
            yield RULES.violation(
                "DUEL_NOVEL_REPEAT",
                f"the novel argument repeats a claim already made in turn {repeated}; make a claim not yet argued.",
            )
        previous = latest_turns(state.turns).get(turn.participant)
        if (
            previous is not None
            and previous.stance != turn.stance
            and not any(is_evidence(s, source) for s in turn.stance_revision_support)
        ):
            yield RULES.violation(
                "DUEL_STANCE_REVISION_SUPPORT",
                f"stance changed from {previous.stance} to {turn.stance} without support; cite a turn, the source, "
                "a URL or a principle under Stance Revision Support.",
            )
        if turn.stance == Stance.ACCEPTING_CONSENSUS.value:
            supports = [s.text for c in turn.counterpoints for s in c.support] + [s.text for s in turn.novel_support]
            if not any(is_evidence(s, source) for s in supports):
                yield RULES.violation(
                    "DUEL_CONSENSUS_EVIDENCE", "ACCEPTING_CONSENSUS without evidence; support the acceptance."
                )
            if turn.blocking or not turn.unresolved:
                problem = "lists a blocking item" if turn.blocking else "names no remaining limitation"
                yield RULES.violation(
                    "DUEL_CONSENSUS_UNRESOLVED",
                    f"ACCEPTING_CONSENSUS {problem}; keep at least one non-blocking limitation and resolve "
                    "every blocking item first.",
                )

    def summary(self, state: DuelState) -> Summary:
        ended = self.outcome(state)
        return Summary(
            protocol=self.name,
            turns=len(state.turns),
            next_speaker=self.next_speaker(state),
            # A pair of turns is a round: the one in progress while the duel is open, its last turn's once ended.
            round=(len(state.turns) + 1) // 2 if ended is not None else len(state.turns) // 2 + 1,
            outcome=ended,
            detail=summary_detail(self.config, state, ended),
        )


def summary_detail(config: DuelConfig, state: DuelState, ended: Outcome | None) -> dict[str, Any]:
    latest = latest_turns(state.turns)
    return {
        "candidate_convergence": candidate_convergence(state.turns),
        "consensus": bool(ended and ended.consensus),
        "latest_stances": {name: turn.stance for name, turn in latest.items()},
        "blocking_items": sum(len(t.blocking) for t in latest.values()),
        "max_turns": config.max_turns,
        "source_path": config.source_path,
        "topic": config.topic,
        "conclusion_recorded": state.conclusion is not None,
    }


# --- the topic ---------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(?P<text>.+?)(?:[ \t]+#+)?[ \t]*$")


def markdown_headings(text: str) -> list[str]:
    """ATX headings outside fenced code, in order, as one clean line each."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _ATX.match(line)
        if match is not None:
            heading = " ".join(match.group("text").replace("|", "/").split()).strip("*_ ")
            if heading:
                found.append(heading)
    return found


def infer_topic(topic: str | None, source_text: str, source_stem: str) -> str:
    """The seed's topic: the given one, else the source's first heading (outside fenced code), else its file stem."""
    for candidate in (topic, *markdown_headings(source_text)[:1], source_stem):
        if candidate and " ".join(candidate.split()):
            return " ".join(candidate.split())
    return source_stem or "debate"

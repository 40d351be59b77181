"""Agora debate drones: participants trade signed signals (propose, counter, approve, no-change,
defer) in a fixed speaking order until they reach a Nash consensus or the turn limit.

Seed: agora-debate-drone.md. The seed fixes only the drone's reply JSON (:class:`AgoraReply`); the
rest is decided here and documented in ``docs/formats.md``:

- Speaking order is round-robin over ``participants``. After a turn out of order the order resumes
  after the speaker who actually spoke, so one mistake is reported once, not on every later turn.
- A ``propose`` turn creates the proposal ``proposal-<role>``; a later propose by the same role
  supersedes it under the same id. A target is ``turn-N`` (an earlier turn) or a known proposal id;
  ``turn-N`` of a propose turn stands for that turn's proposal.
- ``counter`` and ``approve`` must name a target; an ``approve`` must name a proposal, not one's own.
- Consensus (the seed's rule, with the hive-mcp bug fixed): every participant has spoken; every
  participant's last signal is ``approve`` or ``no-change``; there is at least one approval; all
  approvals name the same proposal P; nobody approves their own P; and whoever holds ``no-change``
  owns P. Two participants each holding ``no-change`` on their own proposals is therefore a
  stalemate, not consensus. ``defer`` is neutral: not an equilibrium signal, so it blocks consensus.
- Deadlock: a full round (one turn per participant) without any ``approve`` is *stalled*. After
  ``deadlock_window`` stalled rounds in a row the mediator is recruited (``mediator_needed``) and
  from then on speaks after every full round: ``[p1 … pn] mediator [p1 … pn] mediator …``. Its
  turns count towards ``max_turns``; its signals do not count towards consensus, but its proposal
  ``proposal-mediator`` can be approved by all participants.
- The limit ``max_turns`` counts every turn; a debate still open after it ends in ``TIMEOUT``.
- ``require_reasons`` (off by default): no change of stance without a reason. A drone's stance is the
  proposal it backs (its own once it proposes, the one it approves) and the proposals it has countered
  since; a turn changes it when it backs another proposal than the one the drone backed, approves a
  proposal the drone countered, or counters the one it backs. Such a turn must carry an evidence item
  that no earlier turn carries (same source and content, ignoring case and spacing); in a grounded
  debate any evidence item will do, since each one must verify in the sources.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from moot.core.confidence import in_range
from moot.core.growing import GrowingMap
from moot.core.hollow import Said, echo_key, echoed, has_content, said_after
from moot.core.machine import DeliberationProtocol, Outcome, Rule, RuleBook, Summary
from moot.errors import Severity, Violation

NAME = "agora"
MEDIATOR = "mediator"
MEDIATOR_POSITION = (
    "Break the deadlock: find a proposal every participant can approve, and propose a compromise "
    "(proposal-mediator) when none exists."
)
DEFAULT_MAX_TURNS = 20
DEFAULT_DEADLOCK_WINDOW = 3
MAX_SENTENCES = 4
MAX_ROLE_LENGTH = 64

Signal = Literal["propose", "counter", "approve", "no-change", "defer"]
Methodology = Literal["opinion", "fact-based", "mixed"]
SIGNALS: tuple[Signal, ...] = ("propose", "counter", "approve", "no-change", "defer")
METHODOLOGIES: tuple[Methodology, ...] = ("opinion", "fact-based", "mixed")
DISRUPTION: frozenset[str] = frozenset({"propose", "counter"})
EQUILIBRIUM: frozenset[str] = frozenset({"approve", "no-change"})
CONSENSUS = "CONSENSUS"
TIMEOUT = "TIMEOUT"

_ROLE = re.compile(r"[^\W_][\w.-]*")
_TURN_REF = re.compile(r"turn-([0-9]{1,9})")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

# A broken rule and the part of the turn it is about: "heading", "proposal", "message",
# "confidence", "target" or "evidence" (the record format locates the violation there).
Located = tuple[str, Violation]

RULES = RuleBook(
    [
        Rule("AGORA_HEADER", "The record starts with '# Agora Debate: <topic>' and its metadata list."),
        Rule(
            "AGORA_CONFIG",
            "The debate has at least two participants with distinct file-safe roles (not 'mediator'), "
            "max turns > participants and a deadlock window >= 1.",
        ),
        Rule(
            "AGORA_TURN_FORMAT",
            "Each turn is '## Turn N — <role>', an optional 'Proposal:' line and one ```json block.",
        ),
        Rule("AGORA_TURN_JSON", "A turn is one strict JSON object."),
        Rule(
            "AGORA_TURN_SCHEMA",
            "A turn has signal, message and confidence, optionally target and evidence, with the seed's types.",
        ),
        Rule("AGORA_TURN_NUMBER", "Turns are numbered 1, 2, 3, … without gaps or repeats."),
        Rule(
            "AGORA_SPEAKER_ORDER",
            "Participants speak round-robin in the listed order; a recruited mediator speaks after each full round.",
        ),
        Rule("AGORA_CONFIDENCE", "Every confidence (of the turn and of each evidence item) is between 0.0 and 1.0."),
        Rule(
            "AGORA_EMPTY_TEXT",
            "The message has a letter or digit; every evidence item's source and content have text.",
        ),
        Rule(
            "AGORA_ECHO",
            "A message does not repeat an earlier turn's message word for word (ignoring case and spacing).",
            Severity.WARNING,
        ),
        Rule("AGORA_MESSAGE_LENGTH", f"A message has at most {MAX_SENTENCES} sentences.", Severity.WARNING),
        Rule(
            "AGORA_EVIDENCE_REQUIRED", "Under the fact-based methodology every turn carries at least one evidence item."
        ),
        Rule("AGORA_PROPOSAL_ID", "A propose turn creates 'proposal-<role>'; other turns create no proposal."),
        Rule("AGORA_TARGET_REQUIRED", "A counter or approve names its target."),
        Rule("AGORA_UNKNOWN_TARGET", "A target is an earlier turn ('turn-N') or a known proposal id."),
        Rule("AGORA_APPROVE_TARGET", "An approve targets a proposal (its id, or the turn that made it)."),
        Rule("AGORA_SELF_APPROVAL", "Nobody approves their own proposal."),
        Rule(
            "AGORA_STANCE_REASON",
            "With 'Require reasons: yes', a drone that changes what it backs or opposes cites evidence no earlier "
            "turn cites (in a grounded debate, evidence the sources verify).",
        ),
        Rule("AGORA_AFTER_OUTCOME", "Nothing is added after the debate reached consensus or timed out."),
        Rule("AGORA_OUTCOME", "An '## Outcome' section is the last section and agrees with the turns."),
    ]
)


# --- configuration -----------------------------------------------------------------------------


def line_problem(value: str) -> str | None:
    """Why ``value`` cannot be one line of the record's header (topic, position, ids), or ``None``."""
    if not value.strip():
        return "is empty"
    if value != value.strip():
        return "has spaces at its start or end"
    for char in value:
        if unicodedata.category(char) in {"Cc", "Cs", "Zl", "Zp"}:
            return f"contains the control or line-break character {char!r}"
    return None


def role_problem(role: str) -> str | None:
    """Why ``role`` cannot name a participant (it becomes part of headings and proposal ids), or ``None``."""
    if not _ROLE.fullmatch(role):
        return "must be letters, digits, '_', '-' or '.', starting with a letter or digit"
    if len(role) > MAX_ROLE_LENGTH:
        return f"is longer than {MAX_ROLE_LENGTH} characters"
    if role == MEDIATOR:
        return "is reserved for the mediator moot recruits on deadlock"
    return None


def proposal_id_for(role: str) -> str:
    return f"proposal-{role}"


class Position(BaseModel):
    """A participant: its role name and the position it argues."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str
    position: str


class AgoraConfig(BaseModel):
    """One debate: what it is about, who speaks in which order, and its limits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dialogue_id: str
    topic: str
    methodology: Methodology = "opinion"
    participants: tuple[Position, ...]
    max_turns: int = DEFAULT_MAX_TURNS
    deadlock_window: int = DEFAULT_DEADLOCK_WINDOW
    require_reasons: bool = False  # a change of stance must cite new evidence (see the module docstring)

    @model_validator(mode="after")
    def _sound(self) -> AgoraConfig:
        problems = config_problems(self)
        if problems:
            raise ValueError(problems[0][1])
        return self

    @cached_property
    def roles(self) -> tuple[str, ...]:
        return tuple(p.role for p in self.participants)

    def position_of(self, role: str) -> str | None:
        if role == MEDIATOR:
            return MEDIATOR_POSITION
        return next((p.position for p in self.participants if p.role == role), None)


def config_problems(config: AgoraConfig) -> list[tuple[str, str]]:
    """Every reason ``config`` cannot run a debate, as (field, one sentence naming the fix).

    Works on an unvalidated ``AgoraConfig.model_construct(...)`` too, which is how the record
    parser reports all problems at once.
    """
    found: list[tuple[str, str]] = []
    for field in ("dialogue_id", "topic"):
        problem = line_problem(getattr(config, field))
        if problem is not None:
            found.append((field, f"{field} {problem}; write it on one line."))
    roles = [p.role for p in config.participants]
    if len(roles) < 2:
        found.append(("participants", f"the debate has {len(roles)} participant(s); list at least two."))
    seen: set[str] = set()
    for participant in config.participants:
        problem = role_problem(participant.role)
        if problem is not None:
            found.append(("participants", f"role {participant.role!r} {problem}; rename it."))
        elif participant.role in seen:
            message = f"role {participant.role!r} is listed twice; give each participant its own role."
            found.append(("participants", message))
        seen.add(participant.role)
        problem = line_problem(participant.position)
        if problem is not None:
            found.append(("participants", f"the position of {participant.role!r} {problem}; write it on one line."))
    if config.max_turns <= len(roles):
        message = (
            f"max turns is {config.max_turns} but consensus needs at least {len(roles) + 1} turns "
            "(a proposal, the others' approvals and the proposer's no-change); raise it."
        )
        found.append(("max_turns", message))
    if config.deadlock_window < 1:
        message = f"the deadlock window is {config.deadlock_window}; set it to 1 or more full rounds."
        found.append(("deadlock_window", message))
    return found


# --- turns -------------------------------------------------------------------------------------


class Evidence(BaseModel):
    """One supporting fact of a turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = Field(description="Where the fact comes from.")
    content: str = Field(description="The key fact.")
    confidence: float = Field(description="How sure you are of the fact, from 0.0 to 1.0.")


class AgoraReply(BaseModel):
    """Exactly the seed's drone JSON: what a participant model fills in on its turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    signal: Signal = Field(
        description="propose a new argument, counter the opponent, approve their proposal, "
        "no-change to hold your position, or defer to their expertise."
    )
    message: str = Field(description=f"Your argument, at most {MAX_SENTENCES} sentences.")
    confidence: float = Field(description="Your genuine confidence, from 0.0 to 1.0.")
    # A plain type list instead of anyOf keeps the schema easy to turn into a decoding grammar.
    target: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": ["string", "null"],
                "description": "What the signal addresses: 'turn-N', a proposal id like 'proposal-advocate', or null.",
            }
        ),
    ] = None
    evidence: tuple[Evidence, ...] = Field(default=(), description="Supporting facts; required when fact-based.")


class AgoraTurn(AgoraReply):
    """A reply as it stands in the record: numbered, attributed, and with the proposal it creates."""

    number: int
    role: str
    proposal_id: str | None = None


def make_turn(reply: AgoraReply, number: int, role: str) -> AgoraTurn:
    """The turn ``role`` makes with ``reply`` as turn ``number``; a propose gets its proposal id."""
    proposal = proposal_id_for(role) if reply.signal == "propose" else None
    return AgoraTurn.model_validate({**reply.model_dump(), "number": number, "role": role, "proposal_id": proposal})


def reply_json_schema() -> dict[str, Any]:
    """The JSON Schema a participant's output is decoded against."""
    return AgoraReply.model_json_schema()


def sentence_count(message: str) -> int:
    return len([part for part in _SENTENCE_END.split(message.strip()) if part])


# --- state -------------------------------------------------------------------------------------


class Standing(BaseModel):
    """A participant's last signal; for an approve, the proposal it resolved to."""

    model_config = ConfigDict(frozen=True)

    signal: Signal
    proposal: str | None = None


class Side(BaseModel):
    """A drone's stance: the proposal it backs, and the proposals it countered since (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    backs: str | None = None
    opposes: frozenset[str] = frozenset()


class AgoraState(BaseModel):
    """The replayed history, reduced to what the rules need."""

    model_config = ConfigDict(frozen=True)

    turns: int = 0
    next_index: int = 0  # the participant whose turn it is (when the mediator is not due)
    round: int = 1  # the round of participant turns in progress
    round_approved: bool = False  # whether the round in progress has an approve
    stalled_rounds: int = 0  # consecutive full rounds without an approve
    mediator_needed: bool = False  # sticky once the deadlock window is reached
    mediator_due: bool = False
    equilibrium_streak: int = 0  # equilibrium signals since the last disruption; defer leaves it alone
    standings: dict[str, Standing] = {}
    proposals: dict[str, str] = {}  # proposal id -> owner role
    proposal_turns: GrowingMap[int, str] = Field(default_factory=GrowingMap)  # position -> the proposal it created
    said: Said = Field(default_factory=Said)  # what the turns' messages said (moot.core.hollow)
    sides: dict[str, Side] = {}  # each drone's stance, kept when the debate requires reasons
    # Every evidence item's key so far, kept likewise.
    cited: GrowingMap[tuple[str, str], None] = Field(default_factory=GrowingMap)
    outcome: Outcome | None = None


def consensus_proposal(roles: Sequence[str], state: AgoraState) -> str | None:
    """The proposal the participants agree on, or ``None`` (see the module docstring)."""
    standings = [state.standings.get(role) for role in roles]
    if any(s is None or s.signal not in EQUILIBRIUM for s in standings):
        return None
    approved = {s.proposal for s in standings if s is not None and s.signal == "approve"}
    if len(approved) != 1:
        return None
    (proposal,) = approved
    owner = state.proposals.get(proposal) if proposal is not None else None
    if proposal is None or owner is None:
        return None
    for role in roles:
        standing = state.standings[role]
        if standing.signal == "approve" and role == owner:
            return None
        if standing.signal == "no-change" and role != owner:
            return None
    return proposal


# --- the state machine -------------------------------------------------------------------------


class AgoraProtocol(DeliberationProtocol[AgoraTurn, AgoraState]):
    name: ClassVar[str] = NAME
    rules: ClassVar[RuleBook] = RULES
    turn_model: ClassVar[type[BaseModel]] = AgoraReply

    def __init__(self, config: AgoraConfig, *, grounded: bool = False) -> None:
        self.config = config
        self.grounded = grounded  # the record lists sources, so that every evidence item must verify in them

    def initial_state(self) -> AgoraState:
        return AgoraState()

    def next_speaker(self, state: AgoraState) -> str | None:
        if state.outcome is not None:
            return None
        if state.mediator_due:
            return MEDIATOR
        return self.config.roles[state.next_index]

    def next_turn(self, state: AgoraState, reply: AgoraReply) -> AgoraTurn:
        """The turn the next speaker makes with ``reply`` (what the engine appends)."""
        speaker = self.next_speaker(state)
        return make_turn(reply, state.turns + 1, speaker if speaker is not None else self.config.roles[0])

    # --- validation ---

    def validate(self, state: AgoraState, turn: AgoraTurn) -> list[Violation]:
        return [violation for _, violation in self.located(state, turn)]

    def located(self, state: AgoraState, turn: AgoraTurn) -> list[Located]:
        """Every rule ``turn`` breaks, each with the part of the turn it is about (see :data:`Located`)."""
        if state.outcome is not None:
            message = (
                f"the debate already ended ({state.outcome.name}: {state.outcome.reason}), "
                "so remove this turn or start a new debate."
            )
            return [_found("heading", "AGORA_AFTER_OUTCOME", message)]
        found: list[Located] = []
        if turn.number != state.turns + 1:
            message = (
                f"the turn is numbered {turn.number} but the next number is {state.turns + 1}; "
                f"number it {state.turns + 1}."
            )
            found.append(_found("heading", "AGORA_TURN_NUMBER", message))
        order = self._order_problem(state, turn.role)
        if order is not None:
            found.append(_found("heading", "AGORA_SPEAKER_ORDER", order))
        found += _content_problems(turn, self.config.methodology)
        echo = echoed(echo_key(turn.message), state.said)
        if echo is not None:
            message = f"the message repeats turn {echo} word for word; argue something that turn did not say."
            found.append(_found("message", "AGORA_ECHO", message))
        expected_id = proposal_id_for(turn.role) if turn.signal == "propose" else None
        if turn.proposal_id != expected_id:
            fix = f"write 'Proposal: {expected_id}'" if expected_id else "remove its 'Proposal:' line"
            message = (
                f"a {turn.signal} by {turn.role} creates proposal {expected_id or 'none'}, "
                f"not {turn.proposal_id or 'none'}; {fix}."
            )
            found.append(_found("proposal", "AGORA_PROPOSAL_ID", message))
        found += _target_problems(state, turn)
        if self.config.require_reasons:
            found += _reason_problems(state, turn, self.grounded)
        return found

    def _order_problem(self, state: AgoraState, role: str) -> str | None:
        expected = self.next_speaker(state)
        if role == expected:
            return None
        if role != MEDIATOR and role not in self.config.roles:
            return (
                f"{role!r} is not in this debate (participants: {', '.join(self.config.roles)}); "
                f"write this turn as {expected}."
            )
        if role == MEDIATOR and not state.mediator_needed:
            return (
                f"the mediator speaks only once recruited after {self.config.deadlock_window} stalled round(s); "
                f"it is {expected}'s turn."
            )
        if expected == MEDIATOR:
            return f"round {state.round - 1} is complete and the recruited mediator speaks now; let the mediator speak first."
        return f"it is {expected}'s turn (round {state.round}), not {role}'s; let {expected} speak first."

    # --- applying ---

    def apply(self, state: AgoraState, turn: AgoraTurn) -> AgoraState:
        position = state.turns + 1
        if state.outcome is not None:  # a turn after the end (AGORA_AFTER_OUTCOME) changes nothing but the count
            return state.model_copy(update={"turns": position})
        update: dict[str, Any] = {"turns": position, "said": said_after(state.said, echo_key(turn.message), position)}
        if turn.signal in DISRUPTION:
            update["equilibrium_streak"] = 0
        elif turn.signal in EQUILIBRIUM:
            update["equilibrium_streak"] = state.equilibrium_streak + 1
        if turn.signal == "propose":
            proposal = proposal_id_for(turn.role)
            update["proposals"] = {**state.proposals, proposal: turn.role}
            update["proposal_turns"] = state.proposal_turns.plus(position, proposal)
        if turn.role == MEDIATOR:
            update["mediator_due"] = False
        else:
            update.update(self._participant_turn(state, turn))
        if self.config.require_reasons:
            update["cited"] = state.cited.plus_all((_evidence_key(item), None) for item in turn.evidence)
            if turn.role in self.config.roles:
                update["sides"] = {**state.sides, turn.role: _stance_change(state, turn)[0]}
        new = state.model_copy(update=update)
        if state.outcome is None and (outcome := self._outcome_after(new, position)) is not None:
            new = new.model_copy(update={"outcome": outcome})
        return new

    def _participant_turn(self, state: AgoraState, turn: AgoraTurn) -> dict[str, Any]:
        roles = self.config.roles
        # Out-of-order speakers resync the order; an unknown role takes the expected slot.
        index = roles.index(turn.role) if turn.role in roles else state.next_index
        update: dict[str, Any] = {"mediator_due": False, "next_index": (index + 1) % len(roles)}
        approved = state.round_approved or turn.signal == "approve"
        if turn.role in roles:
            proposal = _resolve(state, turn.target)[1] if turn.signal == "approve" else None
            update["standings"] = {**state.standings, turn.role: Standing(signal=turn.signal, proposal=proposal)}
        if index + 1 < len(roles):
            update["round_approved"] = approved
            return update
        # The round is complete: count it as stalled or not, and recruit the mediator on deadlock.
        stalled = 0 if approved else state.stalled_rounds + 1
        needed = state.mediator_needed or stalled >= self.config.deadlock_window
        update.update(
            round=state.round + 1,
            round_approved=False,
            stalled_rounds=stalled,
            mediator_needed=needed,
            mediator_due=needed,
        )
        return update

    def _outcome_after(self, state: AgoraState, position: int) -> Outcome | None:
        proposal = consensus_proposal(self.config.roles, state)
        if proposal is not None:
            owner = state.proposals[proposal]
            if owner in self.config.roles:
                how = f"every other participant approves it and {owner} holds it"
            else:
                how = "every participant approves it"
            return Outcome(name=CONSENSUS, reason=f"consensus on {proposal} at turn {position}: {how}", consensus=True)
        if state.turns >= self.config.max_turns:
            return Outcome(name=TIMEOUT, reason=f"no consensus within the limit of {self.config.max_turns} turns")
        return None

    # --- results ---

    def outcome(self, state: AgoraState) -> Outcome | None:
        return state.outcome

    def summary(self, state: AgoraState) -> Summary:
        detail: dict[str, Any] = {
            "dialogue_id": self.config.dialogue_id,
            "methodology": self.config.methodology,
            "max_turns": self.config.max_turns,
            "mediator_needed": state.mediator_needed,
            "stalled_rounds": state.stalled_rounds,
            "deadlock_window": self.config.deadlock_window,
            "equilibrium_streak": state.equilibrium_streak,
            "last_signals": {role: s.signal for role, s in state.standings.items()},
            "proposals": dict(state.proposals),
        }
        # An ended debate is in the round of its last turn: a full round advances ``state.round`` to the next one,
        # which never starts (a recruited mediator's turn belongs to the round it follows).
        ended = state.outcome is not None and state.turns > 0 and state.next_index == 0 and state.round > 1
        return Summary(
            protocol=NAME,
            turns=state.turns,
            next_speaker=self.next_speaker(state),
            round=state.round - 1 if ended else state.round,
            outcome=state.outcome,
            detail=detail,
        )


# --- rule helpers ------------------------------------------------------------------------------


def _found(field: str, rule: str, message: str) -> Located:
    return field, RULES.violation(rule, message)


def _content_problems(turn: AgoraReply, methodology: Methodology) -> list[Located]:
    """Rules about the reply alone: confidence ranges, empty text, length, evidence."""
    found: list[Located] = []
    if not in_range(turn.confidence):  # also refuses NaN
        found.append(
            _found("confidence", "AGORA_CONFIDENCE", f"confidence is {turn.confidence}; give a number from 0.0 to 1.0.")
        )
    for number, item in enumerate(turn.evidence, start=1):
        if not in_range(item.confidence):
            message = f"evidence item {number} has confidence {item.confidence}; give a number from 0.0 to 1.0."
            found.append(_found("evidence", "AGORA_CONFIDENCE", message))
        for field in ("source", "content"):
            if not getattr(item, field).strip():
                message = f"evidence item {number} has an empty {field}; fill it in."
                found.append(_found("evidence", "AGORA_EMPTY_TEXT", message))
    if not has_content(turn.message):
        what = "is empty" if not turn.message.strip() else "has no letter or digit"
        found.append(_found("message", "AGORA_EMPTY_TEXT", f"the message {what}; write the argument in 2-4 sentences."))
    sentences = sentence_count(turn.message)
    if sentences > MAX_SENTENCES:
        message = f"the message has {sentences} sentences; shorten it to at most {MAX_SENTENCES}."
        found.append(_found("message", "AGORA_MESSAGE_LENGTH", message))
    if methodology == "fact-based" and not turn.evidence:
        message = "the debate is fact-based but the turn has no evidence; add at least one evidence item."
        found.append(_found("evidence", "AGORA_EVIDENCE_REQUIRED", message))
    return found


def _resolve(state: AgoraState, target: str | None) -> tuple[bool, str | None]:
    """(whether ``target`` exists so far, the proposal it stands for)."""
    if target is None:
        return False, None
    match = _TURN_REF.fullmatch(target)
    if match is not None:
        number = int(match.group(1))
        return 1 <= number <= state.turns, state.proposal_turns.get(number)
    if target in state.proposals:
        return True, target
    return False, None


def _target_problems(state: AgoraState, turn: AgoraTurn) -> list[Located]:
    target = turn.target
    if target is None:
        if turn.signal not in {"counter", "approve"}:
            return []
        what = "the turn or proposal you dispute" if turn.signal == "counter" else "the proposal you accept"
        return [
            _found("target", "AGORA_TARGET_REQUIRED", f"a {turn.signal} must name its target; set target to {what}.")
        ]
    exists, proposal = _resolve(state, target)
    if not exists:
        known = ", ".join(sorted(state.proposals)) or "none yet"
        earlier = {0: "none yet", 1: "turn-1"}.get(state.turns, f"turn-1 to turn-{state.turns}")
        message = (
            f"target {target!r} is neither an earlier turn ({earlier}) nor a known proposal ({known}); "
            "point it at one of those or set it to null."
        )
        return [_found("target", "AGORA_UNKNOWN_TARGET", message)]
    if turn.signal != "approve":
        return []
    if proposal is None:
        message = (
            f"{target} is not a proposal, so an approve cannot accept it; "
            "target the proposal you accept (its id or the turn that proposed it)."
        )
        return [_found("target", "AGORA_APPROVE_TARGET", message)]
    if state.proposals.get(proposal) == turn.role:
        message = f"{turn.role} approves {proposal}, its own proposal; signal no-change to hold it instead."
        return [_found("target", "AGORA_SELF_APPROVAL", message)]
    return []


def _evidence_key(item: Evidence) -> tuple[str, str]:
    return " ".join(item.source.casefold().split()), " ".join(item.content.casefold().split())


def _stance_change(state: AgoraState, turn: AgoraTurn) -> tuple[Side, str | None]:
    """(the drone's stance after ``turn``, how the turn changes it or ``None``; see the module docstring)."""
    side = state.sides.get(turn.role, Side())
    proposal = _resolve(state, turn.target)[1]
    if turn.signal == "propose":
        proposal = proposal_id_for(turn.role)
    elif turn.signal not in {"approve", "counter"} or proposal is None:
        return side, None
    if turn.signal == "counter":
        change = f"it counters {proposal}, which it backs" if side.backs == proposal else None
        backs = None if side.backs == proposal else side.backs
        return Side(backs=backs, opposes=side.opposes | {proposal}), change
    change = None
    if side.backs is not None and side.backs != proposal:
        change = f"it backed {side.backs} and now backs {proposal}"
    elif proposal in side.opposes:
        change = f"it approves {proposal}, which it countered"
    return Side(backs=proposal, opposes=side.opposes - {proposal}), change


def _reason_problems(state: AgoraState, turn: AgoraTurn, grounded: bool) -> list[Located]:
    """AGORA_STANCE_REASON: a drone's change of stance carries new evidence (any, when grounded)."""
    change = _stance_change(state, turn)[1] if turn.role != MEDIATOR else None
    if change is None:
        return []
    if any(_evidence_key(item) not in state.cited for item in turn.evidence) or (grounded and turn.evidence):
        return []
    where = "from the sources or one " if grounded else ""
    message = (
        f"{turn.role} changes its stance ({change}) without a new reason; "
        f"add an evidence item {where}that no earlier turn cites."
    )
    return [_found("evidence", "AGORA_STANCE_REASON", message)]

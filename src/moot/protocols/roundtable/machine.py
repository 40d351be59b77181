"""Roundtable v2: named roles speak in a fixed order for a number of rounds, then a moderator closes.

The record is a meeting directory (see :mod:`moot.protocols.roundtable.record`); this module holds the state
machine of ``turn.json`` and every rule about it. It is pure: no I/O, no clock, no randomness.

State machine (``turn.json``)::

    open --speech--> open (next speaker; after the last speaker: index 0, round + 1)
    open --speech--> concluding   when round > max_rounds, or the speaker declares consensus
    concluding --moderator's minutes--> closed

Decisions the seed leaves open, taken here and documented in ``docs/formats.md``:

- Consensus is declared by the speaker who commits: their next state says ``concluding`` although
  ``round <= max_rounds`` (a :class:`RoundtableReply` says ``consensus_reached``). A record only shows
  this as a concluding ``turn.json`` right after a speech, so that is where it is accepted.
- A closed meeting counts as consensus when it concluded early on such a declaration and the
  minutes' final consensus is non-empty. A declaration by the very last speech of the last round is
  indistinguishable from reaching the limit and counts as reaching the limit.
- Speeches are numbered with at least three digits (``001`` … ``999``, then ``1000``).
- ``moderator`` may also appear in ``speaker_order``; ``status`` says which role it is acting in.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from moot.core.hollow import Said, echo_key, echoed, has_content, said_after
from moot.core.machine import DeliberationProtocol, Outcome, Replay, Rule, RuleBook, Summary
from moot.errors import Severity, Violation

MODERATOR = "moderator"
TURN_FILE = "turn.json"
AGENDA_FILE = "AGENDA.md"
MINUTES_FILE = "MINUTES.md"

Status = Literal["open", "concluding", "closed"]
Language = Literal["en", "zh"]

RULES = RuleBook(
    [
        Rule("ROUNDTABLE_STATE_JSON", "turn.json is strict JSON: one object, no comments, NaN or duplicate keys."),
        Rule(
            "ROUNDTABLE_STATE_SCHEMA",
            "turn.json has the eight fields with valid types and values: status open|concluding|closed, "
            "round and max_rounds >= 1, a non-empty speaker_order of distinct file-safe names, an index inside it.",
        ),
        Rule(
            "ROUNDTABLE_STATE_UNKNOWN_KEY",
            "turn.json holds only the eight protocol fields; others are ignored and dropped by moot's next write.",
            Severity.WARNING,
        ),
        Rule(
            "ROUNDTABLE_CURRENT_SPEAKER",
            "current_speaker is speaker_order[current_speaker_index] while open, 'moderator' while concluding or closed.",
        ),
        Rule("ROUNDTABLE_SPEECH_NAME", "Speech files are named NNN_{role}.md with a file-safe role name."),
        Rule(
            "ROUNDTABLE_SEQUENCE",
            "Speeches are numbered 001, 002, ... (at least three digits) without gaps or repeats.",
        ),
        Rule("ROUNDTABLE_SPEAKER_ORDER", "Speech k is by speaker_order[(k - 1) % n], the speaker whose turn it was."),
        Rule("ROUNDTABLE_EMPTY_SPEECH", "A speech has a letter or digit outside its headings."),
        Rule(
            "ROUNDTABLE_ECHO",
            "A speech does not repeat an earlier speech word for word (outside its headings, ignoring case and spacing).",
            Severity.WARNING,
        ),
        Rule(
            "ROUNDTABLE_ROUND_ADVANCE",
            "Each commit moves to the next speaker (index + 1; after the last, index 0 and round + 1) and keeps "
            "conference, max_rounds and speaker_order unchanged.",
        ),
        Rule(
            "ROUNDTABLE_CONCLUDE",
            "status becomes concluding exactly when round > max_rounds or a speech declares consensus; "
            "only the moderator's minutes close the meeting.",
        ),
        Rule(
            "ROUNDTABLE_CONCLUDING_MODERATOR_ONLY",
            "While the meeting is concluding only the moderator acts, by writing MINUTES.md.",
        ),
        Rule("ROUNDTABLE_AFTER_CLOSED", "Nothing is added to a closed meeting."),
        Rule(
            "ROUNDTABLE_MINUTES",
            "A closed meeting has MINUTES.md with a non-empty discussion summary, final consensus, "
            "unresolved disagreements and action items.",
        ),
        Rule("ROUNDTABLE_MINUTES_TOO_EARLY", "MINUTES.md is written only once the meeting is concluding."),
        Rule(
            "ROUNDTABLE_UNCOMMITTED_SPEECH",
            "A speech file is followed by the turn.json that advances past it (repairable: moot resume finishes it).",
        ),
        Rule(
            "ROUNDTABLE_UNCOMMITTED_MINUTES",
            "MINUTES.md is followed by turn.json status 'closed' (repairable: moot resume finishes it).",
        ),
        Rule("ROUNDTABLE_AGENDA", "Every meeting has a non-empty AGENDA.md."),
        Rule(
            "ROUNDTABLE_STRAY_FILE",
            "A meeting directory holds only AGENDA.md, turn.json, NNN_{role}.md speeches and MINUTES.md.",
            Severity.WARNING,
        ),
    ]
)

# The two rules a crash between the two writes of a commit leaves behind; `moot resume` fixes both.
UNCOMMITTED_RULES = frozenset({"ROUNDTABLE_UNCOMMITTED_SPEECH", "ROUNDTABLE_UNCOMMITTED_MINUTES"})

# (field of Minutes, English heading, Chinese heading) in the order the guide lists them.
MINUTES_PARTS: tuple[tuple[str, str, str], ...] = (
    ("summary", "Discussion Summary", "讨论摘要"),
    ("consensus", "Final Consensus", "最终共识"),
    ("unresolved", "Unresolved Disagreements", "悬而未决的分歧"),
    ("action_items", "Action Items", "决议行动项"),
)

SPEECH_HEADINGS: dict[str, tuple[str, str, str]] = {
    "en": ("Position", "Analysis", "Responses / Questions"),
    "zh": ("立场", "分析论证", "回应/提问"),
}

# Characters no file name may hold on some platform moot runs on; roles and meetings become file names.
_FORBIDDEN_NAME_CHARS = frozenset('/\\:*?"<>|')
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
MAX_NAME_BYTES = 200  # file names are limited to 255 bytes; "NNN_" and ".md" need the rest
_HEADING_LINE = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")


class TurnState(BaseModel):
    """``turn.json``: the meeting's only mutable state. Types are strict; values are checked by rules."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conference: StrictStr
    status: Status
    round: StrictInt
    max_rounds: StrictInt
    speaker_order: tuple[StrictStr, ...]
    current_speaker_index: StrictInt
    current_speaker: StrictStr
    prompt_for_speaker: StrictStr


class Speech(BaseModel):
    """One speech file ``NNN_{role}.md``; ``body`` is the file's exact text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sequence: StrictInt
    role: StrictStr
    body: StrictStr


class Minutes(BaseModel):
    """The four parts of ``MINUTES.md``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary: StrictStr
    consensus: StrictStr
    unresolved: StrictStr
    action_items: StrictStr


class RoundtableAction(BaseModel):
    """Something that changes a meeting: a speaker's turn or the moderator's closing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    next_state: TurnState


class RoundtableTurn(RoundtableAction):
    """Step 3 of the guide: a speech and the ``turn.json`` its speaker commits after it."""

    speech: Speech


class RoundtableClosing(RoundtableAction):
    """Step 4 of the guide: the moderator's minutes and ``turn.json`` with status ``closed``."""

    minutes: Minutes


class RoundtableReply(BaseModel):
    """What a participant model fills in on its turn; :func:`turn_from_reply` makes the turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    position: str = Field(description="Your position on the agenda, in a few sentences.")
    analysis: str = Field(description="The reasoning and evidence for your position.")
    responses_and_questions: str = Field(description="Your responses to earlier speakers and your questions.")
    prompt_for_next_speaker: str = Field(description="A short instruction or question for the next speaker.")
    consensus_reached: bool = Field(description="True only if every participant now agrees.")


class MeetingState(BaseModel):
    """The protocol's state: ``turn.json`` plus what the history adds to it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: TurnState
    speeches: int = 0  # speeches replayed or accepted
    last_sequence: int = 0
    minutes: Minutes | None = None
    # A speech file whose turn.json advance was lost in a crash (see finish_state).
    uncommitted_speech: Speech | None = None
    said: Said = Field(default_factory=Said)  # what the speeches said (moot.core.hollow)


# --- names -------------------------------------------------------------------------------------


def same_role(a: str, b: str) -> bool:
    """Role names compare after NFC normalisation (some file systems store names decomposed)."""
    return unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a role or meeting name (it becomes part of a file name), or ``None``."""
    if not name.strip():
        return "is empty"
    if name != name.strip():
        return "has spaces at its start or end"
    if name.startswith("."):
        return "starts with a dot"
    for char in name:
        if char in _FORBIDDEN_NAME_CHARS or unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            return f"contains the character {char!r}, which file names cannot hold"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    return None


def speech_text(body: str) -> str:
    """What a speech says: its text without Markdown heading lines (the guide's suggested section headings)."""
    return "\n".join(line for line in body.splitlines() if not _HEADING_LINE.match(line))


def speech_file_name(sequence: int, role: str) -> str:
    return f"{sequence:03d}_{role}.md"


# --- the state machine as functions ------------------------------------------------------------


def opening_state(conference: str, speaker_order: Sequence[str], max_rounds: int, prompt: str) -> TurnState:
    """The ``turn.json`` a new meeting starts with: round 1, the first speaker's turn."""
    order = tuple(speaker_order)
    return TurnState(
        conference=conference,
        status="open",
        round=1,
        max_rounds=max_rounds,
        speaker_order=order,
        current_speaker_index=0,
        current_speaker=order[0] if order else "",
        prompt_for_speaker=prompt,
    )


def advance(state: TurnState, *, consensus: bool = False, prompt: str = "") -> TurnState:
    """Step 3.2-3.4 of the guide: the state after the current speaker's speech. Total."""
    if state.status != "open" or not state.speaker_order:
        return state
    index, round_ = state.current_speaker_index + 1, state.round
    if not 0 <= index < len(state.speaker_order):
        index, round_ = 0, round_ + 1
    concluding = consensus or round_ > state.max_rounds
    return state.model_copy(
        update={
            "status": "concluding" if concluding else "open",
            "round": round_,
            "current_speaker_index": index,
            "current_speaker": MODERATOR if concluding else state.speaker_order[index],
            "prompt_for_speaker": prompt,
        }
    )


def close_state(state: TurnState) -> TurnState:
    """Step 4.3: the moderator sets status to closed and changes nothing else."""
    return state.model_copy(update={"status": "closed"})


def speeches_before(state: TurnState) -> int | None:
    """How many speeches lead to this state's position, or ``None`` when the position is impossible."""
    count = len(state.speaker_order)
    if count == 0 or state.round < 1 or not 0 <= state.current_speaker_index < count:
        return None
    return (state.round - 1) * count + state.current_speaker_index


def concluded_early(state: TurnState) -> bool:
    """Whether the meeting stopped inside its round limit, which only a consensus declaration does."""
    return state.status != "open" and state.round <= state.max_rounds


def compose_speech(reply: RoundtableReply, language: Language = "en") -> str:
    """A speech file's text from a reply, under the guide's suggested section headings."""
    headings = SPEECH_HEADINGS[language]
    parts = (reply.position, reply.analysis, reply.responses_and_questions)
    return "\n\n".join(f"## {heading}\n\n{part.strip()}" for heading, part in zip(headings, parts, strict=True)) + "\n"


def turn_from_reply(state: MeetingState, reply: RoundtableReply, language: Language = "en") -> RoundtableTurn:
    """The turn the current speaker commits with this reply."""
    speech = Speech(
        sequence=state.last_sequence + 1, role=state.turn.current_speaker, body=compose_speech(reply, language)
    )
    next_state = advance(state.turn, consensus=reply.consensus_reached, prompt=reply.prompt_for_next_speaker)
    return RoundtableTurn(speech=speech, next_state=next_state)


def finish_state(state: MeetingState, *, prompt: str | None = None, consensus: bool = False) -> TurnState | None:
    """The ``turn.json`` that completes a commit a crash interrupted, or ``None`` when none is pending.

    The speaker's prompt for the next role and any consensus declaration were lost with the crash;
    pass them if the caller still has the reply, otherwise the next speaker is pointed at the speech.
    """
    speech = state.uncommitted_speech
    if speech is not None:
        default = f"Read {speech_file_name(speech.sequence, speech.role)} and continue the discussion."
        return advance(state.turn, consensus=consensus, prompt=default if prompt is None else prompt)
    if state.turn.status == "concluding" and state.minutes is not None and not minutes_violations(state.minutes):
        return close_state(state.turn)
    return None


# --- rules -------------------------------------------------------------------------------------


def _shown(value: object) -> str:
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def _at(violation: Violation, field: str, lines: Mapping[str, int]) -> Violation:
    return violation.at(file=TURN_FILE, line=lines.get(field))


def state_violations(state: TurnState, lines: Mapping[str, int] | None = None) -> list[Violation]:
    """Rules one ``turn.json`` must meet on its own. ``lines`` maps fields to their lines."""
    where = lines or {}
    found: list[tuple[str, Violation]] = []

    def schema(field: str, message: str) -> None:
        found.append((field, RULES.violation("ROUNDTABLE_STATE_SCHEMA", message)))

    if not state.conference.strip():
        schema("conference", "conference is empty; write the meeting's name.")
    for field in ("round", "max_rounds"):
        value = getattr(state, field)
        if value < 1:
            schema(field, f"{field} is {value}; it counts from 1, so set it to 1 or more.")
    order = state.speaker_order
    if not order:
        schema("speaker_order", "speaker_order is empty; list the roles in the order they speak.")
    seen: set[str] = set()
    for role in order:
        problem = name_problem(role)
        if problem is not None:
            schema("speaker_order", f"role {role!r} {problem}; rename it, since it becomes part of file names.")
        key = unicodedata.normalize("NFC", role)
        if key in seen:
            schema("speaker_order", f"role {role!r} appears twice in speaker_order; list each role once.")
        seen.add(key)
    index = state.current_speaker_index
    if order and not 0 <= index < len(order):
        schema(
            "current_speaker_index",
            f"current_speaker_index is {index} but speaker_order has {len(order)} roles; use 0 to {len(order) - 1}.",
        )
    if state.status == "open":
        expected = order[index] if 0 <= index < len(order) else None
        if expected is not None and not same_role(state.current_speaker, expected):
            found.append(
                (
                    "current_speaker",
                    RULES.violation(
                        "ROUNDTABLE_CURRENT_SPEAKER",
                        f"current_speaker is {state.current_speaker!r} but speaker_order[{index}] is {expected!r}; "
                        f"set current_speaker to {expected!r}.",
                    ),
                )
            )
    elif state.current_speaker != MODERATOR:
        found.append(
            (
                "current_speaker",
                RULES.violation(
                    "ROUNDTABLE_CURRENT_SPEAKER",
                    f"status is {state.status!r} but current_speaker is {state.current_speaker!r}; "
                    f"set current_speaker to {MODERATOR!r}.",
                ),
            )
        )
    return [_at(violation, field, where) for field, violation in found]


def _status_reason(expected: TurnState, actual: TurnState) -> str:
    if actual.status == "closed":
        return "only the moderator's minutes close a meeting"
    if expected.status == "concluding":
        return f"round {expected.round} is past max_rounds {expected.max_rounds}"
    return f"round {expected.round} is within max_rounds {expected.max_rounds} and no speech declared consensus"


def compare_states(
    expected: TurnState, actual: TurnState, *, speeches: int, lines: Mapping[str, int] | None = None
) -> list[Violation]:
    """One violation per field of ``actual`` that differs from the derived ``expected`` state.

    ``prompt_for_speaker`` is free text and never compared; ``current_speaker`` is checked against
    the index by :func:`state_violations`, so a wrong index is reported once, not twice.
    """
    where = lines or {}
    found: list[Violation] = []
    for field in ("conference", "max_rounds", "speaker_order"):
        was, now = getattr(expected, field), getattr(actual, field)
        if was != now:
            violation = RULES.violation(
                "ROUNDTABLE_ROUND_ADVANCE",
                f"{field} changed from {_shown(was)} to {_shown(now)}; a meeting keeps its {field}, so restore it.",
            )
            found.append(_at(violation, field, where))
    for field in ("round", "current_speaker_index"):
        was, now = getattr(expected, field), getattr(actual, field)
        if was != now:
            violation = RULES.violation(
                "ROUNDTABLE_ROUND_ADVANCE",
                f"{field} is {now} but {speeches} speech(es) in turn order give {was} "
                f"(next index = index + 1, wrapping to 0 and round + 1); set it to {was}.",
            )
            found.append(_at(violation, field, where))
    if expected.status != actual.status:
        violation = RULES.violation(
            "ROUNDTABLE_CONCLUDE",
            f"status is {actual.status!r} but the rules give {expected.status!r} because "
            f"{_status_reason(expected, actual)}; set status to {expected.status!r}.",
        )
        found.append(_at(violation, "status", where))
    return found


def minutes_violations(minutes: Minutes) -> list[Violation]:
    """One violation per empty part of the minutes."""
    found: list[Violation] = []
    for field, english, chinese in MINUTES_PARTS:
        if not getattr(minutes, field).strip():
            found.append(
                RULES.violation(
                    "ROUNDTABLE_MINUTES",
                    f"MINUTES.md has no text under '{english}' (or '{chinese}'); "
                    f"write the {english.lower()} under a '## {english}' heading.",
                ).at(file=MINUTES_FILE)
            )
    return found


# --- the protocol ------------------------------------------------------------------------------


class RoundtableProtocol(DeliberationProtocol[RoundtableAction, MeetingState]):
    """The roundtable state machine for one meeting, configured by its opening ``turn.json``."""

    name: ClassVar[str] = "roundtable"
    rules: ClassVar[RuleBook] = RULES
    # What a participant model fills in; turn_from_reply turns it into a RoundtableTurn.
    turn_model: ClassVar[type[BaseModel]] = RoundtableReply

    def __init__(self, opening: TurnState) -> None:
        self.opening = opening

    def initial_state(self) -> MeetingState:
        return MeetingState(turn=self.opening)

    def next_speaker(self, state: MeetingState) -> str | None:
        return None if state.turn.status == "closed" else state.turn.current_speaker

    def validate_speech(self, state: MeetingState, speech: Speech) -> list[Violation]:
        """Whether ``speech`` may be the next speech, before looking at the state it commits."""
        status = state.turn.status
        name = speech_file_name(speech.sequence, speech.role)
        if status == "closed":
            return [
                RULES.violation(
                    "ROUNDTABLE_AFTER_CLOSED", f"the meeting is closed, so {name} must not be added; remove it."
                )
            ]
        if status == "concluding":
            return [
                RULES.violation(
                    "ROUNDTABLE_CONCLUDING_MODERATOR_ONLY",
                    f"{name} was added while the meeting is concluding, when only the moderator acts; "
                    "remove it and let the moderator write MINUTES.md.",
                )
            ]
        pending = state.uncommitted_speech
        if pending is not None:
            return [
                RULES.violation(
                    "ROUNDTABLE_UNCOMMITTED_SPEECH",
                    f"{speech_file_name(pending.sequence, pending.role)} is not committed yet; "
                    "run moot resume to finish it before the next speech.",
                )
            ]
        found: list[Violation] = []
        problem = name_problem(speech.role)
        if problem is not None:
            found.append(
                RULES.violation(
                    "ROUNDTABLE_SPEECH_NAME", f"the role {speech.role!r} {problem}; use a role from speaker_order."
                )
            )
        expected = state.turn.current_speaker
        if not same_role(speech.role, expected):
            found.append(
                RULES.violation(
                    "ROUNDTABLE_SPEAKER_ORDER",
                    f"{name} is by {speech.role!r} but it was the turn of {expected!r} "
                    f"(round {state.turn.round}); let {expected!r} speak first.",
                )
            )
        if speech.sequence != state.last_sequence + 1:
            want = speech_file_name(state.last_sequence + 1, speech.role)
            found.append(
                RULES.violation(
                    "ROUNDTABLE_SEQUENCE",
                    f"{name} is numbered {speech.sequence} but the next number is {state.last_sequence + 1}; "
                    f"name it {want}.",
                )
            )
        text = speech_text(speech.body)
        if not has_content(text):
            what = "is empty" if not speech.body.strip() else "has no letter or digit outside its headings"
            found.append(RULES.violation("ROUNDTABLE_EMPTY_SPEECH", f"{name} {what}; write the speech."))
        echo = echoed(echo_key(text), state.said)
        if echo is not None:
            found.append(
                RULES.violation(
                    "ROUNDTABLE_ECHO", f"{name} repeats speech {echo:03d} word for word; say what it did not."
                )
            )
        return found

    def validate(self, state: MeetingState, turn: RoundtableAction) -> list[Violation]:
        if isinstance(turn, RoundtableTurn):
            found = self.validate_speech(state, turn.speech)
            if state.turn.status != "open" or state.uncommitted_speech is not None:
                return found
            nxt = turn.next_state
            expected = advance(state.turn, consensus=nxt.status != "open", prompt=nxt.prompt_for_speaker)
            found += state_violations(nxt)
            found += compare_states(expected, nxt, speeches=state.speeches + 1)
            return found
        if isinstance(turn, RoundtableClosing):
            return self._validate_closing(state, turn)
        raise TypeError(f"{type(turn).__name__} is not a roundtable turn; send a RoundtableTurn or RoundtableClosing.")

    def _validate_closing(self, state: MeetingState, closing: RoundtableClosing) -> list[Violation]:
        status = state.turn.status
        if status == "closed":
            return [
                RULES.violation(
                    "ROUNDTABLE_AFTER_CLOSED", "the meeting is already closed; its minutes stay as they are."
                )
            ]
        if status == "open":
            return [
                RULES.violation(
                    "ROUNDTABLE_MINUTES_TOO_EARLY",
                    f"the meeting is still open (round {state.turn.round} of {state.turn.max_rounds}); "
                    "wait for status 'concluding' before writing MINUTES.md.",
                ).at(file=MINUTES_FILE)
            ]
        expected = close_state(state.turn).model_copy(
            update={"prompt_for_speaker": closing.next_state.prompt_for_speaker}
        )
        found = minutes_violations(closing.minutes)
        found += compare_states(expected, closing.next_state, speeches=state.speeches)
        return found

    def apply_speech(self, state: MeetingState, speech: Speech, next_state: TurnState) -> MeetingState:
        turn = next_state if state.turn.status == "open" else state.turn
        said = said_after(state.said, echo_key(speech_text(speech.body)), state.speeches + 1)
        update = {"turn": turn, "speeches": state.speeches + 1, "last_sequence": speech.sequence, "said": said}
        return state.model_copy(update=update)

    def apply(self, state: MeetingState, turn: RoundtableAction) -> MeetingState:
        if isinstance(turn, RoundtableTurn):
            return self.apply_speech(state, turn.speech, turn.next_state)
        if isinstance(turn, RoundtableClosing) and state.turn.status == "concluding":
            return state.model_copy(update={"turn": turn.next_state, "minutes": turn.minutes})
        return state

    def outcome(self, state: MeetingState) -> Outcome | None:
        return meeting_outcome(state)

    def summary(self, state: MeetingState) -> Summary:
        return meeting_summary(state)


def meeting_outcome(state: MeetingState) -> Outcome | None:
    """``closed`` is the only terminal status; ``concluding`` still waits for the moderator."""
    turn = state.turn
    if turn.status != "closed":
        return None
    minutes_agree = state.minutes is not None and bool(state.minutes.consensus.strip())
    if concluded_early(turn):
        reason = f"concluded on a declared consensus in round {turn.round} after {state.speeches} speech(es)"
    else:
        reason = f"reached the limit of {turn.max_rounds} round(s) after {state.speeches} speech(es)"
    return Outcome(name="closed", reason=reason, consensus=concluded_early(turn) and minutes_agree)


def meeting_summary(state: MeetingState) -> Summary:
    turn = state.turn
    pending = state.uncommitted_speech
    detail: dict[str, Any] = {
        "status": turn.status,
        "conference": turn.conference,
        "max_rounds": turn.max_rounds,
        "speaker_order": list(turn.speaker_order),
        "uncommitted": speech_file_name(pending.sequence, pending.role) if pending is not None else None,
    }
    # One count for every command: the moderator's minutes are a turn (the run asks for them as one), and a
    # meeting that stopped speaking is in the round of its last speech, not the one turn.json advanced to.
    order = max(len(turn.speaker_order), 1)
    spoken = (state.speeches - 1) // order + 1 if state.speeches else 1
    return Summary(
        protocol="roundtable",
        turns=state.speeches + (state.minutes is not None),
        next_speaker=None if turn.status == "closed" else turn.current_speaker,
        round=turn.round if turn.status == "open" else spoken,
        outcome=meeting_outcome(state),
        detail=detail,
    )


# --- replaying a record ------------------------------------------------------------------------


def replay_meeting(
    final: TurnState,
    speeches: Sequence[Speech],
    minutes: Minutes | None,
    lines: Mapping[str, int] | None = None,
) -> Replay[MeetingState]:
    """Check a meeting record: its speeches in order, its ``turn.json`` and its minutes.

    Speech k is by ``speaker_order[(k - 1) % n]`` in round ``(k - 1) // n + 1``; ``turn.json`` must be
    the state those speeches derive (only its last version survives on disk). It may say concluding
    inside the round limit right after the speech that declared consensus. Violations about speech k
    carry ``turn=k``; the others name ``turn.json`` or ``MINUTES.md``.
    """
    where = lines or {}
    found = state_violations(final, where)
    if not final.speaker_order:
        return Replay(state=MeetingState(turn=final, minutes=minutes), violations=found)
    opening = opening_state(final.conference, final.speaker_order, final.max_rounds, final.prompt_for_speaker)
    protocol = RoundtableProtocol(opening)
    state = protocol.initial_state()
    before = speeches_before(final)
    committed = list(speeches)
    # The speaker wrote the speech file, then crashed before turn.json moved past it.
    pending = committed.pop() if final.status == "open" and before is not None and len(speeches) == before + 1 else None

    def close(state: MeetingState) -> MeetingState:
        if minutes is None:
            found.append(
                RULES.violation(
                    "ROUNDTABLE_MINUTES",
                    "the meeting is closed but MINUTES.md is missing; the moderator must write it.",
                ).at(file=MINUTES_FILE)
            )
            return state.model_copy(update={"turn": close_state(state.turn)})
        closing = RoundtableClosing(minutes=minutes, next_state=close_state(state.turn))
        found.extend(v.at(file=MINUTES_FILE) for v in protocol.validate(state, closing))
        return protocol.apply(state, closing)

    for number, speech in enumerate(committed, start=1):
        if final.status == "closed" and number - 1 == before:
            state = close(state)
        found.extend(v.at(turn=number) for v in protocol.validate_speech(state, speech))
        conclude_here = number == before and final.status != "open"
        nxt = advance(state.turn, consensus=conclude_here, prompt=final.prompt_for_speaker)
        state = protocol.apply_speech(state, speech, nxt)
    if final.status == "closed" and state.turn.status != "closed":
        state = close(state)
    found += compare_states(state.turn, final, speeches=len(committed), lines=where)

    if minutes is not None and final.status == "open":
        found.append(
            RULES.violation(
                "ROUNDTABLE_MINUTES_TOO_EARLY",
                f"MINUTES.md exists but the meeting is open (round {final.round} of {final.max_rounds}); "
                "remove it until the meeting is concluding.",
            ).at(file=MINUTES_FILE)
        )
    elif minutes is not None and final.status == "concluding":
        problems = minutes_violations(minutes)
        found += problems
        state = state.model_copy(update={"minutes": minutes})
        if not problems:
            found.append(
                RULES.violation(
                    "ROUNDTABLE_UNCOMMITTED_MINUTES",
                    "MINUTES.md is written but turn.json still says 'concluding' (a crash between the two writes); "
                    "run moot resume to set status to 'closed'.",
                ).at(file=MINUTES_FILE)
            )
    if pending is not None:
        number = len(speeches)
        found.extend(v.at(turn=number) for v in protocol.validate_speech(state, pending))
        found.append(
            RULES.violation(
                "ROUNDTABLE_UNCOMMITTED_SPEECH",
                f"{speech_file_name(pending.sequence, pending.role)} is written but turn.json was not advanced past it "
                "(a crash between the two writes of step 3); run moot resume to finish the commit.",
                turn=number,
            )
        )
        state = state.model_copy(update={"uncommitted_speech": pending})
    return Replay(state=state, violations=found)

"""The Critique Loop: two participants take turns in one append-only dialogue until one proposes to
conclude and the other confirms (``DONE``), one escalates to a human (``STUCK``), or the rounds run out.

Seed: critique-loop-architecture.md and critique-loop-participant-instructions.md. Rule 1 (append
only) is not a rule of this module: a turn is immutable once written, and the digest chain of the
record reports an edited or removed turn as ``PRIOR_TURN_MODIFIED`` / ``PRIOR_TURN_REMOVED``.

The line patterns of the format (turn header, status line, summary paragraph) live here because
``validate`` must refuse a message that would corrupt the record; ``moot.protocols.critique.record`` uses them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from moot.core.hollow import Said, echo_key, echoed, has_content, said_after
from moot.core.machine import DeliberationProtocol, Outcome, Rule, RuleBook, Summary
from moot.errors import Severity, Violation

NAME = "critique"

Template = Literal["planning", "review", "pair", "custom"]
# template -> (the user's side, the partner, default max rounds)
TEMPLATES: Mapping[str, tuple[str, str, int]] = {
    "planning": ("proposer", "critic", 5),
    "review": ("author", "reviewer", 5),
    "pair": ("lead", "partner", 7),
}
DEFAULT_MAX_ROUNDS = 5
# When the rounds run out the orchestrator offers to go on; an extension is a larger max_rounds.
EXTENSION_ROUNDS = 5
MAX_ROUNDS_LIMIT = 1000
MAX_ROUND_NUMBER = 999_999_999  # a turn header's round has at most 9 digits

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M"
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}")
_ROLE_NAME = re.compile(r"[^\s\[\]()@]+")
# A line that starts a turn: '## [<role>] ...' (any heading level, so a '### [x]' is reported, not swallowed).
TURN_HEADER_START = re.compile(r"\s*#{1,6}\s*\[[^\]]*\]")
STATUS_PREFIX = "Status:"
_SUMMARY_START = re.compile(r"\s*(?:\*\*)?Summary(?:\*\*)?:(?:\*\*)?", re.IGNORECASE)

RULES = RuleBook(
    [
        Rule(
            "CRITIQUE_RECORD_HEADER", "The record starts with the '# Dialogue: <topic>' header block, ended by '---'."
        ),
        Rule("CRITIQUE_TURN_HEADER", "Each turn is '---' then '## [<role>] Round N — YYYY-MM-DD HH:MM'."),
        Rule("CRITIQUE_STATUS_LAST", "The last line of every turn, and only that line, is its Status line."),
        Rule("CRITIQUE_STATUS_VALUE", "A status is AWAITING <role>, PROPOSING_DONE, DONE or STUCK."),
        Rule("CRITIQUE_ROLE", "Only the two participants of the header write turns."),
        Rule(
            "CRITIQUE_ALTERNATION",
            "The first role opens; no role writes twice in a row (except to resume after STUCK).",
        ),
        Rule("CRITIQUE_ROUND", "Round 1 first; the round goes up once both parties have spoken (Rule 7)."),
        Rule("CRITIQUE_TIMESTAMP", "A turn's time is a real 'YYYY-MM-DD HH:MM'."),
        Rule("CRITIQUE_TIMESTAMP_ORDER", "Turn times do not go backwards.", Severity.WARNING),
        Rule("CRITIQUE_AWAITING", "AWAITING names the other participant."),
        Rule("CRITIQUE_DONE_CONFIRMS", "DONE confirms the other party's PROPOSING_DONE.", Severity.WARNING),
        Rule("CRITIQUE_DONE_SUMMARY", "A DONE turn carries a 'Summary: ...' paragraph.", Severity.WARNING),
        Rule("CRITIQUE_AFTER_DONE", "Nothing is written after DONE."),
        Rule("CRITIQUE_STUCK_EXPLANATION", "A STUCK turn explains the blocker."),
        Rule("CRITIQUE_MAX_ROUNDS", "No turn goes past the header's 'Max rounds'."),
        Rule("CRITIQUE_EMPTY_MESSAGE", "A turn's text (message and summary) has at least one letter or digit."),
        Rule(
            "CRITIQUE_ECHO",
            "A turn's text does not repeat an earlier turn's word for word (ignoring case and spacing).",
            Severity.WARNING,
        ),
    ]
)


# --- small pure helpers shared with the artifact format ---------------------------------------


def timestamp_problem(value: str) -> str | None:
    """Why ``value`` is not a 'YYYY-MM-DD HH:MM' time, or ``None`` when it is one."""
    if not _TIMESTAMP.fullmatch(value):
        return f"'{value}' is not a YYYY-MM-DD HH:MM time"
    try:  # the digits are in place, so the constructor checks what strptime would, at a tenth of its cost
        datetime(int(value[:4]), int(value[5:7]), int(value[8:10]), int(value[11:13]), int(value[14:16]))
    except ValueError:
        return f"'{value}' is not a real date and time"
    return None


def role_problem(name: str) -> str | None:
    """Why ``name`` cannot be a participant's role, or ``None``."""
    if not _ROLE_NAME.fullmatch(name):
        return f"role {name!r} must be one word without spaces, brackets, parentheses or '@'"
    return None


def normalize_text(text: str) -> str:
    """Message text as the record stores it: '\\n' line breaks, no surrounding blank space."""
    return re.sub(r"\r\n?", "\n", text).strip()


def is_turn_header(line: str) -> bool:
    return TURN_HEADER_START.match(line) is not None


def status_value(line: str) -> str | None:
    """The text after 'Status:' when ``line`` is a status line, else ``None``."""
    stripped = line.strip()
    return stripped[len(STATUS_PREFIX) :].strip() if stripped.startswith(STATUS_PREFIX) else None


class StatusKind(StrEnum):
    AWAITING = "AWAITING"
    PROPOSING_DONE = "PROPOSING_DONE"
    DONE = "DONE"
    STUCK = "STUCK"


def parse_status(value: str) -> tuple[StatusKind, str | None] | None:
    """'AWAITING critic' -> (AWAITING, 'critic'); ``None`` when ``value`` is no valid status."""
    parts = value.split(None, 1)
    if not parts or parts[0] not in StatusKind.__members__:
        return None
    kind = StatusKind(parts[0])
    rest = parts[1].strip() if len(parts) > 1 else ""
    if kind is StatusKind.AWAITING:
        return kind, rest or None
    return None if rest else (kind, None)


def split_summary(body: str) -> tuple[str, str | None]:
    """A DONE turn's text -> (message, summary). The summary runs from the first paragraph that
    starts with 'Summary:' to the end, as in the seed's example confirmation."""
    lines = body.split("\n")
    for index, line in enumerate(lines):
        match = _SUMMARY_START.match(line)
        if match and (index == 0 or not lines[index - 1].strip()):
            summary = "\n".join([line[match.end() :], *lines[index + 1 :]]).strip()
            return "\n".join(lines[:index]).strip(), summary or None
    return body, None


def join_summary(message: str, summary: str | None) -> str:
    """The text of a turn between its header and its Status line."""
    if summary is None:
        return message
    paragraph = f"Summary: {summary}"
    return f"{message}\n\n{paragraph}" if message else paragraph


def _one_line(value: str, what: str) -> str:
    if "\n" in value or "\r" in value:
        raise ValueError(f"the {what} must be a single line")
    return value.strip()


# --- models ------------------------------------------------------------------------------------


class CritiqueConfig(BaseModel):
    """What the record's header says: topic, the two roles (user's side first), limits."""

    model_config = ConfigDict(frozen=True)

    topic: str
    roles: tuple[str, str]
    template: Template = "custom"
    max_rounds: int = Field(default=DEFAULT_MAX_ROUNDS, ge=1, le=MAX_ROUNDS_LIMIT)
    started: str
    directory: str | None = None

    @field_validator("topic")
    @classmethod
    def _topic(cls, value: str) -> str:
        value = _one_line(value, "topic")
        if not value:
            raise ValueError("the topic must not be empty")
        return value

    @field_validator("roles")
    @classmethod
    def _roles(cls, value: tuple[str, str]) -> tuple[str, str]:
        for role in value:
            if problem := role_problem(role):
                raise ValueError(problem)
        if value[0] == value[1]:
            raise ValueError("the two participants need different role names")
        return value

    @field_validator("started")
    @classmethod
    def _started(cls, value: str) -> str:
        if problem := timestamp_problem(value.strip()):
            raise ValueError(problem)
        return value.strip()

    @field_validator("directory")
    @classmethod
    def _directory(cls, value: str | None) -> str | None:
        return (_one_line(value, "directory") or None) if value is not None else None

    @model_validator(mode="after")
    def _template_roles(self) -> CritiqueConfig:
        if self.template != "custom" and self.roles != TEMPLATES[self.template][:2]:
            first, second, _ = TEMPLATES[self.template]
            raise ValueError(f"template {self.template} has the roles {first} and {second}; use those or custom roles")
        return self

    @classmethod
    def from_template(
        cls,
        template: Literal["planning", "review", "pair"],
        *,
        topic: str,
        started: str,
        max_rounds: int | None = None,
        directory: str | None = None,
    ) -> CritiqueConfig:
        first, second, default_rounds = TEMPLATES[template]
        return cls(
            topic=topic,
            roles=(first, second),
            template=template,
            max_rounds=default_rounds if max_rounds is None else max_rounds,
            started=started,
            directory=directory,
        )

    @classmethod
    def custom(
        cls,
        roles: tuple[str, str],
        *,
        topic: str,
        started: str,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        directory: str | None = None,
    ) -> CritiqueConfig:
        return cls(
            topic=topic, roles=roles, template="custom", max_rounds=max_rounds, started=started, directory=directory
        )

    def other(self, role: str) -> str | None:
        """The participant who is not ``role``; ``None`` when ``role`` is no participant."""
        if role not in self.roles:
            return None
        return self.roles[1] if role == self.roles[0] else self.roles[0]

    def extended(self, extra_rounds: int = EXTENSION_ROUNDS) -> CritiqueConfig:
        return CritiqueConfig.model_validate({**self.model_dump(), "max_rounds": self.max_rounds + extra_rounds})


class CritiqueTurn(BaseModel):
    """One turn as the record holds it. The model only checks what rendering needs (single-line
    fields, a summary only on DONE); every protocol rule is reported by ``validate`` with its id."""

    model_config = ConfigDict(frozen=True)

    role: str
    round: int = Field(ge=0, le=MAX_ROUND_NUMBER)
    timestamp: str
    message: str = ""
    status: StatusKind
    awaiting: str | None = None  # the role named by 'Status: AWAITING <role>'
    summary: str | None = None  # the 'Summary: ...' paragraph of a DONE turn

    @field_validator("role")
    @classmethod
    def _role(cls, value: str) -> str:
        if "]" in value:
            raise ValueError("a role cannot contain ']'")
        return _one_line(value, "role")

    @field_validator("timestamp")
    @classmethod
    def _timestamp(cls, value: str) -> str:
        return _one_line(value, "timestamp")

    @field_validator("awaiting")
    @classmethod
    def _awaiting(cls, value: str | None) -> str | None:
        return (_one_line(value, "awaited role") or None) if value is not None else None

    @field_validator("message")
    @classmethod
    def _message(cls, value: str) -> str:
        return normalize_text(value)

    @field_validator("summary")
    @classmethod
    def _summary(cls, value: str | None) -> str | None:
        return (normalize_text(value) or None) if value is not None else None

    @model_validator(mode="after")
    def _consistent(self) -> CritiqueTurn:
        if self.awaiting is not None and self.status is not StatusKind.AWAITING:
            raise ValueError("only an AWAITING status names an awaited role")
        if self.summary is not None and self.status is not StatusKind.DONE:
            raise ValueError("only a DONE turn carries a summary; put the text in the message")
        if self.status is StatusKind.DONE and split_summary(self.body) != (self.message, self.summary):
            raise ValueError("the message of a DONE turn must not contain a 'Summary:' paragraph; pass it as summary")
        return self

    @property
    def body(self) -> str:
        """The text between the turn header and the Status line."""
        return join_summary(self.message, self.summary)

    @property
    def status_text(self) -> str:
        """What follows 'Status: ' in the record."""
        if self.status is StatusKind.AWAITING and self.awaiting is not None:
            return f"AWAITING {self.awaiting}"
        return self.status.value


ReplyStatus = Literal["AWAITING", "PROPOSING_DONE", "DONE", "STUCK"]


# What the engine asks a model for; moot fills in role, round, time and the awaited role. The awaited
# role is left out on purpose: with two participants it is always the other one, so asking a small
# model for it only adds a way to get it wrong. Every field is required and the status is an inline
# enum, which keeps the JSON Schema easy to turn into a decoding grammar.
class CritiqueReply(BaseModel):
    """Your turn in a two-party dialogue."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra={"required": ["message", "status", "summary"]},
    )

    message: str = Field(description="Your turn: respond to the last turn and move the dialogue forward.")
    status: ReplyStatus = Field(
        description="AWAITING to pass the turn to the other participant; PROPOSING_DONE when you think the "
        "dialogue can conclude; DONE only to confirm the other participant's PROPOSING_DONE; STUCK when a "
        "human must decide (explain why in the message)."
    )
    summary: str = Field(default="", description="With DONE: what was agreed, in one paragraph. Otherwise empty.")


def turn_json_schema() -> dict[str, Any]:
    return CritiqueTurn.model_json_schema()


def reply_json_schema() -> dict[str, Any]:
    return CritiqueReply.model_json_schema()


class CritiqueState(BaseModel):
    """The replayed history, reduced to what the rules need."""

    model_config = ConfigDict(frozen=True)

    turns: int = 0
    round: int = 1  # the round the next turn belongs to
    spoken: tuple[str, ...] = ()  # the participants who have spoken in ``round``
    last: CritiqueTurn | None = None
    last_timestamp: str | None = None  # the latest well-formed time so far
    done_at: int | None = None  # the 1-based number of the first DONE turn
    done: CritiqueTurn | None = None
    said: Said = Field(default_factory=Said)  # what the turns' texts said (moot.core.hollow)


# --- the state machine -------------------------------------------------------------------------


class CritiqueProtocol(DeliberationProtocol[CritiqueTurn, CritiqueState]):
    name: ClassVar[str] = NAME
    rules: ClassVar[RuleBook] = RULES
    turn_model: ClassVar[type[BaseModel]] = CritiqueTurn

    def __init__(self, config: CritiqueConfig) -> None:
        self.config = config

    def initial_state(self) -> CritiqueState:
        return CritiqueState()

    def expected_round(self, state: CritiqueState) -> int:
        return state.round

    def next_speaker(self, state: CritiqueState) -> str | None:
        if self.outcome(state) is not None:
            return None
        last = state.last
        if last is None:
            return self.config.roles[0]
        if last.awaiting in self.config.roles and last.awaiting != last.role:
            return last.awaiting
        return self.config.other(last.role) or self.config.roles[0]

    def validate(self, state: CritiqueState, turn: CritiqueTurn) -> list[Violation]:
        return [RULES.violation(rule, message) for rule, message in self._problems(state, turn)]

    def _problems(self, state: CritiqueState, turn: CritiqueTurn) -> list[tuple[str, str]]:
        config, last = self.config, state.last
        first, second = config.roles
        other = config.other(turn.role)
        found: list[tuple[str, str]] = []

        if state.done_at is not None:
            found.append(
                (
                    "CRITIQUE_AFTER_DONE",
                    f"the dialogue already ended with DONE at turn {state.done_at}; start a new dialogue instead of adding turns.",
                )
            )
        elif max(turn.round, state.round) > config.max_rounds:
            found.append(
                (
                    "CRITIQUE_MAX_ROUNDS",
                    f"this turn would be in round {max(turn.round, state.round)} but 'Max rounds' is "
                    f"{config.max_rounds}; raise it in the header to continue.",
                )
            )

        if other is None:
            found.append(
                ("CRITIQUE_ROLE", f"'{turn.role}' is not a participant; write the turn as {first} or {second}.")
            )
        elif last is None and turn.role != first:
            found.append(("CRITIQUE_ALTERNATION", f"{first} opens the dialogue; let {first} write the first turn."))
        elif last is not None and last.role == turn.role and last.status is not StatusKind.STUCK:
            found.append(
                ("CRITIQUE_ALTERNATION", f"{turn.role} wrote the previous turn too; the next turn is {other}'s.")
            )

        if turn.round != state.round:
            found.append(
                (
                    "CRITIQUE_ROUND",
                    f"this turn is numbered round {turn.round} but belongs to round {state.round}; number it "
                    f"{state.round} (the round goes up once both parties have spoken).",
                )
            )

        if problem := timestamp_problem(turn.timestamp):
            found.append(("CRITIQUE_TIMESTAMP", f"{problem}; write the turn's time as YYYY-MM-DD HH:MM."))
        else:
            floor = max(config.started, state.last_timestamp or config.started)
            if turn.timestamp < floor:
                found.append(
                    (
                        "CRITIQUE_TIMESTAMP_ORDER",
                        f"{turn.timestamp} is earlier than {floor}, the latest time before it; use the current time.",
                    )
                )

        found.extend(self._status_problems(state, turn, other or f"{first} or {second}"))
        found.extend(_body_problems(turn.body))
        found.extend(_hollow_problems(state, turn))
        return found

    def _status_problems(self, state: CritiqueState, turn: CritiqueTurn, other: str) -> list[tuple[str, str]]:
        last = state.last
        if turn.status is StatusKind.AWAITING:
            fix = f"write 'Status: AWAITING {other}'."
            if turn.awaiting is None:
                return [("CRITIQUE_AWAITING", f"AWAITING must name who speaks next; {fix}")]
            if turn.awaiting == turn.role:
                return [("CRITIQUE_AWAITING", f"{turn.role} cannot await itself; {fix}")]
            if turn.awaiting not in self.config.roles:
                return [("CRITIQUE_AWAITING", f"'{turn.awaiting}' is not a participant; {fix}")]
        if turn.status is StatusKind.STUCK and not turn.message:
            return [
                (
                    "CRITIQUE_STUCK_EXPLANATION",
                    "a STUCK turn must explain the blocker; write what a human has to decide above the Status line.",
                )
            ]
        found: list[tuple[str, str]] = []
        if turn.status is StatusKind.DONE:
            if last is None or last.status is not StatusKind.PROPOSING_DONE or last.role == turn.role:
                found.append(
                    (
                        "CRITIQUE_DONE_CONFIRMS",
                        f"DONE should confirm a PROPOSING_DONE from {other}, and the previous turn is not one; "
                        f"write PROPOSING_DONE instead and let {other} confirm.",
                    )
                )
            if turn.summary is None:
                found.append(
                    (
                        "CRITIQUE_DONE_SUMMARY",
                        "a DONE turn should state what was agreed; add a 'Summary: ...' paragraph above the Status line.",
                    )
                )
        return found

    def apply(self, state: CritiqueState, turn: CritiqueTurn) -> CritiqueState:
        # Follow the round the turn says it is in (as Rule 7 tells writers to), so one misnumbered
        # turn is one violation rather than a cascade over every later turn.
        current = turn.round if turn.round >= 1 else state.round
        spoken = state.spoken if current == state.round else ()
        if turn.role in self.config.roles and turn.role not in spoken:
            spoken = (*spoken, turn.role)
        next_round = current
        if set(spoken) == set(self.config.roles):
            next_round, spoken = current + 1, ()
        latest = state.last_timestamp
        if timestamp_problem(turn.timestamp) is None and (latest is None or turn.timestamp > latest):
            latest = turn.timestamp
        first_done = state.done_at is None and turn.status is StatusKind.DONE
        return CritiqueState(
            turns=state.turns + 1,
            round=next_round,
            spoken=spoken,
            last=turn,
            last_timestamp=latest,
            done_at=state.turns + 1 if first_done else state.done_at,
            done=turn if first_done else state.done,
            said=said_after(state.said, echo_key(turn.body), state.turns + 1),
        )

    def outcome(self, state: CritiqueState) -> Outcome | None:
        if state.done is not None:
            done = state.done
            summary = f": {done.summary}" if done.summary else "."
            return Outcome(
                name="DONE",
                reason=f"{done.role} confirmed the conclusion in round {done.round}{summary}",
                consensus=True,
            )
        last = state.last
        if last is not None and last.status is StatusKind.STUCK:
            blocker = last.message.split("\n", 1)[0] if last.message else "no explanation given."
            return Outcome(name="STUCK", reason=f"{last.role} asked a human to decide in round {last.round}: {blocker}")
        if state.round > self.config.max_rounds:
            return Outcome(
                name="MAX_ROUNDS",
                reason=f"all {self.config.max_rounds} round(s) were used without DONE; to go on, raise the limit with "
                f"`moot resume RECORD --max-rounds {self.config.max_rounds + EXTENSION_ROUNDS}`.",
            )
        return None

    def summary(self, state: CritiqueState) -> Summary:
        outcome = self.outcome(state)
        current = state.last.round if outcome is not None and state.last is not None else state.round
        detail: dict[str, Any] = {
            "topic": self.config.topic,
            "roles": list(self.config.roles),
            "max_rounds": self.config.max_rounds,
        }
        if state.done is not None and state.done.summary:
            detail["summary"] = state.done.summary
        return Summary(
            protocol=NAME,
            turns=state.turns,
            next_speaker=self.next_speaker(state),
            round=current,
            outcome=outcome,
            detail=detail,
        )

    def turn_from_reply(self, state: CritiqueState, role: str, reply: CritiqueReply, timestamp: str) -> CritiqueTurn:
        """The full turn for a model's reply: moot supplies role, round, time and the awaited role."""
        status = StatusKind(reply.status)
        message = _drop_echoed_status(normalize_text(reply.message))
        summary = normalize_text(reply.summary) or None
        if status is StatusKind.DONE:
            message, summary = split_summary(join_summary(message, summary))
        else:
            message, summary = join_summary(message, summary), None  # keep what the model wrote
        return CritiqueTurn(
            role=role,
            round=self.expected_round(state),
            timestamp=timestamp,
            message=message,
            status=status,
            awaiting=self.config.other(role) if status is StatusKind.AWAITING else None,
            summary=summary,
        )


def _body_problems(body: str) -> list[tuple[str, str]]:
    """Lines of a message that would change how the record reads back."""
    found: list[tuple[str, str]] = []
    for number, line in enumerate(body.split("\n"), start=1):
        if is_turn_header(line):
            found.append(
                (
                    "CRITIQUE_TURN_HEADER",
                    f"line {number} of the message looks like a turn header; write only your own turn and remove it.",
                )
            )
        elif (value := status_value(line)) is not None and parse_status(value) is not None:
            found.append(
                (
                    "CRITIQUE_STATUS_LAST",
                    f"line {number} of the message is a Status line; keep a single Status line, as the turn's last line.",
                )
            )
    return found


def _hollow_problems(state: CritiqueState, turn: CritiqueTurn) -> list[tuple[str, str]]:
    """A turn that says nothing, or only what an earlier turn said (the seed is silent on both)."""
    if not has_content(turn.body):
        if turn.status is StatusKind.STUCK and not turn.message:
            return []  # CRITIQUE_STUCK_EXPLANATION already asks for the text
        return [
            (
                "CRITIQUE_EMPTY_MESSAGE",
                "the message has no letter or digit; write what you have to say above the Status line.",
            )
        ]
    number = echoed(echo_key(turn.body), state.said)
    if number is not None:
        return [("CRITIQUE_ECHO", f"the message repeats turn {number} word for word; answer it in your own words.")]
    return []


def _drop_echoed_status(message: str) -> str:
    """Models often end their message with the Status line they also gave as a field."""
    head, _, tail = message.rpartition("\n")
    value = status_value(tail)
    if value is not None and parse_status(value) is not None:
        return head.strip()
    return message

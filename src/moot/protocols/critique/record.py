"""The Critique Loop's record: one markdown file, ``.dialogues/<slug>.md``, in the seed's format.

A header block, then the turns, each appended as (participant instructions, Rule 2)::

    ---

    ## [<role>] Round N — YYYY-MM-DD HH:MM

    <message>

    Status: AWAITING <other-role> | PROPOSING_DONE | DONE | STUCK

Reading is tolerant of what agents really write (CRLF or CR line ends, extra blank lines, trailing
spaces, a header without its own '---' before the first turn) and reports every deviation from the
format with its line. Each turn's exact text (from its header line to the end of its Status line)
is kept for the digest chain, so an edit to an accepted turn shows as ``PRIOR_TURN_MODIFIED``. Each turn
moot appends is followed, in the same write, by the chain's head (moot.core.chain): a Markdown comment
line after the Status line, outside the turn, which the seed's Rule 3 still reads as the turn's end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from moot.core.chain import ChainMark, create_record
from moot.core.files import atomic_write_text
from moot.core.files import slugify as base_slugify
from moot.core.machine import DeliberationProtocol
from moot.core.turn_record import Entry, Inspection, Reading, TurnRecord, Written
from moot.errors import Violation
from moot.plugin import RecordFormat
from moot.protocols.critique import PLUGIN as CRITIQUE
from moot.protocols.critique.machine import (
    EXTENSION_ROUNDS,
    MAX_ROUND_NUMBER,
    MAX_ROUNDS_LIMIT,
    NAME,
    RULES,
    TEMPLATES,
    CritiqueConfig,
    CritiqueProtocol,
    CritiqueState,
    CritiqueTurn,
    StatusKind,
    is_turn_header,
    normalize_text,
    parse_status,
    role_problem,
    split_summary,
    status_value,
)

TITLE = "# Dialogue:"
DIALOGUE_DIR = CRITIQUE.folder
_HEADER_KEYS = {"started", "template", "max rounds", "participants"}
_SEPARATOR = re.compile(r"-{3,}")
_TURN_HEADER = re.compile(r"\s*(?P<hashes>#{1,6})\s*\[(?P<role>[^\]]*)\](?P<rest>.*)")
_ROUND = re.compile(r"\s*Round\s+(?P<number>[0-9]+)(?P<tail>.*)", re.IGNORECASE)
# Violations about the Status line are located there; the others at the turn header.
_STATUS_RULES = frozenset(
    {
        "CRITIQUE_STATUS_LAST",
        "CRITIQUE_AWAITING",
        "CRITIQUE_DONE_CONFIRMS",
        "CRITIQUE_DONE_SUMMARY",
        "CRITIQUE_STUCK_EXPLANATION",
    }
)

# Stands in for a missing or broken 'Max rounds' while checking the turns, so no turn is blamed for it.
_NO_LIMIT = MAX_ROUNDS_LIMIT


class TurnSource(BaseModel):
    """Where a turn sits in the record: its first line and its exact text (what the chain digests)."""

    model_config = ConfigDict(frozen=True)

    line: int
    text: str


class CritiqueRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    config: CritiqueConfig
    turns: tuple[CritiqueTurn, ...] = ()


# --- rendering ---------------------------------------------------------------------------------


def render_header(config: CritiqueConfig) -> str:
    first, second = config.roles
    where = f" @ {config.directory}" if config.directory else ""
    template = "" if config.template == "custom" else f"Template: {config.template}\n"
    return (
        f"{TITLE} {config.topic}\n"
        f"Started: {config.started}\n"
        f"{template}"
        f"Max rounds: {config.max_rounds}\n"
        "\n"
        "Participants:\n"
        f"  - {first}{where}\n"
        f"  - {second} (partner)\n"
        "\n"
        "---\n"
    )


def render_turn(turn: CritiqueTurn) -> str:
    """One turn exactly as Rule 2 shows it, starting with its '---' line."""
    body = f"{turn.body}\n\n" if turn.body else ""
    return f"---\n\n## [{turn.role}] Round {turn.round} — {turn.timestamp}\n\n{body}Status: {turn.status_text}\n"


def render(record: CritiqueRecord) -> str:
    return render_header(record.config) + "".join(f"\n{render_turn(turn)}" for turn in record.turns)


def render_marked(turn: CritiqueTurn, mark: ChainMark) -> str:
    """A turn as moot appends it: :func:`render_turn`, a blank line, then the chain's head after it."""
    return f"{render_turn(turn)}\n{mark.line()}\n"


# --- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    text: str  # without its line break
    start: int  # offset of the line in the record
    end: int  # offset just past its text (before the line break)


def _split_lines(text: str) -> list[_Line]:
    lines: list[_Line] = []
    start = 0
    for brk in re.finditer(r"\r\n|\r|\n", text):
        lines.append(_Line(text[start : brk.start()], start, brk.start()))
        start = brk.end()
    lines.append(_Line(text[start:], start, len(text)))
    return lines


def _blank_or_rule(line: _Line) -> bool:
    stripped = line.text.strip()
    return not stripped or _SEPARATOR.fullmatch(stripped) is not None


def _padding(line: _Line) -> bool:
    """What lies between turns without being one: blank lines, '---' rules and moot's chain mark."""
    return _blank_or_rule(line) or ChainMark.parse(line.text) is not None


@dataclass(frozen=True)
class _ScannedTurn:
    """A turn as read; ``None`` marks a part too broken to read (already reported)."""

    line: int
    status_line: int
    text: str
    role: str
    round: int | None
    timestamp: str | None
    body: str
    status: tuple[StatusKind, str | None] | None

    def to_turn(self, round_fallback: int, timestamp_fallback: str, awaiting_fallback: str) -> CritiqueTurn:
        """The turn, with neutral stand-ins for unreadable parts so that replay blames nothing else."""
        status, awaiting = self.status or (StatusKind.AWAITING, awaiting_fallback)
        message, summary = normalize_text(self.body), None
        if status is StatusKind.DONE:
            message, summary = split_summary(message)
        return CritiqueTurn(
            role=self.role,
            round=round_fallback if self.round is None else self.round,
            timestamp=timestamp_fallback if self.timestamp is None else self.timestamp,
            message=message,
            status=status,
            awaiting=awaiting,
            summary=summary,
        )


@dataclass
class _Scan:
    file: str | None
    config: CritiqueConfig | None  # the header as written; None when it has errors
    replay_config: CritiqueConfig | None  # with stand-ins for broken fields; None when no roles are known
    field_lines: dict[str, int]  # header key -> 0-based line index
    turns: list[_ScannedTurn]
    violations: list[Violation]
    marks: list[ChainMark] = field(default_factory=list)  # the chain heads moot wrote after turns

    def error(self, rule: str, line: int, message: str, turn: int | None = None) -> None:
        self.violations.append(RULES.violation(rule, message, turn=turn).at(file=self.file, line=line))


def _scan(text: str, file: str | None) -> _Scan:
    lines = _split_lines(text)
    scan = _Scan(file=file, config=None, replay_config=None, field_lines={}, turns=[], violations=[])
    starts = [index for index, line in enumerate(lines) if is_turn_header(line.text)]
    first_turn = starts[0] if starts else len(lines)
    header_end = next((i for i in range(first_turn) if _SEPARATOR.fullmatch(lines[i].text.strip())), None)
    _scan_header(scan, lines[: first_turn if header_end is None else header_end])
    if header_end is None:
        scan.error(
            "CRITIQUE_RECORD_HEADER",
            first_turn + 1 if starts else len(lines),
            "the header must end with a '---' line; add one after the Participants list.",
        )
    for index in range((header_end + 1) if header_end is not None else first_turn, first_turn):
        if not _blank_or_rule(lines[index]):
            scan.error(
                "CRITIQUE_TURN_HEADER",
                index + 1,
                "this line is outside any turn; start every turn with '## [<role>] Round N — YYYY-MM-DD HH:MM'.",
            )
            break
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(lines)
        _scan_turn(scan, lines, text, start, end, last_turn=end == len(lines))
    return scan


def _scan_header(scan: _Scan, lines: list[_Line]) -> None:
    """Read the header block; sets ``scan.config`` and ``scan.replay_config``."""
    errors_before = len(scan.violations)
    title = next((i for i, line in enumerate(lines) if line.text.strip()), 0)
    topic = ""
    scan.field_lines["title"] = title
    if not lines or not lines[title].text.strip().startswith(TITLE):
        scan.error("CRITIQUE_RECORD_HEADER", title + 1, f"the record must start with '{TITLE} <topic>'.")
    else:
        topic = lines[title].text.strip()[len(TITLE) :].strip()
        if not topic:
            scan.error("CRITIQUE_RECORD_HEADER", title + 1, f"name the topic after '{TITLE}'.")

    values: dict[str, str] = {}
    participants: list[tuple[str, int]] = []
    listing = False
    for index in range(title + 1, len(lines)):
        stripped = lines[index].text.strip()
        if not stripped:
            continue
        if listing and stripped.startswith("-"):
            participants.append((stripped[1:].strip(), index + 1))
            continue
        listing = False
        key, colon, value = stripped.partition(":")
        key = key.strip().lower()
        if not colon or key not in _HEADER_KEYS:
            scan.error(
                "CRITIQUE_RECORD_HEADER",
                index + 1,
                "unexpected line in the header; keep only Started, Template, Max rounds and Participants.",
            )
        elif key in values:
            scan.error("CRITIQUE_RECORD_HEADER", index + 1, f"'{key}' appears twice in the header; keep one.")
        else:
            values[key] = value.strip()
            scan.field_lines[key] = index
            listing = key == "participants"

    fields = _header_fields(scan, topic, values, participants)
    if not fields["roles"]:
        return  # no participants: nothing to replay the turns against
    header_ok = len(scan.violations) == errors_before
    try:
        config = CritiqueConfig.model_validate(fields)
    except ValidationError as exc:
        for problem in exc.errors():
            key = _FIELD_KEYS.get(str(problem["loc"][0]) if problem["loc"] else "roles", "title")
            if key == "participants":  # point at the participant whose role is not a valid name
                key = next((f"participant {r}" for r in fields["roles"] if role_problem(r)), key)
            line = scan.field_lines.get(key, title) + 1
            reason = str(problem.get("ctx", {}).get("error", problem["msg"]))
            scan.error("CRITIQUE_RECORD_HEADER", line, f"{reason}; correct the header.")
        # Check the turns anyway, with the template dropped in case it disagrees with the roles.
        try:
            scan.replay_config = CritiqueConfig.model_validate({**fields, "template": "custom"})
        except ValidationError:
            scan.replay_config = None
        return
    scan.replay_config = config
    scan.config = config if header_ok else None


# model field -> the header line it comes from
_FIELD_KEYS = {"roles": "participants", "directory": "participants", "started": "started", "topic": "title"}


def _header_fields(
    scan: _Scan, topic: str, values: dict[str, str], participants: list[tuple[str, int]]
) -> dict[str, Any]:
    """The config fields from the header, reporting what is missing or malformed, with stand-ins."""

    def missing(example: str) -> None:
        scan.error(
            "CRITIQUE_RECORD_HEADER", scan.field_lines["title"] + 1, f"the header has no '{example}' line; add it."
        )

    template = values.get("template", "custom")
    if template not in (*TEMPLATES, "custom"):
        scan.error(
            "CRITIQUE_RECORD_HEADER",
            scan.field_lines["template"] + 1,
            f"'{template}' is not a template; use planning, review, pair or custom.",
        )
        template = "custom"

    started = values.get("started")
    if started is None:
        missing("Started: YYYY-MM-DD HH:MM")

    max_rounds = _NO_LIMIT
    written = values.get("max rounds")
    if written is None:
        missing("Max rounds: N")
    elif written.isascii() and written.isdigit() and len(written) <= 6 and 1 <= int(written) <= MAX_ROUNDS_LIMIT:
        max_rounds = int(written)
    else:
        scan.error(
            "CRITIQUE_RECORD_HEADER",
            scan.field_lines["max rounds"] + 1,
            f"'Max rounds: {written}' must be a whole number from 1 to {MAX_ROUNDS_LIMIT}; write e.g. 'Max rounds: 5'.",
        )

    roles: tuple[str, ...] = TEMPLATES[template][:2] if template in TEMPLATES else ()
    directory: str | None = None
    if "participants" not in values:
        missing("Participants:")
    elif len(participants) != 2:
        scan.error(
            "CRITIQUE_RECORD_HEADER",
            scan.field_lines["participants"] + 1,
            "list exactly two participants below 'Participants:', the user's side first, then the partner.",
        )
    else:
        (first, first_line), (second, second_line) = participants
        first_role, at, where = first.partition("@")
        directory = (where.strip() or None) if at else None
        if second.endswith("(partner)"):
            second = second[: -len("(partner)")]
        else:
            scan.error("CRITIQUE_RECORD_HEADER", second_line, "mark the second participant '(partner)'.")
        roles = (first_role.strip(), second.strip())
        scan.field_lines[f"participant {roles[0]}"] = first_line - 1
        scan.field_lines.setdefault(f"participant {roles[1]}", second_line - 1)
    return {
        "topic": topic or "untitled",
        "roles": roles,
        "template": template,
        "max_rounds": max_rounds,
        "started": started if started is not None else "0001-01-01 00:00",
        "directory": directory,
    }


def _scan_turn(scan: _Scan, lines: list[_Line], text: str, start: int, end: int, *, last_turn: bool) -> None:
    number = len(scan.turns) + 1
    header = _TURN_HEADER.match(lines[start].text)
    assert header is not None  # ``start`` was chosen by is_turn_header
    role, round_number, timestamp = header["role"].strip(), None, None
    fix = "write the turn header as '## [<role>] Round N — YYYY-MM-DD HH:MM'."
    if header["hashes"] != "##":
        scan.error("CRITIQUE_TURN_HEADER", start + 1, f"a turn header starts with '##'; {fix}", turn=number)
    matched = _ROUND.match(header["rest"])
    digits = (matched["number"].lstrip("0") or "0") if matched is not None else ""
    if matched is None or len(digits) > len(str(MAX_ROUND_NUMBER)):
        scan.error("CRITIQUE_TURN_HEADER", start + 1, f"the round number is missing or too large; {fix}", turn=number)
    else:
        round_number = int(digits)
        tail = matched["tail"].strip()
        if tail.startswith("—"):
            timestamp = tail[1:].strip()
        elif not tail:
            scan.error("CRITIQUE_TURN_HEADER", start + 1, f"the time is missing; {fix}", turn=number)
        else:
            scan.error(
                "CRITIQUE_TURN_HEADER",
                start + 1,
                f"separate the round from the time with ' — ' (em dash); {fix}",
                turn=number,
            )
            timestamp = tail.lstrip("-–").strip()

    content = [i for i in range(start + 1, end) if not _padding(lines[i])]
    last = content[-1] if content else start
    scan.marks += [mark for i in range(last + 1, end) if (mark := ChainMark.parse(lines[i].text)) is not None]
    if not last_turn and not any(_SEPARATOR.fullmatch(lines[i].text.strip()) for i in range(last + 1, end)):
        scan.error("CRITIQUE_TURN_HEADER", end + 1, "put a '---' line before this turn header.", turn=number + 1)

    body = list(range(start + 1, last + 1))
    status_at = last if last > start and status_value(lines[last].text) is not None else None
    if status_at is None:
        where = "has no Status line" if last == start else f"ends with '{lines[last].text.strip()[:40]}'"
        scan.error(
            "CRITIQUE_STATUS_LAST",
            last + 1,
            f"this turn {where}; make 'Status: ...' its last line, after the message.",
            turn=number,
        )
        status_at = next((i for i in reversed(body) if status_value(lines[i].text) is not None), None)
    status = None
    if status_at is not None:
        body.remove(status_at)
        value = status_value(lines[status_at].text) or ""
        status = parse_status(value)
        if status is None:
            scan.error(
                "CRITIQUE_STATUS_VALUE",
                status_at + 1,
                f"'{value}' is not a status; use AWAITING <other-role>, PROPOSING_DONE, DONE or STUCK.",
                turn=number,
            )
    scan.turns.append(
        _ScannedTurn(
            line=start + 1,
            status_line=(status_at if status_at is not None else last) + 1,
            text=text[lines[start].start : lines[last].end],
            role=role,
            round=round_number,
            timestamp=timestamp,
            body="\n".join(lines[i].text for i in body),
            status=status,
        )
    )


def parse(text: str, file: str | None = None) -> tuple[CritiqueRecord | None, list[Violation]]:
    """The record in ``text``, or ``None`` with the located format violations. Never raises.

    Only the format is checked here; ``check`` also replays the protocol rules.
    """
    scan = _scan(text, file)
    if scan.config is None or any(v.is_error for v in scan.violations):
        return None, scan.violations
    turns = tuple(turn.to_turn(0, "", "") for turn in scan.turns)  # complete: no stand-ins are used
    return CritiqueRecord(config=scan.config, turns=turns), scan.violations


def _read_back(piece: str, file: str) -> _Scan:
    """The turns in ``piece``, rendered turns about to be appended: a turn's reading depends only on its own
    lines, so the record before it need not be read again."""
    lines = _split_lines(piece)
    starts = [index for index, line in enumerate(lines) if is_turn_header(line.text)]
    scan = _Scan(file=file, config=None, replay_config=None, field_lines={}, turns=[], violations=[])
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(lines)
        _scan_turn(scan, lines, piece, start, end, last_turn=end == len(lines))
    return scan


def turn_sources(text: str) -> list[TurnSource]:
    """Each turn's first line and exact text, in order: what the digest chain is computed over."""
    return [TurnSource(line=turn.line, text=turn.text) for turn in _scan(text, None).turns]


# --- checking and writing ----------------------------------------------------------------------


@dataclass
class CritiqueEntry(Entry[CritiqueTurn]):
    """A turn as read, with its parts as scanned (a part too broken to read is None there)."""

    scanned: _ScannedTurn


def _reading(scan: _Scan) -> Reading[CritiqueConfig, CritiqueEntry]:
    # A header with errors still replays the turns (``replay_config``); its errors refuse every write.
    entries = [CritiqueEntry(turn.to_turn(0, "", ""), turn.line, turn.text, turn) for turn in scan.turns]
    return Reading(scan.replay_config, entries, scan.violations, scan.marks)


class CritiqueTurns(TurnRecord[CritiqueConfig, CritiqueTurn, CritiqueState, CritiqueEntry]):
    """The dialogue as a :class:`~moot.core.turn_record.TurnRecord`: check with lines, the chain, appends that
    read back only the new turn, and repair."""

    protocol_name = NAME
    format_rule = RULES.violation(
        "CRITIQUE_TURN_HEADER", "the turn would not read back as written; simplify its message."
    )

    def read(self, text: str, file: str) -> Reading[CritiqueConfig, CritiqueEntry]:
        return _reading(_scan(text, file))

    def read_piece(self, piece: str, file: str) -> Reading[CritiqueConfig, CritiqueEntry]:
        return _reading(_read_back(piece, file))

    def protocol(self, config: CritiqueConfig) -> CritiqueProtocol:
        return CritiqueProtocol(config)

    def render_turn(self, turn: CritiqueTurn) -> str:
        return render_turn(turn)

    def turn_of(
        self,
        entry: CritiqueEntry,
        protocol: DeliberationProtocol[CritiqueTurn, CritiqueState],
        state: CritiqueState,
    ) -> CritiqueTurn:
        """Stand-ins for unreadable parts from the state before, so that replay blames nothing else."""
        assert isinstance(protocol, CritiqueProtocol)
        config = protocol.config
        role = entry.scanned.role
        return entry.scanned.to_turn(
            protocol.expected_round(state),
            state.last_timestamp or config.started,
            config.other(role) or config.roles[0],
        )

    def line_of(self, entry: CritiqueEntry, violation: Violation) -> int:
        return entry.scanned.status_line if violation.rule in _STATUS_RULES else entry.line

    def gap(self, text: str) -> str:
        return "\n" if text.endswith(("\n", "\r")) else "\n\n"  # records may end in CR or CRLF

    def refusing(
        self, inspection: Inspection[CritiqueConfig, CritiqueTurn, CritiqueState, CritiqueEntry]
    ) -> list[Violation]:
        """Format and chain errors: a dialogue whose history broke a rule still takes turns (``moot check``
        reports it), as it did when agents kept it by hand."""
        return inspection.chain.blocking_in([*inspection.reading.violations, *inspection.chain.violations])

    def inspect(self, text: str, path: Path) -> Inspection[CritiqueConfig, CritiqueTurn, CritiqueState, CritiqueEntry]:
        inspection = super().inspect(text, path)
        inspection.violations.sort(key=lambda v: (v.line or 0, v.turn or 0))
        return inspection


RECORD = CritiqueTurns()
check = RECORD.check
repair = RECORD.repair


def append_turn(path: Path, turn: CritiqueTurn) -> Written[CritiqueState]:
    """Validate ``turn`` against the dialogue on disk, then append it durably with the chain's mark; raises
    :class:`ProtocolViolationError` when it breaks a rule or the record cannot take a turn (format errors, edited
    accepted turns), leaving the record as it was."""
    return RECORD.writer(path).append([turn])


def create(path: Path, config: CritiqueConfig) -> None:
    """Start a dialogue: write the header atomically. Refuses to overwrite an existing record."""
    create_record(path, render_header(config), "continue that dialogue or choose another topic.")


def extend(path: Path, extra_rounds: int = EXTENSION_ROUNDS) -> CritiqueConfig:
    """Allow ``extra_rounds`` more rounds by raising 'Max rounds' in the header (turns stay untouched)."""
    if extra_rounds < 1:
        raise ValueError("extend by at least one round.")
    protocol, _, text = RECORD.load(path)
    assert isinstance(protocol, CritiqueProtocol)
    extended = protocol.config.extended(extra_rounds)
    atomic_write_text(path, with_max_rounds(text, extended.max_rounds))
    return extended


def with_max_rounds(text: str, max_rounds: int) -> str:
    """The dialogue ``text`` (or its header alone) with 'Max rounds' set to ``max_rounds``, all else unchanged."""
    scan = _scan(text, None)
    line = _split_lines(text)[scan.field_lines["max rounds"]]
    return f"{text[: line.start]}Max rounds: {max_rounds}{text[line.end :]}"


# --- file names --------------------------------------------------------------------------------


def slugify(topic: str) -> str:
    """The dialogue's file name stem (see :func:`moot.core.files.slugify`)."""
    return base_slugify(topic, "dialogue")


def dialogue_path(root: Path, topic: str) -> Path:
    return root / DIALOGUE_DIR / f"{slugify(topic)}.md"


FORMAT = RecordFormat(check=check, turn_heading="## [")

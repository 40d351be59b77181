"""The roundtable record: a meeting directory under ``.roundtable/``, exactly as the guide lays it out.

::

    .roundtable/
    ├── GUIDE.md            the protocol guide (written when the first meeting starts)
    └── {meeting}/
        ├── AGENDA.md       background, topic and roles
        ├── turn.json       the state machine (strict JSON, 2-space indent, UTF-8 kept readable)
        ├── 001_{role}.md   one file per speech, never changed once written
        ├── ...
        ├── MINUTES.md      the moderator's minutes
        └── .moot.chain     moot's digest chain over the speeches and the minutes (tamper evidence)

A commit is two writes: the speech file (durably) and then ``turn.json`` (atomically), then the speech's
row appended to the digest chain. A crash between them leaves a speech that ``turn.json`` has not moved
past; :func:`check` reports it as ``ROUNDTABLE_UNCOMMITTED_SPEECH`` with ``repairable=True`` and
:func:`finish_commit` completes it. The same holds for ``MINUTES.md`` and the closing ``turn.json``.

A speech file and ``MINUTES.md`` that moot writes end with the chain's head after them (moot.core.chain):
one Markdown comment line, in the same write as the text, which is not part of the speech. ``turn.json``
holds only the guide's eight fields.

Neither write can be an append: the guide names one new file per speech, and ``turn.json`` is the state
machine, one JSON object that must always parse, so it is replaced whole (temp file, fsync, rename,
directory fsync), and the speech must be durable before it. Only the chain grows by appending.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from moot.core.chain import (
    ChainCheck,
    ChainMark,
    chain_path,
    extend_chain,
    inspect_chain,
    record_chain,
    repair_chain,
    split_mark,
    with_mark,
)
from moot.core.files import (
    FILE_RULES,
    CheckReport,
    FileStamp,
    atomic_write_text,
    fsync_directory,
    read_text,
    replay_report,
    unreadable,
)
from moot.core.machine import Replay, Summary
from moot.errors import ProtocolViolationError, Violation
from moot.plugin import RecordFormat
from moot.protocols.roundtable import PLUGIN as ROUNDTABLE
from moot.protocols.roundtable.guide import GUIDE_TEXT
from moot.protocols.roundtable.machine import (
    AGENDA_FILE,
    MINUTES_FILE,
    MINUTES_PARTS,
    MODERATOR,
    RULES,
    TURN_FILE,
    UNCOMMITTED_RULES,
    Language,
    MeetingState,
    Minutes,
    RoundtableClosing,
    RoundtableProtocol,
    RoundtableReply,
    RoundtableTurn,
    Speech,
    TurnState,
    close_state,
    finish_state,
    meeting_summary,
    name_problem,
    opening_state,
    replay_meeting,
    speech_file_name,
    state_violations,
    turn_from_reply,
)

ROUNDTABLE_DIR = ROUNDTABLE.folder
GUIDE_FILE = "GUIDE.md"
PROTOCOL = "roundtable"

_SPEECH_NAME = re.compile(r"([0-9]+)_(.+)\.md", re.DOTALL)
_MAX_SEQUENCE_DIGITS = 9
_MAX_UNKNOWN_REPORTED = 10
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.+)")
_FENCE = re.compile(r" {0,3}(```|~~~)")
_KEY_LINE = re.compile(r'(?<!\\)"([^"\\]*)"\s*:')

MINUTES_TITLES: dict[str, str] = {"en": "Minutes", "zh": "会议纪要"}
# Headings MINUTES.md may use for each part, compared after casefolding and dropping numbering,
# bold markers and a trailing colon.
_MINUTES_ALIASES: dict[str, str] = {}
for _field, _english, _chinese in MINUTES_PARTS:
    _MINUTES_ALIASES[_english.casefold()] = _field
    _MINUTES_ALIASES[_chinese] = _field
_MINUTES_ALIASES.update(
    {
        "summary": "summary",
        "摘要": "summary",
        "consensus": "consensus",
        "共识": "consensus",
        "unresolved disagreements": "unresolved",
        "disagreements": "unresolved",
        "分歧": "unresolved",
        "action items": "action_items",
        "行动项": "action_items",
    }
)

FIELD_TYPES: dict[str, str] = {
    "conference": "a string",
    "status": "one of 'open', 'concluding', 'closed'",
    "round": "an integer",
    "max_rounds": "an integer",
    "speaker_order": "an array of strings",
    "current_speaker_index": "an integer",
    "current_speaker": "a string",
    "prompt_for_speaker": "a string",
}


class MeetingRecord(BaseModel):
    """Everything a meeting directory says, parsed. ``agenda`` is ``None`` when AGENDA.md is missing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agenda: str | None
    state: TurnState
    speeches: tuple[Speech, ...] = ()
    minutes: Minutes | None = None


@dataclass
class _Parsed:
    """A parsed meeting with what checking needs beyond the record: file names, lines, raw text."""

    directory: Path
    record: MeetingRecord | None
    violations: list[Violation]
    speech_files: list[str] = field(default_factory=list)
    field_lines: dict[str, int] = field(default_factory=dict)
    minutes_text: str | None = None  # MINUTES.md without the chain mark moot ends it with
    marks: list[ChainMark] = field(default_factory=list)  # the chain heads that end the speeches and the minutes

    @property
    def chain_texts(self) -> list[str]:
        """The texts the digest chain covers: every speech in order, then the minutes."""
        if self.record is None:
            return []
        texts = [speech.body for speech in self.record.speeches]
        return texts if self.minutes_text is None else [*texts, self.minutes_text]


# --- names and paths ---------------------------------------------------------------------------


def _shown(text: str) -> str:
    """Text safe to print: file names that are not UTF-8 arrive with surrogate escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def meeting_dir(root: Path, name: str) -> Path:
    """``root/.roundtable/{name}``; refuses names that could leave that directory. Unicode is fine."""
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(f"meeting name {_shown(name)!r} {problem}; choose a plain name such as 'cache-design'.")
    return root / ROUNDTABLE_DIR / name


def parse_speech_name(name: str) -> tuple[tuple[int, str] | None, list[Violation]]:
    """``NNN_{role}.md`` -> (sequence, role), with violations. Total; the role is NFC-normalised."""
    match = _SPEECH_NAME.fullmatch(name)
    if match is None:
        message = f"{_shown(name)} is not a speech file name; name speeches NNN_{{role}}.md, e.g. 003_reviewer.md."
        return None, [RULES.violation("ROUNDTABLE_SPEECH_NAME", message)]
    digits, role = match.group(1), unicodedata.normalize("NFC", match.group(2))
    problem = name_problem(role)
    if problem is not None:
        message = f"the role in {_shown(name)} {_shown(problem)}; rename the file after a role in speaker_order."
        return None, [RULES.violation("ROUNDTABLE_SPEECH_NAME", message)]
    if len(digits) > _MAX_SEQUENCE_DIGITS:
        message = f"{_shown(name)} has a {len(digits)}-digit number; number speeches 001, 002, ... in order."
        return None, [RULES.violation("ROUNDTABLE_SEQUENCE", message)]
    sequence = int(digits)
    if digits != f"{sequence:03d}":
        message = f"{_shown(name)} is not numbered with three digits; rename it {speech_file_name(sequence, role)}."
        return (sequence, role), [RULES.violation("ROUNDTABLE_SEQUENCE", message)]
    return (sequence, role), []


# --- rendering ---------------------------------------------------------------------------------


def render_turn_json(state: TurnState) -> str:
    """``turn.json`` text: 2-space indent, non-ASCII kept as written, fields in the guide's order."""
    return json.dumps(state.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"


def render_agenda(conference: str, agenda: str, speaker_order: Sequence[str], max_rounds: int) -> str:
    roles = "\n".join(f"{number}. {role}" for number, role in enumerate(speaker_order, start=1))
    return (
        f"# Agenda: {_one_line(conference)}\n\n{agenda.strip()}\n\n## Roles\n\n"
        f"Speaking order, one speech each per round, at most {max_rounds} round(s):\n\n{roles}\n\n"
        f"The `{MODERATOR}` writes MINUTES.md once the meeting is concluding.\n"
    )


def render_minutes(minutes: Minutes, conference: str, language: Language = "en") -> str:
    """``MINUTES.md`` with the four parts under English or Chinese headings."""
    sections = [f"# {MINUTES_TITLES[language]}: {_one_line(conference)}"]
    for part, english, chinese in MINUTES_PARTS:
        heading = english if language == "en" else chinese
        sections.append(f"## {heading}\n\n{getattr(minutes, part).strip()}")
    return "\n\n".join(sections) + "\n"


def render_meeting(record: MeetingRecord) -> dict[str, str]:
    """File name -> text for every file of the meeting (the chain aside)."""
    files = {TURN_FILE: render_turn_json(record.state)}
    if record.agenda is not None:
        files[AGENDA_FILE] = record.agenda
    for speech in record.speeches:
        files[speech_file_name(speech.sequence, speech.role)] = speech.body
    if record.minutes is not None:
        files[MINUTES_FILE] = render_minutes(record.minutes, record.state.conference)
    return files


def _one_line(text: str) -> str:
    """A title from free text: one line, no control characters (a NUL would make the file binary)."""
    return " ".join("".join(" " if unicodedata.category(c) == "Cc" else c for c in text).split())


# --- parsing -----------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; write a number or a string")


def field_lines(text: str) -> dict[str, int]:
    """The line of each key's first occurrence, to locate violations in ``turn.json``."""
    lines: dict[str, int] = {}
    line, counted = 1, 0
    for match in _KEY_LINE.finditer(text):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        lines.setdefault(match.group(1), line)
    return lines


def _short(value: object) -> str:
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except ValueError:  # an integer too long to print
        shown = type(value).__name__
    return shown if len(shown) <= 40 else shown[:37] + "..."


def parse_turn_json(text: str, file: str = TURN_FILE) -> tuple[TurnState | None, list[Violation]]:
    """``turn.json`` text -> the state, or located violations. Total: never raises on any ``str``."""
    lines = field_lines(text)
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        data = dict(items)
        if len(data) < len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    duplicates.append(key)
                seen.add(key)
        return data

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        message = f"turn.json is not valid JSON ({exc.msg} at column {exc.colno}); fix the syntax (no comments)."
        return None, [RULES.violation("ROUNDTABLE_STATE_JSON", message).at(file=file, line=exc.lineno)]
    except (ValueError, RecursionError) as exc:
        message = f"turn.json is not strict JSON ({_shown(str(exc))[:80]}); fix the value."
        return None, [RULES.violation("ROUNDTABLE_STATE_JSON", message).at(file=file)]
    found = [
        RULES.violation(
            "ROUNDTABLE_STATE_JSON", f"key {_shown(key)!r} appears more than once in turn.json; keep one."
        ).at(file=file, line=lines.get(key))
        for key in dict.fromkeys(duplicates)
    ]
    if not isinstance(data, dict):
        message = f"turn.json holds {type(data).__name__}, not an object; write one JSON object with the eight fields."
        return None, [*found, RULES.violation("ROUNDTABLE_STATE_SCHEMA", message).at(file=file, line=1)]
    unknown = [key for key in data if key not in FIELD_TYPES]
    for key in unknown[:_MAX_UNKNOWN_REPORTED]:
        message = f"turn.json has the unknown key {_shown(key)!r}, which moot ignores and drops when it next writes; remove it."
        found.append(RULES.violation("ROUNDTABLE_STATE_UNKNOWN_KEY", message).at(file=file, line=lines.get(key)))
    if len(unknown) > _MAX_UNKNOWN_REPORTED:
        message = f"turn.json has {len(unknown) - _MAX_UNKNOWN_REPORTED} more unknown keys; keep only the eight fields."
        found.append(RULES.violation("ROUNDTABLE_STATE_UNKNOWN_KEY", message).at(file=file))
    for key in unknown:
        del data[key]
    try:
        state = TurnState.model_validate(data)
    except ValidationError as exc:
        reported: set[str] = set()
        for error in exc.errors():
            key = str(error["loc"][0])
            if key in reported:
                continue
            reported.add(key)
            if error["type"] == "missing":
                message = f"turn.json lacks the field {key!r}; add it ({FIELD_TYPES[key]})."
            else:
                message = f"turn.json field {key!r} must be {FIELD_TYPES[key]}, not {_short(data[key])}; fix its value."
            found.append(RULES.violation("ROUNDTABLE_STATE_SCHEMA", message).at(file=file, line=lines.get(key)))
        return None, found
    return state, found


def _heading_part(text: str) -> str | None:
    text = text.strip()
    unclosed = text.rstrip("#")
    if unclosed != text and (not unclosed or unclosed[-1] in " \t"):  # an ATX closing sequence: "## Title ##"
        text = unclosed
    text = re.sub(r"^\d+[.)、]\s*", "", text.strip("*_ ").rstrip(":：").strip("*_ "))
    return _MINUTES_ALIASES.get(" ".join(text.split()).casefold())


def parse_minutes(text: str, file: str = MINUTES_FILE) -> tuple[Minutes, list[Violation]]:
    """``MINUTES.md`` -> its four parts (empty when missing; the protocol reports those). Total.

    A part runs from its heading to the next heading of the same or a higher level, so a moderator
    may use ``###`` sub-headings inside a part. Headings inside fenced code are text. The chain mark
    moot ends the file with is not part of the minutes.
    """
    text = split_mark(text)[0]
    parts: dict[str, list[str]] = {}
    found: list[Violation] = []
    current: str | None = None
    level = 0
    fenced = False
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.fullmatch(line)
        if heading is not None:
            part = _heading_part(heading.group(2))
            if part is not None:
                if part in parts:
                    message = f"MINUTES.md has a second heading for the same part at line {number}; merge the two."
                    found.append(RULES.violation("ROUNDTABLE_MINUTES", message).at(file=file, line=number))
                parts.setdefault(part, [])
                current, level = part, len(heading.group(1))
                continue
            if current is not None and len(heading.group(1)) <= level:
                current = None
                continue
        if current is not None:
            parts[current].append(raw)
    values = {part: "\n".join(parts.get(part, [])).strip() for part, _, _ in MINUTES_PARTS}
    return Minutes(**values), found


def _read_meeting(directory: Path) -> _Parsed:
    """Read and parse every file of a meeting directory. Total: problems become violations."""
    where = str(directory)
    parsed = _Parsed(directory=directory, record=None, violations=[])
    if directory.is_symlink():
        message = f"{where} is a symbolic link; point moot at the real meeting directory."
        parsed.violations.append(FILE_RULES.violation("FILE_SYMLINK", message).at(file=where))
        return parsed
    try:
        entries = sorted(directory.iterdir(), key=lambda entry: entry.name)
    except OSError as exc:
        message = f"cannot list {where}: {exc.strerror or type(exc).__name__}."
        parsed.violations.append(FILE_RULES.violation("FILE_UNREADABLE", message).at(file=where))
        return parsed
    found = parsed.violations
    speeches: list[tuple[int, str, Path]] = []
    for entry in entries:
        name = entry.name
        if name.startswith(".") or name in (TURN_FILE, AGENDA_FILE, MINUTES_FILE):
            continue  # hidden: moot's chain and temp files a killed write may leave behind
        if name.endswith(".md") and name[0] in "0123456789":
            speech_name, problems = parse_speech_name(name)
            found.extend(v.at(file=_shown(str(entry))) for v in problems)
            if speech_name is not None:
                speeches.append((*speech_name, entry))
            continue
        message = f"{_shown(name)} is not part of a roundtable meeting; move it out of {_shown(where)}."
        found.append(RULES.violation("ROUNDTABLE_STRAY_FILE", message).at(file=_shown(str(entry))))

    state, problems = _read_state(directory / TURN_FILE, parsed)
    found.extend(problems)
    agenda = _read_optional(directory / AGENDA_FILE, found)
    if agenda is None or not agenda.strip():
        missing = "missing" if agenda is None else "empty"
        message = f"{AGENDA_FILE} is {missing}; write the meeting's background, topic and roles into it."
        found.append(RULES.violation("ROUNDTABLE_AGENDA", message).at(file=str(directory / AGENDA_FILE)))
    minutes: Minutes | None = None
    parsed.minutes_text = _read_optional(directory / MINUTES_FILE, found)
    if parsed.minutes_text is not None:
        parsed.minutes_text = _unmarked(parsed, parsed.minutes_text)
        minutes, problems = parse_minutes(parsed.minutes_text, str(directory / MINUTES_FILE))
        found.extend(problems)
    readable = True
    bodies: list[Speech] = []
    for sequence, role, path in sorted(speeches, key=lambda item: (item[0], item[2].name)):
        text, problems = read_text(path)
        found.extend(problems)
        if text is None:
            readable = False
            continue
        bodies.append(Speech(sequence=sequence, role=role, body=_unmarked(parsed, text)))
        parsed.speech_files.append(path.name)
    if state is not None and readable:
        parsed.record = MeetingRecord(agenda=agenda, state=state, speeches=tuple(bodies), minutes=minutes)
    return parsed


def _unmarked(parsed: _Parsed, content: str) -> str:
    """A speech's (or the minutes') text, the chain mark moot ended its file with set aside in ``parsed``."""
    text, mark = split_mark(content)
    if mark is not None:
        parsed.marks.append(mark)
    return text


def _read_state(path: Path, parsed: _Parsed) -> tuple[TurnState | None, list[Violation]]:
    text, problems = read_text(path)
    if text is None:
        return None, problems
    parsed.field_lines = field_lines(text)
    return parse_turn_json(text, str(path))


def _read_optional(path: Path, found: list[Violation]) -> str | None:
    if not path.exists() and not path.is_symlink():
        return None
    text, problems = read_text(path)
    found.extend(problems)
    return text


def parse_meeting(directory: Path) -> tuple[MeetingRecord | None, list[Violation]]:
    """A meeting directory -> its record, or ``None`` with the violations that prevent reading it.

    Total: garbage ``turn.json``, files that are not UTF-8, symbolic links and stray files all come
    back as located violations (stray files as warnings).
    """
    parsed = _read_meeting(directory)
    return parsed.record, parsed.violations


# --- checking ----------------------------------------------------------------------------------


@dataclass
class _Replayed:
    parsed: _Parsed
    replay: Replay[MeetingState] | None
    violations: list[Violation]
    chain: ChainCheck = field(default_factory=ChainCheck)


def _replay(directory: Path) -> _Replayed:
    """Parse, replay and verify the chain; every violation located by file (and line)."""
    parsed = _read_meeting(directory)
    record = parsed.record
    if record is None:
        return _Replayed(parsed, None, parsed.violations)
    replay = replay_meeting(record.state, record.speeches, record.minutes, parsed.field_lines)
    # Chain rows number the speeches and then the minutes; replay numbers only the speeches.
    files = [*parsed.speech_files, *([MINUTES_FILE] if parsed.minutes_text is not None else [])]

    def locate(violation: Violation) -> Violation:
        if violation.file is not None:
            name = violation.file
        elif violation.turn is not None and 1 <= violation.turn <= len(files):
            name = files[violation.turn - 1]
        else:
            name = ""
        return violation.model_copy(update={"file": _shown(str(directory / name)) if name else str(directory)})

    chain = inspect_chain(directory, parsed.chain_texts, marks=parsed.marks)
    located = [locate(v) for v in replay.violations]
    located += [locate(v.model_copy(update={"file": None})) for v in chain.violations]
    return _Replayed(parsed, replay, [*parsed.violations, *located], chain)


def check(path: Path) -> CheckReport:
    """Replay a meeting directory (or a file inside one) and report every violation. Never raises."""
    try:
        directory = path.parent if path.is_file() and not path.is_symlink() else path
        replayed = _replay(directory)
    except OSError as exc:  # the directory changed under us, or a permission we could not foresee
        message = f"cannot read {path}: {exc.strerror or type(exc).__name__}; check it and run moot check again."
        return unreadable(path, [FILE_RULES.violation("FILE_UNREADABLE", message).at(file=str(path))], PROTOCOL)
    parsed, replay, violations = replayed.parsed, replayed.replay, replayed.violations
    if replay is None:
        if any(v.rule in FILE_RULES for v in violations if v.is_error):
            return unreadable(directory, violations, protocol=PROTOCOL)
        # Every file was read but turn.json is broken: an invalid record (exit 1), not an unreadable one.
        turns = len(parsed.speech_files)
        summary = Summary(protocol=PROTOCOL, turns=turns, next_speaker=None, detail={"status": "unknown"})
        return CheckReport(path=str(directory), protocol=PROTOCOL, violations=violations, summary=summary)
    errors = [v for v in violations if v.is_error]
    repairable = bool(errors) and all(v.rule in UNCOMMITTED_RULES for v in replayed.chain.blocking_in(violations))
    return replay_report(
        directory,
        PROTOCOL,
        Replay[object](state=replay.state, violations=[]),
        meeting_summary(replay.state),
        extra=violations,
        repairable=repairable,
    )


# --- writing -----------------------------------------------------------------------------------


def _load_for_write(directory: Path, *, allow_uncommitted: bool = False) -> tuple[_Parsed, MeetingState]:
    """The meeting's state, refusing to build on a record with errors; a chain a crash left short is completed."""
    replayed = _replay(directory)
    parsed, replay = replayed.parsed, replayed.replay
    blocking = replayed.chain.blocking_in(replayed.violations)
    errors = [v for v in blocking if not (allow_uncommitted and v.rule in UNCOMMITTED_RULES)]
    if replay is None or errors:
        raise ProtocolViolationError(errors or replayed.violations)
    if replayed.chain.repairable:
        repair_chain(directory, parsed.chain_texts, parsed.marks)
    return parsed, replay.state


def repair(directory: Path) -> bool:
    """Complete the chain of a meeting a crash left one write short (what ``moot resume`` does on opening it);
    True when it wrote. Anything else is left for ``moot check`` and the next writer to report."""
    parsed = _read_meeting(directory)
    if parsed.record is None:
        return False
    return repair_chain(directory, parsed.chain_texts, parsed.marks)


def _protocol(state: MeetingState) -> RoundtableProtocol:
    turn = state.turn
    return RoundtableProtocol(opening_state(turn.conference, turn.speaker_order, turn.max_rounds, ""))


def load_meeting(directory: Path) -> MeetingState:
    """The current state of a valid meeting; raises ProtocolViolationError listing what is wrong."""
    return _load_for_write(directory)[1]


def start_meeting(
    root: Path, name: str, agenda: str, speaker_order: Sequence[str], max_rounds: int, first_prompt: str
) -> Path:
    """Create ``root/.roundtable/{name}/`` with AGENDA.md and the opening turn.json; returns the directory.

    Writes ``.roundtable/GUIDE.md`` too when it is missing. The meeting is built in a hidden staging
    directory and renamed into place, so a crash leaves either no meeting or a whole one, never a
    directory that is neither new nor resumable.
    """
    directory = meeting_dir(root, name)
    state = opening_state(name, speaker_order, max_rounds, first_prompt)
    errors = [v for v in state_violations(state) if v.is_error]
    if errors:
        raise ProtocolViolationError(errors)
    for folder in (root / ROUNDTABLE_DIR, directory):
        if folder.is_symlink():
            raise FileExistsError(f"{folder} is a symbolic link; moot writes meetings only to real directories.")
    if directory.exists() and any(directory.iterdir()):
        raise FileExistsError(f"{directory} already exists; choose another meeting name or continue that meeting.")
    guide = root / ROUNDTABLE_DIR / GUIDE_FILE
    if not guide.exists():
        atomic_write_text(guide, GUIDE_TEXT)
    staging = root / ROUNDTABLE_DIR / f".new-meeting.{secrets.token_hex(8)}.tmp"
    staging.mkdir()  # not mkdtemp, which makes 0700: a meeting gets the mode any new directory would
    try:
        atomic_write_text(staging / AGENDA_FILE, render_agenda(name, agenda, speaker_order, max_rounds))
        atomic_write_text(staging / TURN_FILE, render_turn_json(state))
        record_chain(staging, [])
        try:
            os.rename(staging, directory)  # replaces an empty directory; refuses one that has filled since
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise FileExistsError(f"{directory} already exists; choose another meeting name.") from exc
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_directory(directory.parent)
    return directory


def _listing(directory: Path) -> list[str]:
    """The meeting's own files (hidden ones are moot's sidecars and temp files), sorted."""
    return sorted(name for name in os.listdir(directory) if not name.startswith("."))


def _stamp(directory: Path) -> tuple[object, ...] | None:
    """What any write to a meeting changes, read without parsing: its files (a speech or the minutes added, a
    file renamed in) and ``turn.json`` and the chain, each by size, time, inode and content hash (both are
    small). ``None`` when one cannot be read: the meeting is then read in full, which says why."""
    chain = chain_path(directory)
    try:
        return (
            _listing(directory),
            FileStamp.of(directory / TURN_FILE),
            FileStamp.of(chain) if chain.exists() else None,
        )
    except OSError:
        return None


class MeetingWriter:
    """A meeting open for speeches: read, checked and replayed once, then each speech validated against the
    state in memory and written (speech, then turn.json, then its chain row).

    Before each write the meeting's stamp is compared with the one this writer left; when someone else wrote
    the meeting in between, it is read and checked in full again first. A failed write, or a meeting that is
    not exactly as this writer's own writes left it, makes the next use read it in full.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._open()

    def _open(self) -> None:
        stamp = _stamp(self.directory)  # before the read: a write in between shows as a changed stamp
        parsed, self.state = _load_for_write(self.directory)
        assert parsed.record is not None  # _load_for_write refuses a meeting it cannot read
        self.speeches: tuple[Speech, ...] = parsed.record.speeches
        self._chain_texts = parsed.chain_texts
        self._mark = ChainMark.of(self._chain_texts)
        self._stamp = stamp

    def fresh(self) -> MeetingWriter:
        """This writer, after reading the meeting again if someone else wrote it since."""
        if self._stamp is None or _stamp(self.directory) != self._stamp:
            self._open()
        return self

    def commit_speech(self, speech: Speech, next_state: TurnState) -> MeetingState:
        """Step 3 of the guide: validate, write the speech file durably, then turn.json atomically.

        That order is what makes a crash repairable: a speech without its turn.json is detected and
        finished by :func:`finish_commit`; a turn.json without its speech can never exist.
        """
        self.fresh()
        state = self.state
        new_state, _ = _protocol(state).step(state, RoundtableTurn(speech=speech, next_state=next_state))
        name = speech_file_name(speech.sequence, speech.role)
        path = self.directory / name
        if path.exists() or path.is_symlink():
            raise ProtocolViolationError(
                [
                    RULES.violation(
                        "ROUNDTABLE_SEQUENCE", f"{_shown(str(path))} already exists; speeches are never overwritten."
                    )
                ]
            )
        listing = _listing(self.directory)
        turn_json = render_turn_json(next_state)
        mark = ChainMark.after(self._mark.turns, self._mark.head, [speech.body])
        self._stamp = None  # until the writes below are all done and checked
        atomic_write_text(path, with_mark(speech.body, mark))
        atomic_write_text(self.directory / TURN_FILE, turn_json)
        extend_chain(self.directory, self._chain_texts, [speech.body])
        self.state, self.speeches = new_state, (*self.speeches, speech)
        self._chain_texts, self._mark = [*self._chain_texts, speech.body], mark
        stamp = _stamp(self.directory)
        # Someone else's write between ours and the stamp would hide in it: keep it only for exactly our writes.
        ours = (
            _listing(self.directory) == sorted([*listing, name])
            and read_text(self.directory / TURN_FILE)[0] == turn_json
        )
        self._stamp = stamp if ours else None
        return new_state


def commit_speech(directory: Path, speech: Speech, next_state: TurnState) -> MeetingState:
    """Validate and write one speech (see :meth:`MeetingWriter.commit_speech`)."""
    return MeetingWriter(directory).commit_speech(speech, next_state)


def commit_reply(directory: Path, reply: RoundtableReply, language: Language = "en") -> MeetingState:
    """The current speaker's reply as the next speech and state."""
    state = load_meeting(directory)
    turn = turn_from_reply(state, reply, language)
    return commit_speech(directory, turn.speech, turn.next_state)


def write_minutes(directory: Path, minutes: Minutes, language: Language = "en") -> MeetingState:
    """Step 4: the moderator writes MINUTES.md (durably), then turn.json with status closed."""
    parsed, state = _load_for_write(directory)
    closing = RoundtableClosing(minutes=minutes, next_state=close_state(state.turn))
    new_state, _ = _protocol(state).step(state, closing)
    text = render_minutes(minutes, state.turn.conference, language)
    atomic_write_text(directory / MINUTES_FILE, with_mark(text, ChainMark.of([*parsed.chain_texts, text])))
    atomic_write_text(directory / TURN_FILE, render_turn_json(closing.next_state))
    extend_chain(directory, parsed.chain_texts, [text])
    return new_state


def finish_commit(directory: Path, *, prompt: str | None = None, consensus: bool = False) -> MeetingState:
    """Complete a commit a crash interrupted (what ``moot resume`` calls); a no-op when none is pending.

    ``prompt`` and ``consensus`` are the interrupted speaker's, if the caller still has its reply.
    """
    _, state = _load_for_write(directory, allow_uncommitted=True)  # completes the chain, too
    repaired = finish_state(state, prompt=prompt, consensus=consensus)
    if repaired is None:
        return state
    atomic_write_text(directory / TURN_FILE, render_turn_json(repaired))
    return load_meeting(directory)


def documents(directory: Path) -> list[tuple[str, str]]:
    """What ``moot show`` prints of a meeting, in reading order: the agenda, each speech, the minutes."""
    names = [AGENDA_FILE, *sorted(p.name for p in directory.glob("[0-9][0-9][0-9]_*.md")), MINUTES_FILE]
    shown = []
    for name in names:
        text, _ = read_text(directory / name)
        if text is not None:
            shown.append((name, split_mark(text)[0]))
    return shown


FORMAT = RecordFormat(check=check, documents=documents)

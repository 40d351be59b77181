"""The Socratic Duel debate artifact (``debates/{YYYY-MM-DD}-{slug}{suffix}.md``), read and written.

The layout is the one rp1's skill writes (see docs/formats.md): a title, four bold key lines, a
``## Metadata`` and a ``## Participants`` table, the turns in §TURN_MARKDOWN form, and a
``## Terminal Conclusion``. Reading is tolerant of CRLF, extra blank lines, trailing colons on labels,
a ``## Turns`` heading and an empty conclusion section, and reports every other deviation as a located
violation.

Writing (:class:`DuelTurns`, a :class:`~moot.core.turn_record.TurnRecord`): an accepted turn that leaves the
header as it was (the same Candidate Convergence) is appended, with the digest chain's head after it, in one
write and one fsync; a turn that changes the header, a participant who joins and the Terminal Conclusion (Status
changes) rewrite the record atomically, header re-rendered and every accepted turn's text kept byte for byte.

A turn's text, for the chain, runs from its ``---`` line to its last line that is neither blank, nor a
``---`` rule, nor moot's chain mark: the padding between turns is not part of a turn.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from moot.core.chain import ChainMark, inspect_chain, record_chain, repair_chain
from moot.core.files import (
    FILE_RULES,
    CheckReport,
    FileStamp,
    append_raw,
    atomic_write_text,
    read_text,
    replace_record,
    unreadable,
)
from moot.core.files import slugify as base_slugify
from moot.core.machine import Outcome, Rule, RuleBook, Summary
from moot.core.turn_record import Entry, Inspection, Reading, TurnRecord, TurnWriter
from moot.errors import ProtocolViolationError, RecordChangedError, Violation
from moot.plugin import RecordFormat
from moot.protocols.duel import PLUGIN as DUEL
from moot.protocols.duel.machine import (
    MAX_TURNS,
    OPEN_STATUS,
    RULES,
    Counterpoint,
    DuelConclusion,
    DuelConfig,
    DuelProtocol,
    DuelState,
    DuelTurn,
    OutcomeName,
    Participant,
    Support,
    UnresolvedItem,
    candidate_convergence,
    expected_status,
)

PROTOCOL = "duel"
TAMPER_RULES = frozenset({"PRIOR_TURN_MODIFIED", "PRIOR_TURN_REMOVED"})

FORMAT_RULES = RuleBook(
    [
        Rule("DUEL_HEADER", "The artifact starts with '# Socratic Duel: {topic}' and the four bold key lines."),
        Rule("DUEL_METADATA", "The ## Metadata table holds the seven rows, each with a valid value."),
        Rule("DUEL_PARTICIPANTS_TABLE", "The ## Participants table has one well-formed row per participant."),
        Rule("DUEL_TURN_STRUCTURE", "Each turn follows the §TURN_MARKDOWN layout."),
        Rule("DUEL_UNRESOLVED_MARKER", "Every unresolved item ends with (blocking) or (non-blocking)."),
        Rule("DUEL_STATUS_MISMATCH", "Status and Candidate Convergence agree with the turns and the conclusion."),
    ]
)

KEY_LINES = ("Source Document", "Source Link", "Status", "Created")
METADATA_ROWS = ("Duel ID", "Source Path", "Topic", "Topic Slug", "Max Turns", "Status", "Candidate Convergence")
PARTICIPANT_COLUMNS = ("Participant", "Harness", "Model", "Joined")
CONCLUSION_KEYS = ("Outcome", "Closed At", "Candidate Convergence", "Reason")
SECTIONS = ("Position", "Counterpoints", "Agreements", "Novel Argument", "Unresolved Items", "Stance Revision Support")
_SECTION_NAMES = {section.casefold(): section for section in SECTIONS}

# Status values rp1 agents use while a duel is open; a closed duel shows its outcome.
_OPEN_SYNONYMS = frozenset(
    {"OPEN", "ACTIVE", "DEBATING", "WAITING", "WAITING_FOR_PARTICIPANT", "PREPARING", "CLOSING", "IN_PROGRESS"}
    | {"RUNNING", "PENDING"}
)

_TITLE = re.compile(r"^#\s+Socratic Duel:[ \t]*(?P<topic>.*?)\s*$")
_H2 = re.compile(r"^##\s+(?P<name>.*?)\s*#*\s*$")
_TURN_HEADING = re.compile(r"^#{2,6}\s+Turn\b", re.IGNORECASE)
_CONCLUSION_HEADING = re.compile(r"^##\s+Terminal Conclusion\s*#*\s*$", re.IGNORECASE)
_CONCLUSION = re.compile(_CONCLUSION_HEADING.pattern, re.IGNORECASE | re.MULTILINE)  # found anywhere in a record
_RULE_LINE = re.compile(r"^\s*-{3,}\s*$")
_KEY_LINE = re.compile(r"^\*\*\s*(?P<key>[^*]+?)\s*:?\s*\*\*\s*:?[ \t]*(?P<value>.*?)\s*$")
_HEADING = re.compile(
    r"^##\s+Turn\s+(?P<number>\d{1,9})\s*(?P<sep1>—|–|-{1,2})\s*(?P<who>.+?)\s*(?P<sep2>—|–|-{1,2})\s*"
    r"(?P<stance>[A-Za-z_]+)\s*$"
)

_WHO = re.compile(r"^(?P<name>[^()]+?)\s*\(\s*(?P<harness>[^()/]+?)\s*/\s*(?P<model>[^()]+?)\s*\)$")
_BULLET = re.compile(r"^(?P<indent>\s*)[-*+](?:\s+(?P<text>.*?))?\s*$")
_FIELD = re.compile(r"^\**(?P<key>addresses|claim|support)\**\s*:\**[ \t]*(?P<value>.*?)\s*$", re.IGNORECASE)
_SUPPORT_LINE = re.compile(r"^\s*\**support\**\s*:\**[ \t]*(?P<value>.*?)\s*$", re.IGNORECASE)
_MARKER = re.compile(r"^(?P<text>.*?)\s*[(\[]\s*(?P<marker>non[-\s]?blocking|blocking)\s*[)\]]\s*\.?$", re.IGNORECASE)
_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_SUFFIX = re.compile(r"^[A-Za-z0-9-]*$")
T = TypeVar("T")
_TAIL_BYTES = 64 * 1024  # where an appended conclusion of an unreadable record is looked for


class DuelRecord(BaseModel):
    """What a debate artifact says. Status and Candidate Convergence are derived, so not stored."""

    model_config = ConfigDict(frozen=True)

    config: DuelConfig
    participants: list[Participant]
    turns: list[DuelTurn] = []
    conclusion: DuelConclusion | None = None


@dataclass(frozen=True)
class Located:
    value: str
    line: int


@dataclass(frozen=True)
class DuelDocument:
    """A parsed artifact plus what writers and the chain need: each turn's exact text and lines."""

    record: DuelRecord
    turn_texts: list[str]
    turn_lines: list[int]  # first line of each turn's text (its ``---``)
    heading_lines: list[int]  # line of each ``## Turn`` heading, where turn violations point
    conclusion_text: str = ""  # the conclusion section as written ('' when absent)
    conclusion_line: int | None = None
    statuses: list[Located] = field(default_factory=list)  # header and metadata Status
    convergence: Located | None = None  # metadata Candidate Convergence
    chain_mark: ChainMark | None = None  # the chain head moot keeps inside the record (the latest in it)
    marks: list[ChainMark] = field(default_factory=list)  # every chain head in the record, in order


# --- small text helpers -----------------------------------------------------------------------


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "`":
        return value[1:-1]
    return value


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", body)]


def _cell(value: str) -> str:
    return value.replace("|", "\\|")


def _paragraph(lines: Sequence[str]) -> str:
    return "\n".join(line.rstrip() for line in lines).strip("\n").strip()


def _flag(text: str) -> bool | None:
    word = _unquote(text).strip().casefold()
    return {"true": True, "yes": True, "false": False, "no": False}.get(word)


def _flag_text(value: bool | None) -> str:
    return "unknown" if value is None else str(value).lower()


# --- parsing ----------------------------------------------------------------------------------


class _Parser:
    """One pass over one artifact. Collects located violations; never raises on any input."""

    def __init__(self, text: str, file: str) -> None:
        self.file = file
        self.raw = text.split("\n")
        self.raw = [line + "\n" for line in self.raw[:-1]] + [self.raw[-1]]
        self.lines = [line.rstrip("\n").rstrip("\r") for line in self.raw]
        self.found: list[Violation] = []
        self.marks: dict[int, ChainMark] = {}  # line index -> the chain mark there (header, after turns)

    def report(self, book: RuleBook, rule: str, message: str, index: int, turn: int | None = None) -> None:
        self.found.append(book.violation(rule, message, turn=turn).at(file=self.file, line=index + 1))

    def blank(self, index: int) -> bool:
        return not self.lines[index].strip()

    def padding(self, index: int) -> bool:
        """A blank line, a ``---`` rule or a chain mark (remembered): what ends a turn but is not its text."""
        line = self.lines[index]
        if not line.strip() or _RULE_LINE.match(line):
            return True
        mark = ChainMark.parse(line)
        if mark is not None:
            self.marks[index] = mark
        return mark is not None

    def parse(self) -> DuelDocument | None:
        first = next((i for i, line in enumerate(self.lines) if line.strip()), None)
        title = _TITLE.match(self.lines[first]) if first is not None else None
        if first is None or title is None:
            line = 0 if first is None else first
            self.report(FORMAT_RULES, "DUEL_HEADER", "the first line must be '# Socratic Duel: {topic}'; add it.", line)
            return None
        starts, conclusions = self._boundaries(first + 1)
        cuts = sorted({*starts, *conclusions, len(self.lines)})
        if not title.group("topic"):
            self.report(
                FORMAT_RULES, "DUEL_HEADER", "the title names no topic; write '# Socratic Duel: {topic}'.", first
            )
        header_end = cuts[0]
        while header_end > first + 1 and (self.blank(header_end - 1) or _RULE_LINE.match(self.lines[header_end - 1])):
            header_end -= 1  # a '---' before the conclusion of a duel without turns is padding
        header = _Header(self, first, title.group("topic"), range(first + 1, header_end))
        config, participants = header.parse()
        source = config.source_path

        turns: list[DuelTurn] = []
        texts: list[str] = []
        lines: list[int] = []
        headings: list[int] = []
        for start in starts:
            end = cuts[bisect.bisect_right(cuts, start)]
            if conclusions and start > conclusions[0]:
                self.report(
                    FORMAT_RULES,
                    "DUEL_TURN_STRUCTURE",
                    "a turn follows the Terminal Conclusion; turns go before it and nothing follows a conclusion.",
                    start,
                )
            # A turn past the limit is read for its place only (its heading): it must go whatever it says.
            past = len(turns) >= config.max_turns
            turn, heading, text_end = _TurnParser(self, start, end, source, len(turns) + 1).parse(place_only=past)
            turns.append(turn)
            texts.append("".join(self.raw[start:text_end]).rstrip())
            lines.append(start + 1)
            headings.append(heading + 1)

        conclusion, conclusion_text, conclusion_line = None, "", None
        if conclusions:
            begin = conclusions[0]
            end = cuts[bisect.bisect_right(cuts, begin)]
            conclusion = self._conclusion(begin, end)
            conclusion_text = "".join(self.raw[begin:end]).rstrip()
            conclusion_line = begin + 1
            for extra in conclusions[1:]:
                self.report(RULES, "DUEL_CONCLUSION_FIELDS", "a second Terminal Conclusion section; keep one.", extra)
        record = DuelRecord(config=config, participants=participants, turns=turns, conclusion=conclusion)
        return DuelDocument(
            record=record,
            turn_texts=texts,
            turn_lines=lines,
            heading_lines=headings,
            conclusion_text=conclusion_text,
            conclusion_line=conclusion_line,
            statuses=header.statuses,
            convergence=header.convergence,
            chain_mark=self.marks[max(self.marks)] if self.marks else None,
            marks=[self.marks[index] for index in sorted(self.marks)],
        )

    def _boundaries(self, begin: int) -> tuple[list[int], list[int]]:
        """Where each turn's text starts (its ``---`` line, else its heading) and the conclusion headings."""
        starts: list[int] = []
        conclusions: list[int] = []
        for index in range(begin, len(self.lines)):
            line = self.lines[index]
            if not line.startswith("#"):  # both headings do; most lines need no regex
                continue
            if _CONCLUSION_HEADING.match(line):
                conclusions.append(index)
            elif _TURN_HEADING.match(line):
                back = index - 1
                while back >= begin and self.blank(back):
                    back -= 1
                ruled = back >= begin and _RULE_LINE.match(self.lines[back]) is not None
                if not ruled:
                    self.report(
                        FORMAT_RULES,
                        "DUEL_TURN_STRUCTURE",
                        "a turn heading must follow a '---' line and a blank line; add them.",
                        index,
                        turn=len(starts) + 1,
                    )
                starts.append(back if ruled else index)
        return starts, conclusions

    def _conclusion(self, begin: int, end: int) -> DuelConclusion | None:
        values: dict[str, str] = {}
        body: list[str] = []
        for index in range(begin + 1, end):
            match = _KEY_LINE.match(self.lines[index])
            key = next((k for k in CONCLUSION_KEYS if match and match.group("key").casefold() == k.casefold()), None)
            if match is None or key is None:
                body.append(self.lines[index])
                continue
            if key in values:
                self.report(RULES, "DUEL_CONCLUSION_FIELDS", f"**{key}** appears twice; keep one.", index)
            values[key] = _unquote(match.group("value"))
        while body and (not body[-1].strip() or _RULE_LINE.match(body[-1])):
            body.pop()
        if not any(values.get(k) for k in CONCLUSION_KEYS):
            return None  # an open duel's empty conclusion section (template text is allowed there)
        convergence = values.get("Candidate Convergence", "")
        return DuelConclusion(
            outcome=values.get("Outcome", ""),
            closed_at=values.get("Closed At", ""),
            candidate_convergence=_flag(convergence),
            reason=values.get("Reason", ""),
            summary=_paragraph(body),
        )


class _Header:
    """Title, key lines, ``## Metadata``, ``## Participants`` (and rp1's optional ``## Turns``)."""

    def __init__(self, parser: _Parser, title_index: int, topic: str, lines: range) -> None:
        self.p = parser
        self.title_index = title_index
        self.topic = topic
        self.region = lines
        self.keys: dict[str, Located] = {}
        self.meta: dict[str, Located] = {}
        self.statuses: list[Located] = []
        self.convergence: Located | None = None

    def parse(self) -> tuple[DuelConfig, list[Participant]]:
        sections: dict[str, list[int]] = {"": []}
        current = ""
        for index in self.region:
            heading = _H2.match(self.p.lines[index])
            if heading:
                current = heading.group("name").strip().casefold()
                if current in sections or current not in {"metadata", "participants", "turns"}:
                    self.p.report(
                        FORMAT_RULES,
                        "DUEL_HEADER",
                        f"unexpected section '## {heading.group('name')}' before the turns; remove it.",
                        index,
                    )
                    current = "?"
                sections[current] = [index]
                continue
            sections.setdefault(current, []).append(index)
        self._key_lines(sections[""])
        self._metadata(sections.get("metadata"))
        participants = self._participants(sections.get("participants"))
        for index in sections.get("turns", [])[1:]:
            if not self.p.blank(index):
                self.p.report(FORMAT_RULES, "DUEL_HEADER", "unexpected text under '## Turns'; remove it.", index)
        return self._config(), participants

    def _key_lines(self, indexes: list[int]) -> None:
        for index in indexes:
            if self.p.blank(index):
                continue
            mark = ChainMark.parse(self.p.lines[index])
            if mark is not None and not self.p.marks:
                self.p.marks[index] = mark
                continue
            match = _KEY_LINE.match(self.p.lines[index])
            key = next((k for k in KEY_LINES if match and match.group("key").casefold() == k.casefold()), None)
            if match is None or key is None:
                self.p.report(
                    FORMAT_RULES,
                    "DUEL_HEADER",
                    "unexpected text between the title and '## Metadata'; remove it.",
                    index,
                )
                continue
            if key in self.keys:
                self.p.report(FORMAT_RULES, "DUEL_HEADER", f"**{key}** appears twice; keep one.", index)
            self.keys[key] = Located(_unquote(match.group("value")), index)
        for key in KEY_LINES:
            if not self.keys.get(key, Located("", 0)).value:
                self.p.report(
                    FORMAT_RULES, "DUEL_HEADER", f"the **{key}** line is missing or empty; add it.", self.title_index
                )
        if "Status" in self.keys:
            self.statuses.append(self.keys["Status"])

    def _table(self, indexes: list[int] | None, rule: str, name: str, columns: Sequence[str]) -> list[Located]:
        """The data rows of the section's table (cells joined by NUL in ``value``), checked for shape."""
        if indexes is None:
            self.p.report(FORMAT_RULES, rule, f"the '## {name}' section is missing; add it.", self.title_index)
            return []
        rows = [i for i in indexes[1:] if not self.p.blank(i)]
        for index in rows:
            if not self.p.lines[index].lstrip().startswith("|"):
                self.p.report(FORMAT_RULES, rule, f"unexpected text in '## {name}'; keep only the table.", index)
        table = [i for i in rows if self.p.lines[i].lstrip().startswith("|")]
        header_ok = len(table) >= 2 and [c.casefold() for c in _cells(self.p.lines[table[0]])] == [
            c.casefold() for c in columns
        ]
        if not header_ok or not all(_SEPARATOR_CELL.match(c) for c in _cells(self.p.lines[table[1]])):
            line = table[0] if table else indexes[0]
            self.p.report(
                FORMAT_RULES, rule, f"the '## {name}' table must start with '| {' | '.join(columns)} |'.", line
            )
            return []
        found: list[Located] = []
        for index in table[2:]:
            cells = _cells(self.p.lines[index])
            if len(cells) != len(columns):
                self.p.report(
                    FORMAT_RULES, rule, f"this row has {len(cells)} cells, not {len(columns)}; fix the row.", index
                )
                continue
            found.append(Located("\x00".join(cells), index))
        return found

    def _metadata(self, indexes: list[int] | None) -> None:
        for row in self._table(indexes, "DUEL_METADATA", "Metadata", ("Field", "Value")):
            label, value = row.value.split("\x00")
            key = next((k for k in METADATA_ROWS if k.casefold() == label.casefold()), None)
            if key is None:
                self.p.report(FORMAT_RULES, "DUEL_METADATA", f"unknown metadata row {label!r}; remove it.", row.line)
            elif key in self.meta:
                self.p.report(FORMAT_RULES, "DUEL_METADATA", f"metadata row {key!r} appears twice; keep one.", row.line)
            else:
                self.meta[key] = Located(_unquote(value), row.line)
        if indexes is None:
            return
        for key in METADATA_ROWS:
            if not self.meta.get(key, Located("", 0)).value:
                line = self.meta[key].line if key in self.meta else indexes[0]
                self.p.report(
                    FORMAT_RULES, "DUEL_METADATA", f"metadata row {key!r} is missing or empty; fill it.", line
                )
        if "Status" in self.meta:
            self.statuses.append(self.meta["Status"])
        self.convergence = self.meta.get("Candidate Convergence")
        if self.convergence is not None and self.convergence.value and _flag(self.convergence.value) is None:
            self.p.report(
                FORMAT_RULES, "DUEL_METADATA", "Candidate Convergence must be true or false.", self.convergence.line
            )

    def _participants(self, indexes: list[int] | None) -> list[Participant]:
        participants: list[Participant] = []
        for row in self._table(indexes, "DUEL_PARTICIPANTS_TABLE", "Participants", PARTICIPANT_COLUMNS):
            name, harness, model, joined = (_unquote(c) for c in row.value.split("\x00"))
            if not (name and harness and model):
                self.p.report(
                    FORMAT_RULES,
                    "DUEL_PARTICIPANTS_TABLE",
                    "a participant row needs a name, a harness and a model; fill them.",
                    row.line,
                )
            elif any(p.name == name for p in participants):
                self.p.report(
                    FORMAT_RULES, "DUEL_PARTICIPANTS_TABLE", f"{name} is listed twice; keep one row.", row.line
                )
            else:
                if len(participants) == 2:
                    self.p.report(
                        RULES, "DUEL_PARTICIPANTS", f"{name} is a third participant; a duel has two.", row.line
                    )
                participants.append(Participant(name=name, harness=harness, model=model, joined=joined))
        return participants

    def _config(self) -> DuelConfig:
        def meta(key: str) -> str:
            return self.meta[key].value if key in self.meta else ""

        source = self.keys.get("Source Document", Located("", 0)).value
        if meta("Source Path") and source and meta("Source Path") != source:
            self.p.report(
                FORMAT_RULES,
                "DUEL_METADATA",
                f"Source Path {meta('Source Path')!r} differs from **Source Document** {source!r}; make them equal.",
                self.meta["Source Path"].line,
            )
        if meta("Topic") and meta("Topic") != self.topic:
            self.p.report(
                FORMAT_RULES,
                "DUEL_METADATA",
                f"Topic {meta('Topic')!r} differs from the title's topic {self.topic!r}; make them equal.",
                self.meta["Topic"].line,
            )
        slug = meta("Topic Slug")
        if slug and not _SLUG.match(slug):
            self.p.report(
                FORMAT_RULES,
                "DUEL_METADATA",
                f"Topic Slug {slug!r} is not a safe slug; use lowercase letters, digits and single hyphens.",
                self.meta["Topic Slug"].line,
            )
        max_turns = MAX_TURNS
        if meta("Max Turns"):
            text = meta("Max Turns")
            if text.isascii() and text.isdigit() and len(text) <= 9 and 1 <= int(text) <= MAX_TURNS:
                max_turns = int(text)
            else:
                self.p.report(
                    FORMAT_RULES,
                    "DUEL_METADATA",
                    f"Max Turns {text!r} is not a whole number from 1 to {MAX_TURNS}; write one ({MAX_TURNS} is the "
                    "default and the seed's limit).",
                    self.meta["Max Turns"].line,
                )
        return DuelConfig(
            duel_id=meta("Duel ID"),
            source_path=meta("Source Path") or source,
            topic=self.topic,
            topic_slug=slug or slugify(self.topic),
            max_turns=max_turns,
            created=self.keys.get("Created", Located("", 0)).value,
        )


class _TurnParser:
    """One turn block: ``---``, the heading, then the bold-labelled sections in any order."""

    def __init__(self, parser: _Parser, start: int, end: int, source: str, position: int) -> None:
        self.p = parser
        self.start = start
        self.end = end
        self.source = source
        self.position = position

    def problem(self, message: str, index: int, rule: str = "DUEL_TURN_STRUCTURE") -> None:
        self.p.report(FORMAT_RULES, rule, message, index, turn=self.position)

    def parse(self, *, place_only: bool = False) -> tuple[DuelTurn, int, int]:
        """(turn, heading index, end of the turn's text: its last line that is not padding, plus one); with
        ``place_only`` the turn has its heading's fields and no sections."""
        lines = self.p.lines
        heading = next(i for i in range(self.start, self.end) if _TURN_HEADING.match(lines[i]))
        text_end = self.end
        while text_end > heading + 1 and self.p.padding(text_end - 1):
            text_end -= 1
        identity = self._heading(heading)
        if place_only:
            number, participant, harness, model, stance = identity
            skeleton = DuelTurn(
                number=number, participant=participant, harness=harness, model=model, stance=stance, position="",
                novel_argument="",
            )  # fmt: skip
            return skeleton, heading, text_end
        sections: dict[str, list[str]] = {}
        first_line: dict[str, int] = {}  # index of each section's first collected line, to locate its items
        current: str | None = None
        for index in range(heading + 1, text_end):
            line = lines[index]
            label = _KEY_LINE.match(line) if line.startswith("**") else None
            known = _SECTION_NAMES.get(label.group("key").casefold()) if label else None
            if label and known:
                if known in sections:
                    self.problem(f"the **{known}** section appears twice; merge them.", index)
                current = known
                sections[current] = [label.group("value")] if label.group("value") else []
                first_line[current] = index if label.group("value") else index + 1
            elif label and not label.group("value"):
                self.problem(f"unknown section **{label.group('key')}**; use the §TURN_MARKDOWN labels.", index)
                current = None
            elif current is None:
                if line.strip():
                    self.problem("text outside any section; put it under one of the bold section labels.", index)
            else:
                sections[current].append(line)
        novel, novel_support = self._novel(sections.get("Novel Argument", []), heading)
        turn = DuelTurn(
            number=identity[0],
            participant=identity[1],
            harness=identity[2],
            model=identity[3],
            stance=identity[4],
            position=_paragraph(sections.get("Position", [])),
            counterpoints=self._counterpoints(
                sections.get("Counterpoints", []), first_line.get("Counterpoints", heading)
            ),
            agreements=[text for text, _ in _items(sections.get("Agreements", []))],
            novel_argument=novel,
            novel_support=novel_support,
            unresolved=self._unresolved(
                sections.get("Unresolved Items", []), first_line.get("Unresolved Items", heading)
            ),
            stance_revision_support=[text for text, _ in _items(sections.get("Stance Revision Support", []))],
        )
        return turn, heading, text_end

    def _heading(self, index: int) -> tuple[int, str, str, str, str]:
        line = self.p.lines[index]
        match = _HEADING.match(line)
        who = _WHO.match(match.group("who")) if match else None
        if match is None or who is None:
            self.problem(
                "the turn heading must read '## Turn {N} — {Participant} ({Harness} / {Model}) — {STANCE}'.", index
            )
            number = re.search(r"Turn\s+(\d{1,9})\b", line, re.IGNORECASE)
            return (int(number.group(1)) if number else 0), "", "", "", ""
        if match.group("sep1") != "—" or match.group("sep2") != "—":
            self.problem("separate the turn heading's parts with em dashes (—, U+2014).", index)
        return (
            int(match.group("number")),
            who.group("name"),
            who.group("harness"),
            who.group("model"),
            match.group("stance"),
        )

    def _support(self, texts: Iterable[str]) -> list[Support]:
        return [Support.of(text, self.source) for text in texts]

    def _novel(self, lines: list[str], heading: int) -> tuple[str, list[Support]]:
        split = next((i for i, line in enumerate(lines) if _SUPPORT_LINE.match(line)), len(lines))
        support_lines = lines[split + 1 :]
        if split < len(lines):
            inline = _SUPPORT_LINE.match(lines[split])
            if inline and inline.group("value"):
                support_lines = [f"- {inline.group('value')}", *support_lines]
        return _paragraph(lines[:split]), self._support(text for text, _ in _items(support_lines))

    def _unresolved(self, lines: list[str], first: int) -> list[UnresolvedItem]:
        """``first`` is the index of ``lines[0]`` in the document."""
        items: list[UnresolvedItem] = []
        for text, offset in _items(lines):
            marked = _MARKER.match(text)
            if marked is None:
                self.problem(
                    f"unresolved item {text!r} does not end with (blocking) or (non-blocking); add one.",
                    first + offset - 1,
                    rule="DUEL_UNRESOLVED_MARKER",
                )
                items.append(UnresolvedItem(text=text, blocking=True))
                continue
            blocking = not marked.group("marker").casefold().startswith("non")
            items.append(UnresolvedItem(text=marked.group("text"), blocking=blocking))
        return items

    def _counterpoints(self, lines: list[str], first: int) -> list[Counterpoint]:
        """``first`` is the index of ``lines[0]`` in the document. Each field and support item collects its
        parts, joined once at the end (see :func:`_joined`)."""
        points: list[dict[str, list[str]]] = []
        supports: list[list[list[str]]] = []
        top: int | None = None
        key = ""
        for offset, line in enumerate(lines):
            if not line.strip():
                continue
            bullet = _BULLET.match(line)
            indent = len(bullet.group("indent")) if bullet else 0
            if bullet and (top is None or indent <= top + 1):
                top = indent if top is None else top
                points.append({"addresses": [], "claim": []})
                supports.append([])
                key, content = "claim", bullet.group("text") or ""
            elif not points:
                self.problem("write each counterpoint as a '- Addresses: ...' list item.", first + offset)
                continue
            elif bullet:
                if key != "support":
                    self.problem("a nested list item in a counterpoint must follow 'Support:'.", first + offset)
                key = "support"
                supports[-1].append([bullet.group("text") or ""])
                continue
            else:
                content = line.strip()
            named = _FIELD.match(content)
            if named:
                key, content = named.group("key").casefold(), named.group("value")
                if key == "support":
                    if content:
                        supports[-1].append([content])
                    continue
            if key == "support":
                if supports[-1]:
                    supports[-1][-1].append(content)
                else:
                    supports[-1].append([content])
            else:
                points[-1][key].append(content)
        return [
            Counterpoint(
                addresses=_joined(p["addresses"]),
                claim=_joined(p["claim"]),
                support=self._support(_joined(item) for item in s),
            )
            for p, s in zip(points, supports, strict=True)
        ]


def _items(lines: Sequence[str]) -> list[tuple[str, int]]:
    """List items (``-``, ``*`` or ``+``) with their offset + 1; other lines continue the last item."""
    items: list[tuple[list[str], int]] = []  # each item's parts, joined once: an item of many lines stays linear
    for offset, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        bullet = _BULLET.match(line)
        if bullet:
            items.append(([(bullet.group("text") or "").strip()], offset))
        elif items:
            items[-1][0].append(stripped)
        else:
            items.append(([stripped], offset))
    return [(_joined(parts), at) for parts, at in items]


def _joined(parts: Iterable[str]) -> str:
    """Stripped parts of one item or field, joined by single spaces (empty ones dropped)."""
    return " ".join(part for part in parts if part)


def parse_document(text: str, file: str = "<string>") -> tuple[DuelDocument | None, list[Violation]]:
    """The artifact with each turn's exact text and lines, or ``None`` when it is not a duel at all."""
    parser = _Parser(text.removeprefix("\ufeff"), file)
    try:
        document = parser.parse()
    except (ValidationError, ValueError, IndexError) as exc:  # a defect, but parsing must stay total
        parser.report(FORMAT_RULES, "DUEL_HEADER", f"the artifact could not be read ({type(exc).__name__}).", 0)
        return None, parser.found
    return document, parser.found


def parse(text: str, file: str = "<string>") -> tuple[DuelRecord | None, list[Violation]]:
    """The record an artifact holds, or ``None``; plus every structural violation, located."""
    document, found = parse_document(text, file)
    return (document.record if document else None), found


# --- rendering --------------------------------------------------------------------------------


def render_turn(turn: DuelTurn) -> str:
    """One turn in §TURN_MARKDOWN form, from its ``---`` line to a final newline."""
    out = [
        "---",
        "",
        f"## Turn {turn.number} — {turn.participant} ({turn.harness} / {turn.model}) — {turn.stance}",
        "",
        "**Position**",
        turn.position,
        "",
        "**Counterpoints**",
    ]
    for point in turn.counterpoints:
        out += [f"- Addresses: {point.addresses}", f"  Claim: {point.claim}", "  Support:"]
        out += [f"    - {s.text}" for s in point.support]
    out += ["", "**Agreements**", *(f"- {a}" for a in turn.agreements)]
    out += [
        "",
        "**Novel Argument**",
        turn.novel_argument,
        "",
        "Support:",
        *(f"    - {s.text}" for s in turn.novel_support),
    ]
    out += ["", "**Unresolved Items**"]
    out += [f"- {u.text} ({'blocking' if u.blocking else 'non-blocking'})" for u in turn.unresolved]
    out += ["", "**Stance Revision Support**", *(f"- {s}" for s in turn.stance_revision_support)]
    return "\n".join(out) + "\n"


def _source_link(source: str) -> str:
    name = re.split(r"[\\/]", source)[-1] or source
    target = source if re.fullmatch(r"[^\s()<>]+", source) else f"<{source}>"
    return f"[{name}]({target})"


def render_header(record: DuelRecord, mark: ChainMark | None = None) -> str:
    """Title, key lines and both tables, with Status and Candidate Convergence derived from the record;
    ``mark`` (the digest chain's head) goes after the key lines."""
    config = record.config
    status = expected_status(record.conclusion)
    converging = _flag_text(candidate_convergence(record.turns))
    rows = [
        ("Duel ID", f"`{config.duel_id}`"),
        ("Source Path", f"`{config.source_path}`"),
        ("Topic", config.topic),
        ("Topic Slug", f"`{config.topic_slug}`"),
        ("Max Turns", str(config.max_turns)),
        ("Status", status),
        ("Candidate Convergence", converging),
    ]
    out = [
        f"# Socratic Duel: {config.topic}",
        "",
        f"**Source Document**: `{config.source_path}`",
        f"**Source Link**: {_source_link(config.source_path)}",
        f"**Status**: {status}",
        f"**Created**: {config.created}",
        *([mark.line()] if mark is not None else []),
        "",
        "## Metadata",
        "",
        "| Field | Value |",
        "|-------|-------|",
        *(f"| {label} | {_cell(value)} |" for label, value in rows),
        "",
        "## Participants",
        "",
        "| Participant | Harness | Model | Joined |",
        "|-------------|---------|-------|--------|",
        *(
            f"| {_cell(p.name)} | {_cell(p.harness)} | {_cell(p.model)} | {_cell(p.joined)} |"
            for p in record.participants
        ),
    ]
    return "\n".join(out) + "\n"


def render_conclusion(conclusion: DuelConclusion) -> str:
    return (
        "## Terminal Conclusion\n\n"
        f"**Outcome**: {conclusion.outcome}\n"
        f"**Closed At**: {conclusion.closed_at}\n"
        f"**Candidate Convergence**: {_flag_text(conclusion.candidate_convergence)}\n"
        f"**Reason**: {conclusion.reason}\n\n"
        f"{conclusion.summary}\n"
    )


def _assemble(parts: Iterable[str]) -> str:
    """Header, turns and conclusion, one blank line apart (the padding is not part of any turn)."""
    return "\n\n".join(part.rstrip() for part in parts if part.strip()) + "\n"


def render(record: DuelRecord) -> str:
    conclusion = [render_conclusion(record.conclusion)] if record.conclusion else []
    return _assemble([render_header(record), *(render_turn(t) for t in record.turns), *conclusion])


# --- paths ------------------------------------------------------------------------------------


def slugify(topic: str, max_length: int = 60) -> str:
    """A path-safe ASCII slug as rp1 writes them: lowercase letters, digits and single hyphens."""
    return base_slugify(topic, "debate", ascii_only=True, max_bytes=max_length)


def debate_path(root: Path, date: dt.date | str, topic_slug: str, suffix: str = "") -> Path:
    """``root/debates/{YYYY-MM-DD}-{slug}{suffix}.md``; refuses anything that could leave ``debates/``."""
    day = date.isoformat() if isinstance(date, dt.date) else date
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        raise ValueError(f"date {day!r} is not YYYY-MM-DD; pass a datetime.date")
    if not _SLUG.match(topic_slug):
        raise ValueError(f"topic slug {topic_slug!r} is not safe; build it with slugify(topic)")
    if not _SUFFIX.match(suffix):
        raise ValueError(f"suffix {suffix!r} may hold only letters, digits and hyphens")
    return root / DUEL.folder / f"{day}-{topic_slug}{suffix}.md"


# --- checking ---------------------------------------------------------------------------------


def _status_agrees(value: str, expected: str) -> bool:
    word = re.sub(r"[\s-]+", "_", _unquote(value).strip()).upper()
    if expected == OPEN_STATUS:
        return word in _OPEN_SYNONYMS
    if expected == OutcomeName.INVALIDATED.value:
        return word in {expected, "FAILED"}
    return word in {expected, "COMPLETED", "CLOSED"}


def _status_violations(document: DuelDocument, file: str) -> list[Violation]:
    record = document.record
    expected = expected_status(record.conclusion)
    found: list[Violation] = []
    for status in document.statuses:
        if status.value and not _status_agrees(status.value, expected):
            found.append(
                FORMAT_RULES.violation(
                    "DUEL_STATUS_MISMATCH",
                    f"Status is {status.value!r} but the record is {expected}; write {expected}.",
                ).at(file=file, line=status.line + 1)
            )
    converging = candidate_convergence(record.turns)
    written = _flag(document.convergence.value) if document.convergence else None
    if document.convergence is not None and written is not None and written != converging:
        found.append(
            FORMAT_RULES.violation(
                "DUEL_STATUS_MISMATCH",
                f"Candidate Convergence is {_flag_text(written)} but the turns give {_flag_text(converging)}; "
                f"write {_flag_text(converging)}.",
            ).at(file=file, line=document.convergence.line + 1)
        )
    return found


@dataclass
class DuelEntry(Entry[DuelTurn]):
    """A turn as the record holds it, with the line of its ``## Turn`` heading, where its violations point."""

    heading: int


class DuelTurns(TurnRecord[DuelDocument, DuelTurn, DuelState, DuelEntry]):
    """The duel as a :class:`~moot.core.turn_record.TurnRecord`: check with lines, the chain, repair, and appends,
    which rewrite the record when a turn changes its header (Candidate Convergence and Status)."""

    protocol_name = PROTOCOL
    format_rule = FORMAT_RULES.violation(
        "DUEL_TURN_STRUCTURE",
        "the text would not read back as written; keep line breaks, '|', '(', ')' and '/' out of names, "
        "line breaks out of list items, and Markdown headings and bold labels out of the turn text.",
    )

    def read(self, text: str, file: str) -> Reading[DuelDocument, DuelEntry]:
        document, parsed = parse_document(text, file)
        if document is None:
            return Reading(None, violations=parsed)
        located = zip(
            document.record.turns, document.turn_lines, document.turn_texts, document.heading_lines, strict=True
        )
        entries = [DuelEntry(turn, line, text, heading) for turn, line, text, heading in located]
        return Reading(document, entries, parsed, document.marks)

    def protocol(self, config: DuelDocument) -> DuelProtocol:
        return DuelProtocol(config.record.config, config.record.participants)

    def render_turn(self, turn: DuelTurn) -> str:
        return render_turn(turn).rstrip() + "\n"

    def rewritten(self, text: str, file: str, turns: Sequence[DuelTurn], state: DuelState) -> str | None:
        """A turn that turns Candidate Convergence (in the header and the metadata) rewrites the record, and so
        does one that must go before the empty Terminal Conclusion section a template left."""
        before = state.turns[: -len(turns)]
        if candidate_convergence(state.turns) == candidate_convergence(before) and not _CONCLUSION.search(text):
            return None
        document, _ = parse_document(text, file)
        assert document is not None  # the writer read it
        texts = [*document.turn_texts, *(render_turn(turn).rstrip() for turn in turns)]
        updated = document.record.model_copy(update={"turns": list(state.turns)})
        return rendered(Path(file), updated, texts, document.conclusion_text, ChainMark.of(texts))[0]

    def gap(self, text: str) -> str:
        return "\n" if text.endswith("\n") else "\n\n"  # a blank line, whatever blank lines end the record

    def inspect(self, text: str, path: Path) -> Inspection[DuelDocument, DuelTurn, DuelState, DuelEntry]:
        """The turns replayed as the duel replays them (turns past the limit checked by their place alone), the
        recorded conclusion and status lines held against them, and the chain; violations in line order."""
        file = str(path)
        reading = self.read(text, file)
        document = reading.config
        if document is None:
            return Inspection(reading, None, None, list(reading.violations))
        protocol = self.protocol(document)
        replay = protocol.replay(document.record.turns)
        state = replay.state.model_copy(update={"conclusion": document.record.conclusion})

        def at_turn(v: Violation) -> Violation:
            line = reading.turns[v.turn - 1].heading if v.turn and v.turn <= len(reading.turns) else None
            return v.at(file=file, line=line)

        at_conclusion = document.conclusion_line or (document.turn_lines[-1] if document.turn_lines else None)
        chain = inspect_chain(path, document.turn_texts, document.turn_lines, document.marks)
        violations = [
            *reading.violations,
            *chain.violations,
            *(at_turn(v) for v in replay.violations),
            *(v.at(file=file, line=at_conclusion) for v in protocol.recorded_conclusion_violations(state)),
            *_status_violations(document, file),
        ]
        violations.sort(key=lambda v: (v.line is None, v.line or 0))
        return Inspection(reading, protocol, state, violations, chain)

    def check(self, path: Path) -> CheckReport:
        """Replay a debate artifact and report every violation, located, and each quote held against the source
        document (which only ``moot check`` reads). Never raises for bad input."""
        try:
            text, problems = read_text(path)
            inspection = self.inspect(text, path) if text is not None else None
        except OSError as exc:  # read_text is total; this guards the chain sidecar and odd filesystems
            reason = exc.strerror or type(exc).__name__
            problems = [FILE_RULES.violation("FILE_UNREADABLE", f"cannot read {path}: {reason}.").at(file=str(path))]
            return unreadable(path, problems, PROTOCOL)
        if inspection is None or inspection.protocol is None or inspection.state is None:
            return unreadable(path, inspection.violations if inspection is not None else problems, PROTOCOL)
        summary = inspection.protocol.summary(inspection.state)
        tampered = [v for v in inspection.chain.violations if v.rule in TAMPER_RULES]
        if tampered:
            # The seed: changed or removed prior turns mean INVALIDATED, whatever the turns say.
            reason = f"{tampered[0].rule}: {tampered[0].message}"
            invalid = Outcome(name=OutcomeName.INVALIDATED.value, reason=reason)
            summary = summary.model_copy(update={"outcome": invalid, "next_speaker": None})
        violations = inspection.violations
        report = CheckReport(
            path=str(path),
            protocol=PROTOCOL,
            violations=violations,
            summary=summary,
            repairable=inspection.chain.repairs_all(violations),
        )
        from moot.protocols.duel.grounding import with_quote_checks  # reads the source document

        return with_quote_checks(report, path, inspection.config.record.config, inspection.config.record.turns)


RECORD = DuelTurns()
DuelWriter = TurnWriter[DuelDocument, DuelTurn, DuelState, DuelEntry]  # what RECORD.writer(path) opens
check = RECORD.check
repair = RECORD.repair


# --- writing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Opened:
    """A record read and checked for a rewrite, with its stamp from before the read."""

    document: DuelDocument
    inspection: Inspection[DuelDocument, DuelTurn, DuelState, DuelEntry]
    stamp: FileStamp

    @property
    def errors(self) -> list[Violation]:
        return RECORD.refusing(self.inspection)


def _open_for_write(path: Path) -> _Opened:
    """The record read and checked, with its chain completed if a crash left it short."""
    try:
        stamp = FileStamp.of(path)  # before the read: a write in between shows as a changed stamp
    except FileNotFoundError:
        stamp = None
    text, problems = read_text(path)
    if text is None:
        raise ProtocolViolationError(problems)
    if stamp is None:  # made between the two: read it again
        raise RecordChangedError(f"{path} appeared while moot read it")
    inspection = RECORD.inspect(text, path)
    document = inspection.reading.config
    if document is None:
        raise ProtocolViolationError(inspection.violations)
    opened = _Opened(document, inspection, stamp)
    if inspection.chain.repairable and not opened.errors:
        repair_chain(path, document.turn_texts, document.marks)  # the chain's file: the record's stamp stays
    return opened


def _once_more(write: Callable[[], T]) -> T:
    """``write`` again, on the record as it now is, when someone else wrote it between its read and its write."""
    try:
        return write()
    except RecordChangedError:
        return write()


def _heading_reads_back(participant: Participant) -> bool:
    heading = f"## Turn 1 — {participant.name} ({participant.harness} / {participant.model}) — OPEN_TO_DEBATE"
    match = _HEADING.match(heading)
    who = _WHO.match(match.group("who")) if match else None
    identity = (participant.name, participant.harness, participant.model)
    return who is not None and who.group("name", "harness", "model") == identity and "|" not in "".join(identity)


def _participant_problems(participants: Sequence[Participant], file: str) -> list[Violation]:
    names = [p.name for p in participants]
    found: list[Violation] = []
    if len(participants) > 2:
        found.append(RULES.violation("DUEL_PARTICIPANTS", f"{len(names)} participants given; a duel has two."))
    if len(set(names)) != len(names):
        found.append(FORMAT_RULES.violation("DUEL_PARTICIPANTS_TABLE", "participant names repeat; make them unique."))
    for participant in participants:
        if not _heading_reads_back(participant):
            found.append(
                FORMAT_RULES.violation(
                    "DUEL_PARTICIPANTS_TABLE",
                    f"{participant.name!r} ({participant.harness} / {participant.model}) cannot be written in a turn "
                    "heading; use names without line breaks, '|', '(', ')', '—' and a harness without '/'.",
                )
            )
    return [v.at(file=file) for v in found]


def create(
    path: Path, config: DuelConfig, participants: Sequence[Participant], first_turn: DuelTurn | None = None
) -> DuelRecord:
    """Write a new artifact, with ``first_turn`` (already validated) if given, in one write. Refuses an
    existing path, bad participants or unsafe text."""
    file = str(path)
    if path.exists() or path.is_symlink():
        raise FileExistsError(f"{path} already exists; append to it or choose another suffix")
    problems = _participant_problems(participants, file)
    if problems:
        raise ProtocolViolationError(problems)
    turns = [first_turn] if first_turn is not None else []
    record = DuelRecord(config=config, participants=list(participants), turns=turns)
    _write(path, record, [render_turn(t).rstrip() for t in turns], "", rechain=True)
    return record


def _with_participants(record: DuelRecord, joined: Sequence[Participant], file: str) -> DuelRecord:
    """``record`` with every participant of ``joined`` its table lacks (a peer may join after creation)."""
    listed = {p.name for p in record.participants}
    added = [p for p in joined if p.name not in listed]
    if not added:
        return record
    problems = _participant_problems([*record.participants, *added], file)
    if problems:
        raise ProtocolViolationError(problems)
    return record.model_copy(update={"participants": [*record.participants, *added]})


def add_participant(path: Path, participant: Participant) -> DuelRecord:
    """Add the second participant's row (the artifact may be created while only one has joined)."""

    def add() -> DuelRecord:
        opened = _open_for_write(path)
        if opened.errors:
            raise ProtocolViolationError(opened.errors)
        document = opened.document
        updated = _with_participants(document.record, [participant], str(path))
        _write(path, updated, document.turn_texts, document.conclusion_text, rechain=True, expected=opened.stamp)
        return updated

    return _once_more(add)


def _write(
    path: Path,
    record: DuelRecord,
    turn_texts: Sequence[str],
    tail: str,
    *,
    rechain: bool,
    mark: ChainMark | None = None,
    expected: FileStamp | None = None,
) -> tuple[str, DuelDocument]:
    """Rewrite the header, keep the turn texts as they are, then (optionally) record the chain.

    The chain's head goes inside the record too: recomputed when ``rechain``, else ``mark`` (the head
    the record carried, kept as evidence when its turns were tampered with). A record read before is
    replaced only if it is still as ``expected`` (:class:`RecordChangedError`). Returns what was written.
    """
    if rechain:
        mark = ChainMark.of(turn_texts)
    text, written = rendered(path, record, turn_texts, tail, mark)
    if expected is None:
        atomic_write_text(path, text)
    else:
        replace_record(path, text.encode("utf-8"), expected)
    if rechain:
        record_chain(path, written.turn_texts)
    return text, written


def rendered(
    path: Path, record: DuelRecord, turn_texts: Sequence[str], tail: str, mark: ChainMark | None
) -> tuple[str, DuelDocument]:
    """The whole record's text (header rendered, turn texts and ``tail`` kept as they are) and how it reads
    back; refused (``ProtocolViolationError``) unless it reads back as exactly ``record`` and ``turn_texts``."""
    file = str(path)
    text = _assemble([render_header(record, mark), *turn_texts, tail])
    written, problems = parse_document(text, file)
    errors = [v for v in problems if v.is_error]
    if written is None or errors or written.record != record or written.turn_texts != list(turn_texts):
        # Refuse what would not read back as written: the record on disk must be what was validated.
        raise ProtocolViolationError(errors or [RECORD.format_rule.at(file=file)])
    return text, written


def append_turn(path: Path, turn: DuelTurn) -> Summary:
    """Validate ``turn`` against the record (``step``) and write it with its digest chain: one append while the
    header stays as it was, else one atomic rewrite that updates Candidate Convergence (:class:`DuelTurns`).
    Refuses (ProtocolViolationError) a record that is already invalid, and any turn that breaks a rule or would
    not read back identically; a refusal writes nothing."""
    writer = RECORD.writer(path)
    return writer.protocol.summary(writer.append([turn]).state)


def write_conclusion(path: Path, conclusion: DuelConclusion, joined: Sequence[Participant] = ()) -> Summary:
    """Write the Terminal Conclusion (atomic rewrite). It must agree with the turns; a record that is
    already invalid (e.g. a tampered turn) can only be concluded INVALIDATED."""
    return _once_more(lambda: _write_conclusion(path, conclusion, joined))


def _write_conclusion(path: Path, conclusion: DuelConclusion, joined: Sequence[Participant]) -> Summary:
    file = str(path)
    opened = _open_for_write(path)
    document, errors = opened.document, opened.errors
    protocol, state = opened.inspection.protocol, opened.inspection.state
    assert isinstance(protocol, DuelProtocol) and state is not None  # the header read
    invalidated = conclusion.outcome == OutcomeName.INVALIDATED.value
    if errors and not invalidated:
        raise ProtocolViolationError(errors)
    problems = [v.at(file=file) for v in protocol.conclusion_violations(state, conclusion)]
    if any(v.is_error for v in problems):
        raise ProtocolViolationError(problems)
    state = state.model_copy(update={"conclusion": conclusion})
    record = document.record if errors else _with_participants(document.record, joined, file)
    updated = record.model_copy(update={"conclusion": conclusion})
    # Keep the chain of a tampered record (or one moot cannot verify) as evidence; else bring it up to date.
    intact = not opened.inspection.chain.blocking
    tail = render_conclusion(conclusion)
    _write(path, updated, document.turn_texts, tail, rechain=intact, mark=document.chain_mark, expected=opened.stamp)
    return protocol.summary(state)


def conclude_unreadable(path: Path, conclusion: DuelConclusion) -> None:
    """INVALIDATED for a record moot cannot read (too large, not UTF-8, not a duel): the Terminal
    Conclusion is appended after its bytes, which stay as they were; the chain is kept as evidence."""
    if conclusion.outcome != OutcomeName.INVALIDATED.value:
        raise ValueError("only INVALIDATED concludes a record that cannot be read")
    with path.open("rb") as existing:  # a close re-run after a crash finds its conclusion already there
        existing.seek(max(0, path.stat().st_size - _TAIL_BYTES))
        if b"## Terminal Conclusion\n\n**Outcome**: INVALIDATED" in existing.read():
            return
    append_raw(path, ("\n\n" + render_conclusion(conclusion)).encode("utf-8"))


__all__ = [
    "FORMAT_RULES",
    "RECORD",
    "DuelDocument",
    "DuelRecord",
    "DuelTurns",
    "add_participant",
    "append_turn",
    "check",
    "conclude_unreadable",
    "create",
    "debate_path",
    "parse",
    "parse_document",
    "render",
    "render_conclusion",
    "render_header",
    "render_turn",
    "rendered",
    "slugify",
    "write_conclusion",
]


FORMAT = RecordFormat(check=check, turn_heading="## Turn ")

"""The Agora debate record: one markdown file (format: ``docs/formats.md``)::

    # Agora Debate: <topic>

    - Dialogue: <dialogue id>
    - Methodology: opinion | fact-based | mixed
    - Max turns: 20
    - Deadlock window: 3
    - Require reasons: yes        (optional: a change of stance must cite new evidence)
    - Started: <time>
    - Sources: `<path>`, `<path>`  (optional: the --source files the evidence is checked against)
    - Participants:
      - <role>: <position>        (in speaking order)

    ## Turn 1 — <role>

    Proposal: proposal-<role>      (only on a propose turn)
    Evidence 1: verified at <path>:<line>   (one per checked evidence item, when the record has sources)

    ```json
    { the drone's reply JSON, exactly the seed's fields }
    ```

    ## Outcome                     (optional, written by moot when the debate ends)

    - Result: CONSENSUS | TIMEOUT
    - Reason: <why>

Parsing is total and located. Each turn's exact text (from its heading to the end of its JSON
block) is kept for the digest chain, so an edit to an accepted turn shows as ``PRIOR_TURN_MODIFIED``.
Each turn moot appends is followed, in the same write, by the chain's head (moot.core.chain): one
Markdown comment line at the end of the turn's section, outside its text.
``parse_reply`` reads a model's raw output with the same JSON rules as the record.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from moot.core.chain import ChainMark, create_record, inspect_chain
from moot.core.files import CheckReport, read_text, unreadable
from moot.core.files import slugify as base_slugify
from moot.core.machine import TURNS_PAST_THE_END, Outcome
from moot.core.turn_record import Entry, Inspection, Reading, TurnRecord, Written
from moot.errors import Violation
from moot.plugin import RecordFormat
from moot.protocols.agora.machine import (
    CONSENSUS,
    DEFAULT_DEADLOCK_WINDOW,
    DEFAULT_MAX_TURNS,
    METHODOLOGIES,
    NAME,
    RULES,
    SIGNALS,
    TIMEOUT,
    AgoraConfig,
    AgoraProtocol,
    AgoraReply,
    AgoraState,
    AgoraTurn,
    Position,
    config_problems,
)

TITLE = "# Agora Debate:"
OUTCOME_HEADING = "## Outcome"
_TURN_HEADING = re.compile(r"## Turn ([0-9]{1,9}) — (.*\S)")
_METADATA = re.compile(r"- ([^:]+):(.*)")
_PARTICIPANT = re.compile(r"\s+- ([^:]*):(.*)")
_OUTCOME_LINE = re.compile(r"- (Result|Reason):(.*)")
_EVIDENCE_MARK = re.compile(r"Evidence ([0-9]{1,4}): (.*\S)")
_SOURCE_ITEM = re.compile(r"`([^`]+)`")
_REPLY_FIELDS = ("signal", "message", "confidence", "target", "evidence")
_EVIDENCE_FIELDS = ("source", "content", "confidence")
_KEY = re.compile(rf'"({"|".join(_REPLY_FIELDS)})"\s*:')
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone surrogate (category Cs), which JSON's \\ud800 can make
# Header keys (lower case) -> config field; 'started' and 'participants' are handled apart.
_HEADER_FIELDS = {
    "dialogue": "dialogue_id",
    "methodology": "methodology",
    "max turns": "max_turns",
    "deadlock window": "deadlock_window",
    "require reasons": "require_reasons",
}
_YES_NO = {"yes": True, "no": False}
_NUMBER_DIGITS = 300  # longer JSON numbers are not a confidence; refusing them keeps float() finite


class AgoraRecord(BaseModel):
    """A debate as its record holds it. ``outcome`` is the '## Outcome' section, when written."""

    model_config = ConfigDict(frozen=True)

    config: AgoraConfig
    started: str | None = None
    turns: tuple[AgoraTurn, ...] = ()
    outcome: Outcome | None = None
    sources: tuple[str, ...] = ()  # the '- Sources:' paths, relative to the work root


# --- rendering ---------------------------------------------------------------------------------


def render_header(config: AgoraConfig, started: str | None = None, sources: Sequence[str] = ()) -> str:
    lines = [
        f"{TITLE} {config.topic}",
        "",
        f"- Dialogue: {config.dialogue_id}",
        f"- Methodology: {config.methodology}",
        f"- Max turns: {config.max_turns}",
        f"- Deadlock window: {config.deadlock_window}",
        *(["- Require reasons: yes"] if config.require_reasons else []),
        *([f"- Started: {started}"] if started is not None else []),
        *([f"- Sources: {', '.join(f'`{path}`' for path in sources)}"] if sources else []),
        "- Participants:",
        *(f"  - {p.role}: {p.position}" for p in config.participants),
    ]
    return "\n".join(lines) + "\n"


def reply_json(reply: AgoraReply) -> str:
    """The drone JSON of a reply or turn, as the record shows it (all five fields, in the seed's order)."""
    data = reply.model_dump(mode="json", include=set(AgoraReply.model_fields))
    return json.dumps({key: data[key] for key in _REPLY_FIELDS}, indent=2, ensure_ascii=False)


def render_turn(turn: AgoraTurn, marks: Sequence[str] = ()) -> str:
    """One turn: heading, the proposal it creates (if any), its evidence marks and its JSON block."""
    proposal = f"Proposal: {turn.proposal_id}\n\n" if turn.proposal_id is not None else ""
    evidence = "".join(f"Evidence {n}: {mark}\n" for n, mark in enumerate(marks, start=1))
    evidence += "\n" if marks else ""
    return f"## Turn {turn.number} — {turn.role}\n\n{proposal}{evidence}```json\n{reply_json(turn)}\n```\n"


def render_outcome(outcome: Outcome) -> str:
    return f"{OUTCOME_HEADING}\n\n- Result: {outcome.name}\n- Reason: {outcome.reason}\n"


def render(record: AgoraRecord) -> str:
    text = render_header(record.config, record.started) + "".join(f"\n{render_turn(t)}" for t in record.turns)
    return text + (f"\n{render_outcome(record.outcome)}" if record.outcome is not None else "")


# --- the drone JSON ----------------------------------------------------------------------------


class _Refused(ValueError):
    """What Python's ``json`` accepts but strict JSON does not: repeated keys, NaN, Infinity, huge numbers.

    ``token`` (its ``occurrence``-th appearance in the text) locates the problem.
    """

    def __init__(self, message: str, token: str, occurrence: int = 1) -> None:
        super().__init__(message)
        self.message, self.token, self.occurrence = message, token, occurrence


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _Refused(f"the key {key!r} appears twice in one object; keep only one", json.dumps(key), 2)
        seen.add(key)
    return result


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number; write a number from 0.0 to 1.0", name)


def _number(text: str) -> float:
    value = float(text) if len(text) <= _NUMBER_DIGITS else math.inf
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:20]} is too large; write a number from 0.0 to 1.0", text[:20])
    return value


def _json_type(value: object) -> str:
    kinds = {dict: "an object", list: "a list", tuple: "a list", str: "a string", bool: "true/false"}
    if value is None:
        return "null"
    return next((name for kind, name in kinds.items() if isinstance(value, kind)), "a number")


def _schema_problem(error: ErrorDetails) -> tuple[str, str]:
    """(top-level key the error is about, one sentence naming the fix) for one pydantic error."""
    loc = [str(part) for part in error["loc"]]
    key = loc[0] if loc else "signal"
    path = ".".join(loc) if loc else "the turn"
    kind, value = error["type"], error.get("input")
    in_evidence = len(loc) > 1 and loc[0] == "evidence"
    fields = ", ".join(_EVIDENCE_FIELDS if in_evidence else _REPLY_FIELDS)
    if kind == "missing":
        return key, f"the required field {path!r} is missing; add it."
    if kind == "extra_forbidden":
        return (
            key,
            f"{path!r} is not a field of {'an evidence item' if in_evidence else 'a drone turn'}; remove it (fields: {fields}).",
        )
    if kind == "literal_error":
        return key, f"signal {value!r} is not a signal; use one of {', '.join(SIGNALS)}."
    if kind == "string_type":
        allowed = "a string or null" if path == "target" else "a string"
        return key, f"{path!r} is {_json_type(value)} but must be {allowed}; put the text in double quotes."
    if kind == "float_type":
        return key, f"{path!r} is {_json_type(value)} but must be a number from 0.0 to 1.0; write it without quotes."
    if kind == "tuple_type":
        return (
            key,
            f"{path!r} is {_json_type(value)} but must be a list of evidence objects; write [] when there is none.",
        )
    if kind in {"model_type", "model_attributes_type", "dict_type"}:
        return key, f"{path!r} is {_json_type(value)} but must be an object with {', '.join(_EVIDENCE_FIELDS)}."
    return key, f"{path!r} is invalid ({error['msg']}); write it as the drone JSON format shows."


def _line_of(source: str, token: str, occurrence: int = 1) -> int:
    """The 1-based line of the ``occurrence``-th ``token`` in ``source`` (1 when absent)."""
    index = -1
    for _ in range(occurrence):
        index = source.find(token, index + 1)
        if index < 0:
            return 1
    return source.count("\n", 0, index) + 1


# One decoder for every turn (json.loads with hooks builds a new one per call): no duplicate key, no NaN or
# Infinity, no number too long to be one.
_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant, parse_float=_number, parse_int=_number)


def key_lines(source: str) -> dict[str, int]:
    """The 1-based line of each top-level reply field in a JSON text (its first occurrence)."""
    found: dict[str, int] = {}
    line, counted = 1, 0
    for key in _KEY.finditer(source):
        if key.group(1) not in found:
            line += source.count("\n", counted, key.start())
            counted = key.start()
            found[key.group(1)] = line
    return found


def decode_reply(source: str, *, file: str | None = None, first_line: int = 1) -> AgoraReply | list[Violation]:
    """A reply from JSON text with the strict rules of the record: one object, no duplicate keys,
    no NaN, the seed's fields and types. Errors are located at ``first_line`` + their line - 1."""

    def at(line: int, rule: str, message: str) -> Violation:
        return RULES.violation(rule, message).at(file=file, line=first_line + line - 1)

    try:
        data = _DECODER.decode(source)
    except _Refused as exc:
        return [at(_line_of(source, exc.token, exc.occurrence), "AGORA_TURN_JSON", exc.message + ".")]
    except json.JSONDecodeError as exc:
        hint = "send only the JSON object" if exc.msg == "Extra data" else "write one JSON object"
        message = f"the turn is not valid JSON ({exc.msg}, column {exc.colno}); {hint}."
        return [at(exc.lineno, "AGORA_TURN_JSON", message)]
    except (ValueError, RecursionError) as exc:
        return [at(1, "AGORA_TURN_JSON", f"the turn's JSON cannot be read ({type(exc).__name__}); simplify it.")]
    if not isinstance(data, dict):
        message = (
            f"the turn is {_json_type(data)}, not a JSON object; write one object with signal, message and confidence."
        )
        return [at(1, "AGORA_TURN_JSON", message)]
    if isinstance(data.get("evidence"), list):
        data["evidence"] = tuple(data["evidence"])  # strict validation wants a tuple for a tuple field
    try:
        reply = AgoraReply.model_validate(data, strict=True)
    except ValidationError as exc:
        lines = key_lines(source)
        problems = [_schema_problem(error) for error in exc.errors()]
        return [at(lines.get(key, 1), "AGORA_TURN_SCHEMA", message) for key, message in problems]
    # A string can hold a lone surrogate only through a \\u escape or one already in ``source`` (a model's
    # reply; a record decoded from UTF-8 has none): one pass over the source spares most texts the search.
    texts = [reply.message, reply.target or "", *(f"{e.source}{e.content}" for e in reply.evidence)]
    suspect = "\\u" in source or _has_surrogate(source)
    if suspect and any(_has_surrogate(text) for text in texts):
        return [at(1, "AGORA_TURN_JSON", "a string holds an unpaired \\ud800-\\udfff escape; remove it.")]
    return reply


def _has_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def parse_reply(text: str) -> AgoraReply | list[Violation]:
    """A model's raw output as a reply: one JSON object, optionally inside a single ```json fence.

    Never raises; a list of violations (lines counted in ``text``) says what to fix.
    """
    body = text.strip()
    first_line = text[: len(text) - len(text.lstrip())].count("\n") + 1
    if body.startswith("```"):
        lines = body.split("\n")
        if len(lines) < 2 or lines[-1].strip() != "```":
            message = "the ```json fence is not closed; end it with a line of ``` or send the bare JSON object."
            return [RULES.violation("AGORA_TURN_JSON", message).at(line=first_line)]
        body, first_line = "\n".join(lines[1:-1]), first_line + 1
    return decode_reply(body, first_line=first_line)


# --- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnSource:
    """A turn section of the record: where it starts, its exact text (what the chain digests), the
    line of each part (``heading``, ``proposal`` and the JSON keys) and the turn, if it parsed."""

    line: int
    text: str
    parts: dict[str, int]  # the heading's and the proposal's lines; a JSON key's is found when asked (line_of)
    turn: AgoraTurn | None
    marks: dict[int, tuple[int, str]] = field(default_factory=dict)  # evidence item -> (line, what moot found)
    block: tuple[int, int] | None = None  # the JSON block's lines in ``text``: first, and one past the last
    unread: bool = False  # past the turn limit and TURNS_PAST_THE_END more: kept for the chain, not parsed

    def line_of(self, part: str) -> int:
        """The line of ``part`` (``heading``, ``proposal`` or a JSON key), else the heading's line.

        A JSON key's line is looked for only when a violation names it: most turns have none."""
        if part in self.parts:
            return self.parts[part]
        if self.block is not None:
            first, end = self.block
            found = key_lines("\n".join(self.text.split("\n")[first:end])).get(part)
            if found is not None:
                return self.line + first + found - 1
        return self.line


@dataclass
class _Scan:
    file: str | None
    lines: list[str]
    violations: list[Violation] = field(default_factory=list)
    config: AgoraConfig | None = None
    started: str | None = None
    sources: tuple[str, ...] = ()
    header_lines: dict[str, int] = field(default_factory=dict)
    turns: list[TurnSource] = field(default_factory=list)
    outcome: Outcome | None = None
    outcome_line: int | None = None
    marks: list[ChainMark] = field(default_factory=list)  # the chain heads moot wrote after turns
    ends_with_newline: bool = False

    def report(self, rule: str, message: str, index: int | None, turn: int | None = None) -> None:
        line = index + 1 if index is not None else None
        self.violations.append(RULES.violation(rule, message).at(file=self.file, line=line, turn=turn))


def _scan(text: str, file: str | None) -> _Scan:
    scan = _Scan(file=file, lines=text.split("\n"))
    lines = scan.lines
    title = next((i for i, line in enumerate(lines) if line.strip()), None)
    if title is None or not lines[title].strip().startswith(TITLE):
        scan.report("AGORA_HEADER", f"the record must start with '{TITLE} <topic>'; add that title line.", title)
        return scan
    first_section = next((i for i in range(title + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    _scan_header(scan, title, first_section)
    _scan_sections(scan, first_section)
    scan.ends_with_newline = lines[-1] == ""
    scan.lines = []  # every part read holds its own text: the record's lines go before the replay
    return scan


def _scan_header(scan: _Scan, title: int, end: int) -> None:
    lines = scan.lines
    values: dict[str, str] = {"topic": lines[title].strip()[len(TITLE) :].strip()}
    participants: list[Position] = []
    in_participants = False
    for index in range(title + 1, end):
        line = lines[index].rstrip()
        if not line.strip():
            continue
        if in_participants and line[:1].isspace():
            item = _PARTICIPANT.fullmatch(line)
            if item is None:
                scan.report("AGORA_HEADER", "a participant line reads '  - <role>: <position>'; rewrite it so.", index)
            else:
                participants.append(Position(role=item.group(1).strip(), position=item.group(2).strip()))
            continue
        entry = _METADATA.fullmatch(line)
        key = entry.group(1).strip().lower() if entry is not None else ""
        in_participants = key == "participants"
        if entry is None:
            scan.report(
                "AGORA_HEADER", "this line is not part of the header; write '- Key: value' or remove it.", index
            )
        elif key in scan.header_lines:
            scan.report("AGORA_HEADER", f"'{entry.group(1).strip()}' is given twice; keep one.", index)
        elif in_participants and entry.group(2).strip():
            message = "list the participants below '- Participants:', one '  - <role>: <position>' line each."
            scan.report("AGORA_HEADER", message, index)
            scan.header_lines[key] = index + 1
            values[key] = ""
        elif key == "sources":
            scan.header_lines[key] = index + 1
            scan.sources = tuple(_SOURCE_ITEM.findall(entry.group(2)))
            if not scan.sources:
                scan.report("AGORA_HEADER", "'Sources' lists no path; write them like `src`, `docs/guide.md`.", index)
        elif key in _HEADER_FIELDS or key in {"started", "participants"}:
            scan.header_lines[key] = index + 1
            values[key] = entry.group(2).strip()
        else:
            known = "Dialogue, Methodology, Max turns, Deadlock window, Require reasons, Started, Sources, Participants"
            scan.report("AGORA_HEADER", f"unknown header field {entry.group(1).strip()!r}; use {known}.", index)
    scan.started = values.get("started") or None
    if "started" in values and not values["started"]:
        message = "'Started' is empty; write when the debate started or remove the line."
        scan.report("AGORA_HEADER", message, scan.header_lines["started"] - 1)
    config = _header_config(scan, values, participants, title)
    if config is not None:
        scan.config = config


def _header_config(scan: _Scan, values: dict[str, str], participants: list[Position], title: int) -> AgoraConfig | None:
    def where(key: str) -> int:
        return scan.header_lines.get(key, title + 1) - 1

    missing = [
        name
        for name, key in (("Dialogue", "dialogue"), ("Methodology", "methodology"), ("Participants", "participants"))
        if key not in values
    ]
    for name in missing:
        scan.report("AGORA_HEADER", f"the header has no '- {name}:' line; add it.", title)
    methodology = values.get("methodology", "").removeprefix(":")
    if "methodology" in values and methodology not in METHODOLOGIES:
        scan.report(
            "AGORA_HEADER",
            f"methodology {methodology!r} is unknown; use one of {', '.join(METHODOLOGIES)}.",
            where("methodology"),
        )
        return None
    numbers = {"max_turns": DEFAULT_MAX_TURNS, "deadlock_window": DEFAULT_DEADLOCK_WINDOW}
    for key, name in (("max turns", "max_turns"), ("deadlock window", "deadlock_window")):
        raw = values.get(key)
        if raw is None:
            continue
        if re.fullmatch(r"[0-9]{1,9}", raw):
            numbers[name] = int(raw)
        else:
            scan.report(
                "AGORA_HEADER", f"{key} is {raw!r}; write a whole number (default {numbers[name]}).", where(key)
            )
    reasons = values.get("require reasons", "no")
    if reasons.lower() not in _YES_NO:
        scan.report("AGORA_HEADER", f"require reasons is {reasons!r}; write yes or no.", where("require reasons"))
    if missing:
        return None
    fields: dict[str, Any] = {
        "dialogue_id": values["dialogue"],
        "topic": values["topic"],
        "methodology": methodology,
        "participants": tuple(participants),
        **numbers,
        "require_reasons": _YES_NO.get(reasons.lower(), False),
    }
    problems = config_problems(AgoraConfig.model_construct(**fields))
    lines = {
        "dialogue_id": "dialogue",
        "topic": "topic",
        "participants": "participants",
        "max_turns": "max turns",
        "deadlock_window": "deadlock window",
    }
    for name, message in problems:
        scan.report("AGORA_CONFIG", message, where(lines[name]))
    return None if problems else AgoraConfig.model_validate(fields)


def _scan_sections(scan: _Scan, start: int) -> None:
    """Split the body into '## ' sections (headings inside a code fence do not count)."""
    lines = scan.lines
    heads: list[int] = []
    in_fence = False
    for index in range(start, len(lines)):
        line = lines[index]
        if "```" not in line:  # most lines: the fence test below needs no stripped copy of them
            if not in_fence and line.startswith("## "):
                heads.append(index)
        elif in_fence:
            in_fence = line.strip() != "```"
        elif line.startswith("## "):
            heads.append(index)
        elif line.lstrip().startswith("```"):
            in_fence = True
    # Every turn past the limit comes after the debate's end: a few are read, the rest only kept for the chain.
    read_up_to = (scan.config.max_turns if scan.config is not None else 0) + TURNS_PAST_THE_END
    for position, head in enumerate(heads):
        end = heads[position + 1] if position + 1 < len(heads) else len(lines)
        heading = lines[head].rstrip()
        if heading == OUTCOME_HEADING and scan.outcome_line is not None:
            scan.report("AGORA_OUTCOME", f"a second '{OUTCOME_HEADING}' section; keep only one, at the end.", head)
        elif heading == OUTCOME_HEADING:
            _scan_outcome(scan, head, end)
        elif heading.startswith("## Turn") and len(scan.turns) >= read_up_to:
            text, _ = _turn_text(scan, head, end)
            scan.turns.append(TurnSource(line=head + 1, text=text, parts={"heading": head + 1}, turn=None, unread=True))
        elif heading.startswith("## Turn"):
            scan.turns.append(_scan_turn(scan, head, end))
        else:
            message = f"unknown section {heading!r}; a record holds only '## Turn N — <role>' sections and a final '{OUTCOME_HEADING}'."
            scan.report("AGORA_TURN_FORMAT", message, head)
    if scan.outcome_line is not None and heads[-1] + 1 != scan.outcome_line:
        message = f"the '{OUTCOME_HEADING}' section must be the last; move the sections below it above it."
        scan.report("AGORA_OUTCOME", message, scan.outcome_line - 1)


def _turn_text(scan: _Scan, head: int, end: int) -> tuple[str, int]:
    """A turn section's exact text (what the chain digests) and its last line's index; the chain marks after it
    go to the scan."""
    lines = scan.lines
    last = next((i for i in range(end - 1, head, -1) if lines[i].strip() and ChainMark.parse(lines[i]) is None), head)
    scan.marks += [head_mark for i in range(last + 1, end) if (head_mark := ChainMark.parse(lines[i])) is not None]
    return "\n".join(lines[head : last + 1]) + "\n", last


def _scan_turn(scan: _Scan, head: int, end: int) -> TurnSource:
    lines = scan.lines
    text, last = _turn_text(scan, head, end)
    parts = {"heading": head + 1}
    position = len(scan.turns) + 1

    def report(message: str, index: int) -> None:
        scan.report("AGORA_TURN_FORMAT", message, index, turn=position)

    heading = _TURN_HEADING.fullmatch(lines[head].rstrip())
    if heading is None:
        report("a turn heading reads '## Turn N — <role>' with an em dash (—); rewrite it so.", head)
    proposal: str | None = None
    block: tuple[int, int] | None = None
    marks: dict[int, tuple[int, str]] = {}
    stray = False
    index = head + 1
    while index <= last:
        stripped = lines[index].strip()
        if not stripped:
            pass
        elif block is None and proposal is None and stripped.startswith("Proposal:"):
            proposal = stripped.removeprefix("Proposal:").strip()
            parts["proposal"] = index + 1
            if not proposal:
                report("the 'Proposal:' line is empty; write 'Proposal: proposal-<role>'.", index)
        elif block is None and (mark := _EVIDENCE_MARK.fullmatch(stripped)) is not None:
            marks[int(mark.group(1))] = (index + 1, mark.group(2))
        elif block is None and stripped.startswith("```"):
            close = next(
                (i for i in range(index + 1, last + 1) if "```" in lines[i] and lines[i].strip() == "```"), None
            )
            if close is None:
                report("the ```json block is not closed; end it with a line of ```.", index)
                return TurnSource(line=head + 1, text=text, parts=parts, turn=None, marks=marks)
            block, index = (index + 1, close), close
        elif not stray:  # one report per turn is enough to find the spot
            stray = True
            where = "after the JSON block" if block is not None else "before the JSON block"
            report(f"unexpected text {where}; put the argument in the JSON message or remove the line.", index)
        index += 1
    if block is None:
        report("the turn has no ```json block; add the drone JSON in one.", head)
        return TurnSource(line=head + 1, text=text, parts=parts, turn=None, marks=marks)
    source = "\n".join(lines[block[0] : block[1]])
    within = (block[0] - head, block[1] - head)
    reply = decode_reply(source, file=scan.file, first_line=block[0] + 1)
    if isinstance(reply, list):
        scan.violations.extend(v.at(turn=position) for v in reply)
        return TurnSource(line=head + 1, text=text, parts=parts, turn=None, marks=marks, block=within)
    if heading is None or proposal == "":
        return TurnSource(line=head + 1, text=text, parts=parts, turn=None, marks=marks, block=within)
    fields = {**dict(reply), "number": int(heading.group(1)), "role": heading.group(2).strip(), "proposal_id": proposal}
    turn = AgoraTurn.model_validate(fields)
    return TurnSource(line=head + 1, text=text, parts=parts, turn=turn, marks=marks, block=within)


def _scan_outcome(scan: _Scan, head: int, end: int) -> None:
    scan.outcome_line = head + 1
    found: dict[str, str] = {}
    for index in range(head + 1, end):
        line = scan.lines[index].rstrip()
        entry = _OUTCOME_LINE.fullmatch(line)
        if entry is not None and entry.group(1) not in found:
            found[entry.group(1)] = entry.group(2).strip()
        elif line.strip():
            message = "the Outcome section holds only '- Result: …' and '- Reason: …'; remove this line."
            scan.report("AGORA_OUTCOME", message, index)
    result, reason = found.get("Result"), found.get("Reason")
    if result not in {CONSENSUS, TIMEOUT} or not reason:
        message = f"the Outcome needs '- Result: {CONSENSUS}' or '- Result: {TIMEOUT}' and a non-empty '- Reason:'; complete it."
        scan.report("AGORA_OUTCOME", message, head)
        return
    scan.outcome = Outcome(name=result, reason=reason, consensus=result == CONSENSUS)


def parse(text: str, file: str | None = None) -> tuple[AgoraRecord | None, list[Violation]]:
    """The record in ``text``, or ``None`` with the located format violations. Never raises.

    Only the format is checked here; ``check`` also replays the protocol rules.
    """
    scan = _scan(text, file)
    turns = [source.turn for source in scan.turns]
    if scan.config is None or any(v.is_error for v in scan.violations) or None in turns:
        return None, scan.violations
    record = AgoraRecord(
        config=scan.config,
        started=scan.started,
        turns=tuple(t for t in turns if t is not None),
        outcome=scan.outcome,
        sources=scan.sources,
    )
    return record, scan.violations


def turn_sources(text: str) -> list[TurnSource]:
    """Each turn section's first line and exact text, in order: what the digest chain covers."""
    return _scan(text, None).turns


# --- checking and writing ---------------------------------------------------------------------


@dataclass(frozen=True)
class AgoraHeader:
    """What the header says the turns are replayed against: the debate's configuration, and the files its
    evidence is checked against (a debate with sources holds fact-based turns to them)."""

    config: AgoraConfig
    sources: tuple[str, ...] = ()


@dataclass
class AgoraEntry(Entry[AgoraTurn]):
    """A turn that read, with where its parts are."""

    source: TurnSource


@dataclass
class AgoraReading(Reading[AgoraHeader, AgoraEntry]):
    """The record as read: an entry for each turn up to the first that did not read (later ones cannot be
    placed), and the scan, which keeps every turn section (the chain covers them all) and the outcome section."""

    scan: _Scan = field(default_factory=lambda: _Scan(file=None, lines=[]))

    def chained(self) -> list[tuple[str, int]]:
        return [(source.text, source.line) for source in self.scan.turns]


def _reading(scan: _Scan) -> AgoraReading:
    entries: list[AgoraEntry] = []
    for source in scan.turns:
        if source.turn is None:
            break
        entries.append(AgoraEntry(source.turn, source.line, source.text, source))
    header = AgoraHeader(scan.config, scan.sources) if scan.config is not None else None
    return AgoraReading(header, entries, scan.violations, scan.marks, scan=scan)


def _replay(scan: _Scan, protocol: AgoraProtocol) -> tuple[AgoraState, list[Violation]]:
    """Replay the turns up to the first one that did not parse (later ones cannot be placed), each violation at
    the line of the part of the turn it is about."""
    state = protocol.initial_state()
    found: list[Violation] = []
    for position, source in enumerate(scan.turns, start=1):
        if source.unread:  # all the rest are past the end too: one violation, and the count
            total = len(scan.turns)
            message = (
                f"turns {position:,} to {total:,} also come after the debate's end (its limit is "
                f"{protocol.config.max_turns} turns); remove them."
            )
            found.append(RULES.violation("AGORA_AFTER_OUTCOME", message).at(file=scan.file, line=source.line))
            state = state.model_copy(update={"turns": state.turns + total - position + 1})
            break
        if source.turn is None:
            break
        for part, violation in protocol.located(state, source.turn):
            found.append(violation.at(file=scan.file, line=source.line_of(part), turn=position))
        state = protocol.apply(state, source.turn)
    return state, found


def _outcome_problems(scan: _Scan, state: AgoraState) -> list[Violation]:
    written = scan.outcome
    if written is None or any(source.turn is None for source in scan.turns):
        return []
    actual = state.outcome
    if actual is None:
        message = f"the Outcome says {written.name} but the debate is still open after {state.turns} turn(s); remove the section."
    elif actual.name != written.name:
        message = f"the Outcome says {written.name} but the turns give {actual.name} ({actual.reason}); write 'Result: {actual.name}'."
    else:
        return []
    return [RULES.violation("AGORA_OUTCOME", message).at(file=scan.file, line=scan.outcome_line)]


def _by_line(violation: Violation) -> tuple[int, int]:
    return violation.line or 0, violation.turn or 0


class AgoraTurns(TurnRecord[AgoraHeader, AgoraTurn, AgoraState, AgoraEntry]):
    """The debate as a :class:`~moot.core.turn_record.TurnRecord`: check with lines (and, for ``moot check``, the
    evidence against the sources), the chain, appends that read back only the new turn, and repair."""

    protocol_name = NAME
    format_rule = RULES.violation(
        "AGORA_TURN_JSON", "the turn would not read back as written; remove unpaired surrogates from its text."
    )

    def read(self, text: str, file: str) -> AgoraReading:
        return _reading(_scan(text, file))

    def read_piece(self, piece: str, file: str) -> AgoraReading:
        """A turn reads the same alone: its section's lines are all it depends on."""
        scan = _Scan(file=file, lines=piece.split("\n"))
        _scan_sections(scan, 0)
        scan.lines = []
        return _reading(scan)

    def protocol(self, config: AgoraHeader) -> AgoraProtocol:
        return AgoraProtocol(config.config, grounded=bool(config.sources))

    def render_turn(self, turn: AgoraTurn) -> str:
        return render_turn(turn)

    def render_noted(self, turn: AgoraTurn, note: Sequence[str]) -> str:
        """The turn with its evidence marks (``note``: what moot found for each evidence item)."""
        return render_turn(turn, note)

    def render_outcome(self, outcome: Outcome) -> str:
        return render_outcome(outcome)

    def inspect(self, text: str, path: Path) -> Inspection[AgoraHeader, AgoraTurn, AgoraState, AgoraEntry]:
        """The base's inspection, with each rule's violation at the line of the part it is about (``located``),
        a replay that stops at the first turn that did not read, and turns past the end counted once."""
        reading = self.read(text, str(path))
        if reading.config is None:
            return Inspection(reading, None, None, list(reading.violations))
        protocol = self.protocol(reading.config)
        state, found = _replay(reading.scan, protocol)
        chained = reading.chained()
        chain = inspect_chain(path, [text for text, _ in chained], [line for _, line in chained], reading.marks)
        violations = [*reading.violations, *found, *_outcome_problems(reading.scan, state), *chain.violations]
        return Inspection(reading, protocol, state, sorted(violations, key=_by_line), chain)

    def check(self, path: Path) -> CheckReport:
        """The base's check, and each evidence item held against the record's sources (or, without sources,
        the files it cites): only ``moot check`` reads the cited files, never a writer."""
        text, problems = read_text(path)
        if text is None:
            return unreadable(path, problems, protocol=NAME)
        inspection = self.inspect(text, path)
        del text  # the reading holds each turn's text; the whole record need not stay for the evidence check
        reading, protocol, state = inspection.reading, inspection.protocol, inspection.state
        if protocol is None or state is None:
            return unreadable(path, inspection.violations, protocol=NAME)
        assert isinstance(reading, AgoraReading)
        from moot.protocols.agora.grounding import check_evidence  # reads the cited files

        cited, grounding = check_evidence(path, reading.scan.sources, reading.scan.turns)
        violations = sorted([*inspection.violations, *cited], key=_by_line)
        summary = protocol.summary(state)
        if grounding:
            summary = summary.model_copy(update={"detail": {**summary.detail, "grounding": grounding}})
        return CheckReport(
            path=str(path),
            protocol=NAME,
            violations=violations,
            summary=summary,
            repairable=inspection.chain.repairs_all(violations),
        )


RECORD = AgoraTurns()
check = RECORD.check
repair = RECORD.repair


def create(path: Path, config: AgoraConfig, started: str | None = None, sources: Sequence[str] = ()) -> None:
    """Start a debate record (``started`` defaults to now, UTC). Refuses to overwrite an existing file."""
    when = started if started is not None else datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    create_record(path, render_header(config, when, sources), "continue that debate or choose another file name.")


def append_turn(path: Path, turn: AgoraTurn, marks: Sequence[str] = ()) -> Written[AgoraState]:
    """Validate ``turn`` against the record on disk, then append it durably with its evidence ``marks`` and the
    chain's mark (and the '## Outcome' section when it ends the debate); raises :class:`ProtocolViolationError`
    when it breaks a rule or the record cannot take a turn, leaving the record as it was."""
    return RECORD.writer(path).append([turn], notes=[marks])


# --- file names --------------------------------------------------------------------------------


def slugify(topic: str) -> str:
    """The debate's file name stem (see :func:`moot.core.files.slugify`)."""
    return base_slugify(topic, "debate")


FORMAT = RecordFormat(check=check, turn_heading="## Turn ")

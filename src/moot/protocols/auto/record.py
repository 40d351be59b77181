"""The Auto record, ``.auto/<slug>.md``: a council record with a vote after stage 1.

The header is the council's (``# Auto:`` for its title) plus the agreement threshold and the quorum;
stage 1, 2 and 3 are written exactly as the council writes them, and the ``## Vote`` section sits
between stage 1 and stage 2, written in the same atomic write as stage 1. The council's parser reads
every section but the vote (which is masked out of what it reads, line numbers kept), so every
council rule applies to the escalated part unchanged. See docs/formats.md for an example.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path

from moot.core.chain import ChainMark, create_record
from moot.core.files import slugify
from moot.core.machine import DeliberationProtocol
from moot.core.turn_record import Inspection
from moot.plugin import RecordFormat
from moot.protocols.auto import PLUGIN as AUTO
from moot.protocols.auto.machine import (
    DECISIONS,
    NAME,
    RULES,
    AutoConfig,
    AutoProtocol,
    AutoState,
    AutoTurn,
    Vote,
)
from moot.protocols.council import record as council
from moot.protocols.council.machine import CouncilConfig

AUTO_DIR = AUTO.folder
TITLE = str(AUTO.title)
VOTE_HEADING = "## Vote"
_TALLY_ROW = re.compile(r"  - (?P<count>\d+): (?P<members>[A-Za-z0-9_-]+(?:, [A-Za-z0-9_-]+)*) — (?P<answer>.*)")
_NO_TALLY = "  - none"
_FIELD = re.compile(r"- \*\*(?P<key>[^*]+):\*\*(?: (?P<value>.*))?")


# --- rendering ---------------------------------------------------------------------------------


def render_header(config: AutoConfig) -> str:
    lines = council.render_header(config).split("\n")
    lines[0] = TITLE + lines[0][len(council.TITLE) :]
    at = next(index for index, line in enumerate(lines) if line.startswith("- **Chairman:**"))
    lines[at + 1 : at + 1] = [f"- **Agreement threshold:** {config.threshold}"]  # the council's lines hold the quorum
    return "\n".join(lines)


def render_vote(vote: Vote) -> str:
    rows = [f"  - {len(members)}: {', '.join(members)} — {answer}" for answer, members in vote.tally]
    return "\n".join(
        [
            VOTE_HEADING,
            "",
            "- **Tally:**",
            *(rows or [_NO_TALLY]),
            f"- **Agreement:** {vote.agreement}",
            f"- **Threshold:** {vote.threshold}",
            f"- **Quorum:** {vote.quorum}",
            f"- **Decision:** {vote.decision}",
            f"- **Reason:** {council.one_line(vote.reason)}",
            "",
        ]
    )


def render_turn(turn: AutoTurn) -> str:
    return render_vote(turn) if isinstance(turn, Vote) else council.render_turn(turn)


# --- parsing -----------------------------------------------------------------------------------


Entry = council.Stage[AutoTurn]
AutoRecord = council.StageReading[AutoConfig, AutoTurn]


def _fields(body: Sequence[str]) -> dict[str, str]:
    """The ``- **Key:** value`` lines of ``body``, the first of each key."""
    found: dict[str, str] = {}
    for line in body:
        match = _FIELD.fullmatch(line)
        if match:
            found.setdefault(match["key"], (match["value"] or "").strip())
    return found


def _problem(record: AutoRecord, rule: str, message: str, line: int, file: str | None) -> None:
    record.violations.append(RULES.violation(rule, message).at(file=file, line=line))


def parse(text: str, file: str | None = None) -> AutoRecord:
    """Read an auto record. Never raises: problems are located violations in ``violations``."""
    lines = text.replace("\r\n", "\n").split("\n")
    record = AutoRecord(config=None)
    first = next((index for index, line in enumerate(lines) if line.strip()), 0)
    if not lines[first].startswith(TITLE + " "):
        _problem(record, "AUTO_HEADER", f"the record must start with '{TITLE} <title>'.", first + 1, file)
        return record
    masked = list(lines)
    masked[first] = council.TITLE + lines[first][len(TITLE) :]
    votes: list[Entry] = []
    starts = [index for index, line in enumerate(lines) if line.startswith("## ")] + [len(lines)]
    for start, end in itertools.pairwise(starts):
        if lines[start].rstrip() != VOTE_HEADING:
            continue
        while end > start + 1 and (not lines[end - 1] or ChainMark.parse(lines[end - 1]) is not None):
            end -= 1  # the chain's head after the write ends the section but is not part of it
        section = "\n".join(lines[start:end]).rstrip("\n") + "\n"
        vote = _parse_vote(record, lines[start + 1 : end], start + 1, file)
        if vote is not None:
            votes.append(Entry(vote, start + 1, section))
        masked[start:end] = [""] * (end - start)  # the council's parser reads every other section as it is
    read = council.parse("\n".join(masked), file)
    record.violations += read.violations
    # Sections past the most a council can hold stay in the chain, and COUNCIL_STAGE_ORDER names them.
    record.marks, record.outcome, record.unread = read.marks, read.outcome, read.unread
    entries = [
        Entry(source.turn, source.line, source.text, source.sealed_text, source.confidence_line)
        for source in read.turns
    ]
    record.turns = sorted(entries + votes, key=lambda entry: entry.line)
    if read.config is not None:
        record.config = _config(record, read.config, lines[first:], first + 1, file)
    return record


def _config(record: AutoRecord, base: CouncilConfig, head: list[str], line: int, file: str | None) -> AutoConfig | None:
    fields = _fields(head[: next((i for i, row in enumerate(head) if row.startswith("## ")), len(head))])
    threshold = fields.get("Agreement threshold")
    if threshold is None:
        _problem(record, "AUTO_HEADER", "the header lacks '- **Agreement threshold:**'.", line, file)
        return None
    config = AutoConfig(**base.model_dump(), threshold=threshold)
    problems = config.problems()
    if problems:
        _problem(record, "AUTO_HEADER", "; ".join(problems) + ".", line, file)
        return None
    return config


def _parse_vote(record: AutoRecord, body: list[str], line: int, file: str | None) -> Vote | None:
    fields = _fields(body)
    needed = ("Tally", "Agreement", "Threshold", "Quorum", "Decision", "Reason")
    rows = [row for row in body if row.startswith("  - ")]
    matches = [_TALLY_ROW.fullmatch(row) for row in rows if row != _NO_TALLY]
    bad = [key for key in needed if key not in fields]
    if bad or any(m is None for m in matches) or not fields["Quorum"].isdigit() or len(fields["Quorum"]) > 4:
        what = f"lacks {', '.join(bad)}" if bad else "has a tally row that is not '  - COUNT: MEMBER, … — ANSWER'"
        _problem(record, "AUTO_FORMAT", f"the vote {what}, or its quorum is not a whole number.", line, file)
        return None
    tally = tuple((m["answer"], tuple(m["members"].split(", "))) for m in matches if m)
    if any(int(m["count"]) != len(m["members"].split(", ")) for m in matches if m):
        _problem(record, "AUTO_TALLY", "a tally row's count is not the number of members it names.", line, file)
    if fields["Decision"] not in DECISIONS:
        _problem(record, "AUTO_FORMAT", f"the vote's decision is one of {', '.join(DECISIONS)}.", line, file)
        return None
    return Vote(
        tally=tally,
        agreement=fields["Agreement"],
        threshold=fields["Threshold"],
        quorum=int(fields["Quorum"]),
        decision=fields["Decision"],
        reason=fields["Reason"],
    )


# --- checking ----------------------------------------------------------------------------------


class AutoTurns(council.StageTurns[AutoConfig, AutoTurn, AutoState]):
    """The Auto record: the council's stages, and the vote between stage 1 and stage 2."""

    protocol_name = NAME
    format_rule = RULES.violation(
        "AUTO_FORMAT", "the stage would not read back as written; remove control characters from its text."
    )
    rules = RULES
    outcome_rule = "AUTO_OUTCOME"
    ended = "the run"
    decided_by = "the vote and the stages"

    def read(self, text: str, file: str) -> AutoRecord:
        return parse(text, file)

    def protocol(self, config: AutoConfig) -> AutoProtocol:
        return AutoProtocol(config)

    def render_turn(self, turn: AutoTurn) -> str:
        return render_turn(turn)

    def failed(self, protocol: DeliberationProtocol[AutoTurn, AutoState], state: AutoState, reason: str) -> AutoState:
        assert isinstance(protocol, AutoProtocol)
        return protocol.failed(state, reason)


RECORD = AutoTurns()
Checked = Inspection[AutoConfig, AutoTurn, AutoState, Entry]


def check_text(text: str, path: Path) -> Checked:
    """The record read, replayed and held against its chain."""
    return RECORD.inspect(text, path)


# --- writing -----------------------------------------------------------------------------------


def auto_path(root: Path, question: str) -> Path:
    return root / AUTO_DIR / f"{slugify(council.title_of(question), 'auto')}.md"


def create(path: Path, config: AutoConfig) -> None:
    """Start an auto record. Refuses to overwrite an existing file."""
    create_record(path, render_header(config), "resume that run or ask another question.")


def load(path: Path) -> tuple[AutoProtocol, AutoState, str]:
    """The protocol, replayed state and text of a record that can take a turn (:meth:`TurnRecord.load`)."""
    protocol, state, text = RECORD.load(path)
    assert isinstance(protocol, AutoProtocol)
    return protocol, state, text


def append_turns(path: Path, turns: Sequence[AutoTurn], failure: str | None = None) -> AutoState:
    """Validate ``turns`` against the record, then append them (and the outcome, if reached) in one write.

    Stage 1 and the vote are revealed this way together. ``failure`` ends an open run as FAILED with that
    reason. Raises :class:`ProtocolViolationError` on any broken rule.
    """
    return RECORD.append(path, turns, failure)


check = RECORD.check
repair = RECORD.repair
FORMAT = RecordFormat(check=check, turn_heading="## ")

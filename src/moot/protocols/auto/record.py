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
from dataclasses import dataclass, field
from pathlib import Path

from moot.core.chain import ChainCheck, ChainMark, RecordAppender, inspect_chain, repair_chain
from moot.core.files import CheckReport, FileStamp, RecordChangedError, create_record, read_text, slugify, unreadable
from moot.core.machine import Outcome, ProtocolViolationError, Violation, sealed_digest
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
from moot.protocols.council.machine import FAILED, CouncilConfig
from moot.protocols.council.machine import RULES as COUNCIL_RULES

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


@dataclass
class Entry:
    turn: AutoTurn
    line: int  # 1-based line of its heading
    text: str  # the section's exact text, which the digest chain covers
    sealed_text: str | None = None
    confidence_line: int | None = None


@dataclass
class AutoRecord:
    config: AutoConfig | None
    turns: list[Entry] = field(default_factory=list)
    outcome: tuple[str, str, int] | None = None
    violations: list[Violation] = field(default_factory=list)
    marks: list[ChainMark] = field(default_factory=list)


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
    record.marks, record.outcome = read.marks, read.outcome
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


@dataclass
class Checked:
    record: AutoRecord
    protocol: AutoProtocol | None
    state: AutoState | None
    violations: list[Violation]
    chain: ChainCheck = field(default_factory=ChainCheck)


def check_text(text: str, path: Path) -> Checked:
    file = str(path)
    record = parse(text, file)
    if record.config is None:
        return Checked(record, None, None, record.violations)
    protocol = AutoProtocol(record.config)
    replay = protocol.replay([entry.turn for entry in record.turns])
    found = list(record.violations)
    for violation in replay.violations:
        entry = record.turns[violation.turn - 1] if violation.turn else None
        line = council.violation_line(entry.line, entry.confidence_line, violation) if entry else None
        found.append(violation.at(file=file, line=line))
    for number, entry in enumerate(record.turns, start=1):
        digest = getattr(entry.turn, "digest", None)
        if entry.sealed_text is not None and digest != sealed_digest(entry.sealed_text):
            found.append(
                COUNCIL_RULES.violation(
                    "COUNCIL_SEALED", "the text differs from the digest committed when it was sealed.", turn=number
                ).at(file=file, line=entry.line)
            )
    problem, state = _outcome(protocol, replay.state, record)
    if problem is not None:
        found.append(problem.at(file=file))
    chain = inspect_chain(path, [e.text for e in record.turns], [e.line for e in record.turns], record.marks)
    found.extend(chain.violations)
    return Checked(record, protocol, state, found, chain)


def _outcome(protocol: AutoProtocol, state: AutoState, record: AutoRecord) -> tuple[Violation | None, AutoState]:
    computed = protocol.outcome(state)
    if record.outcome is None:
        if computed is None:
            return None, state
        line = record.turns[-1].line if record.turns else 1
        message = f"the run ended in {computed.name} but has no outcome section."
        return RULES.violation("AUTO_OUTCOME", message).at(line=line), state
    result, reason, line = record.outcome
    if computed is None and result == FAILED:
        return None, protocol.failed(state, reason)
    if computed is None or result != computed.name:
        expected = "still open (or FAILED)" if computed is None else computed.name
        message = f"the outcome says {result}, but the vote and the stages say {expected}."
        return RULES.violation("AUTO_OUTCOME", message).at(line=line), state
    return None, state


def check(path: Path) -> CheckReport:
    """Replay an auto record: format, the AUTO_ and COUNCIL_ rules, its outcome and digest chain. Never raises."""
    text, problems = read_text(path)
    if text is None:
        return unreadable(path, problems, protocol=NAME)
    checked = check_text(text, path)
    if checked.protocol is None or checked.state is None:
        return unreadable(path, checked.violations, protocol=NAME)
    return CheckReport(
        path=str(path),
        protocol=NAME,
        violations=checked.violations,
        summary=checked.protocol.summary(checked.state),
        repairable=checked.chain.repairs_all(checked.violations),
    )


# --- writing -----------------------------------------------------------------------------------


def auto_path(root: Path, question: str) -> Path:
    return root / AUTO_DIR / f"{slugify(council.title_of(question), 'auto')}.md"


def create(path: Path, config: AutoConfig) -> None:
    """Start an auto record. Refuses to overwrite an existing file."""
    create_record(path, render_header(config), "resume that run or ask another question.")


def load(path: Path) -> tuple[AutoProtocol, AutoState, str]:
    """The protocol, replayed state and text of a record that can take a turn; raises on any error. A chain a
    crash left short is completed first."""
    text, problems = read_text(path)
    if text is None:
        raise ProtocolViolationError(problems)
    checked = check_text(text, path)
    errors = checked.chain.blocking_in(checked.violations)
    if checked.protocol is None or checked.state is None or errors:
        raise ProtocolViolationError(errors)
    if checked.chain.repairable:
        repair_chain(path, [entry.text for entry in checked.record.turns], checked.record.marks)
    return checked.protocol, checked.state, text


def repair(path: Path) -> bool:
    """Complete the chain of a record a crash left one append short; True when it wrote."""
    text, _ = read_text(path)
    record = parse(text, str(path)) if text is not None else None
    if record is None or record.config is None or any(v.is_error for v in record.violations):
        return False
    return repair_chain(path, [entry.text for entry in record.turns], record.marks)


def append_turns(path: Path, turns: Sequence[AutoTurn], failure: str | None = None) -> AutoState:
    """Validate ``turns`` against the record, then append them (and the outcome, if reached) in one write.

    Stage 1 and the vote are revealed this way together. ``failure`` ends an open run as FAILED with that
    reason. Raises :class:`ProtocolViolationError` on any broken rule.
    """
    try:
        return _append_turns(path, turns, failure)
    except RecordChangedError:  # written by someone else between the read and the append: check it again
        return _append_turns(path, turns, failure)


def _append_turns(path: Path, turns: Sequence[AutoTurn], failure: str | None) -> AutoState:
    stamp = FileStamp.of(path)  # before the read: a write in between shows as a changed stamp
    protocol, state, text = load(path)
    for turn in turns:
        state, _ = protocol.step(state, turn)
    if failure is not None and protocol.outcome(state) is None:
        state = protocol.failed(state, failure)
    outcome: Outcome | None = protocol.outcome(state)
    ending = [council.render_outcome(outcome.name, outcome.reason)] if outcome is not None else []
    gap = "\n" * max(0, 2 - (len(text) - len(text.rstrip("\n"))))
    staged = parse(text + gap + "\n".join([*(render_turn(turn) for turn in turns), *ending]), str(path))
    mark = [f"{ChainMark.of([entry.text for entry in staged.turns]).line()}\n"] if turns else []
    added = gap + "\n".join([*(render_turn(turn) for turn in turns), *mark, *ending])
    written = parse(text + added, str(path))
    if (
        [entry.turn for entry in written.turns[-len(turns) :] if turns] != list(turns)
        or written.violations
        or [entry.text for entry in written.turns] != [entry.text for entry in staged.turns]
    ):
        message = "the stage would not read back as written; remove control characters from its text."
        raise ProtocolViolationError([RULES.violation("AUTO_FORMAT", message)])
    before = len(written.turns) - len(turns)
    appender = RecordAppender(path, stamp, [entry.text for entry in written.turns[:before]])
    appender.append(added.encode("utf-8"), [entry.text for entry in written.turns[before:]])
    return state


FORMAT = RecordFormat(check=check, turn_heading="## ")

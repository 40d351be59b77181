"""The Council's record, ``.council/<slug>.md``: parse (total, located), render, check, crash-safe writes.

The header lists the question, the seed of the review shuffles, the members with their models,
the chairman, the quorum (a record written before the quorum was recorded has the default, 2) and the
aggregation. The aggregation line also says the record's format: with it, every answer and review has a
``- **Confidence:**`` line, which its sealed digest covers; a record without it was written before members
stated confidences, has none, and aggregates by Borda. Each stage entry is a ``## Stage N — …`` section, a turn of the record; free text
(the question, answers, the final answer and its basis) is quoted with ``> `` so that no answer can
forge a heading. A stage is written in one atomic write when it is revealed, so a record never holds
part of a sealed stage; the chain's head after it (moot.core.chain) ends that write, one Markdown
comment line outside every section's text. See docs/formats.md for a complete example.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from moot.core.chain import ChainMark, create_record
from moot.core.confidence import confidence_text, read_confidence
from moot.core.files import slugify
from moot.core.machine import TURNS_PAST_THE_END, DeliberationProtocol, Outcome, RuleBook, StateT, TurnT, sealed_digest
from moot.core.turn_record import ConfigT, Entry, Inspection, Reading, TurnRecord
from moot.errors import Violation
from moot.plugin import RecordFormat
from moot.protocols.council import PLUGIN as COUNCIL
from moot.protocols.council.machine import (
    CHAIRMAN,
    FAILED,
    NAME,
    QUORUM,
    RULES,
    Answer,
    ChairmanFailure,
    CouncilConfig,
    CouncilProtocol,
    CouncilState,
    CouncilTurn,
    Dissent,
    Member,
    Review,
    Synthesis,
    label,
    points_text,
    rounded_w,
)

COUNCIL_DIR = COUNCIL.folder
TITLE = str(COUNCIL.title)
TITLE_CHARS = 80
OUTCOME_HEADING = "## Outcome"
NOT_MEASURABLE = "not measurable"

_STAGE_HEADING = re.compile(
    r"## Stage (?P<stage>[123]) — (?P<kind>Answer of|No answer from|Review by|No review from|No synthesis from|Synthesis by) "
    r"(?P<who>\S+) \((?P<at>[^()]*)\)"
)

_FIELD = re.compile(r"- \*\*(?P<key>[^*]+):\*\*(?: (?P<value>.*))?")
_MEMBER = re.compile(r"  - (?P<name>[^:\s]+): (?P<model>\S.*)")
_RANKED = re.compile(r"(?P<place>\d+)\. \*\*(?P<label>Answer [A-Z])\*\* — (?P<reason>.*)")
_SHOWN = re.compile(r"Answer (?P<letter>[A-Z]) = (?P<member>\S+)")
_ROW = re.compile(r"\| (?P<rank>\d+) \| (?P<member>\S+) \| (?P<points>-?\d{1,9}(?:\.\d{1,9})?) \|")
_DISSENT = re.compile(r"- \*\*(?P<member>[^*]+)\*\* — Position: (?P<position>.*) — Not adopted: (?P<why>.*)")
_CHAIRMAN_SEPARATE = re.compile(rf"{CHAIRMAN} \((?P<model>.+)\)")


# --- rendering ---------------------------------------------------------------------------------


def one_line(text: str) -> str:
    """Free text squeezed into one line of the record (reasons, positions)."""
    return " ".join(text.split())


def quoted(text: str) -> str:
    """Free text as a Markdown quote: every line starts with '>' so none can be read as a heading."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n").split("\n")
    return "\n".join(f"> {line}" if line else ">" for line in lines)


def clean_text(text: str) -> str:
    """A participant's text as the record keeps it: LF line ends, no blank lines at its ends, no trailing spaces."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def title_of(question: str) -> str:
    first = one_line(question)
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1].rstrip() + "…"


def render_header(config: CouncilConfig) -> str:
    chairman = config.chairman if config.chairman_model is None else f"{CHAIRMAN} ({config.chairman_model})"
    lines = [
        f"{TITLE} {title_of(config.question)}",
        "",
        f"- **Started:** {config.started or ''}".rstrip(),
        f"- **Seed:** {config.seed}",
        "- **Members:**",
        *(f"  - {member.name}: {member.model}" for member in config.members),
        f"- **Chairman:** {chairman}",
        f"- **Quorum:** {config.quorum}",
        *([f"- **Aggregation:** {config.aggregate}"] if config.aggregate is not None else []),
        "",
        "## Question",
        "",
        quoted(config.question),
        "",
    ]
    return "\n".join(lines)


def ranking_lines(review: Review) -> str:
    """A review's ranking as the record shows it; its sealed digest covers exactly this text."""
    return "\n".join(
        f"{place}. **{entry}** — {one_line(reason)}"
        for place, (entry, reason) in enumerate(zip(review.ranking, review.reasons, strict=False), start=1)
    )


def sealed_text(turn: Answer | Review) -> str:
    """What a member sealed: its answer's text (or its review's ranking lines) and the confidence it stated, so that
    neither can change after the commitment without breaking its digest (a record from before confidences: the
    text alone, as it was sealed)."""
    return sealed_content(ranking_lines(turn) if isinstance(turn, Review) else turn.text or "", turn.confidence)


def sealed_content(text: str, confidence: float | None) -> str:
    """:func:`sealed_text` of a text and the confidence stated with it."""
    return text if confidence is None else f"{text}\n\nConfidence: {confidence_text(confidence)}"


def _confidence_line(turn: Answer | Review) -> str:
    return "" if turn.confidence is None else f"- **Confidence:** {confidence_text(turn.confidence)}\n"


def ranked_rows(ranking: Sequence[tuple[str, float]]) -> list[tuple[int, str, float]]:
    """(rank, member, points) of an aggregate ranking, best first; members tied on points share a rank."""
    return [(1 + sum(other > points for _, other in ranking), member, points) for member, points in ranking]


def render_turn(turn: CouncilTurn) -> str:
    if isinstance(turn, Answer):
        if turn.failure is not None:
            return f"## Stage 1 — No answer from {turn.member} ({turn.at or ''})\n\n- **Reason:** {one_line(turn.failure)}\n"
        return (
            f"## Stage 1 — Answer of {turn.member} ({turn.at or ''})\n\n"
            f"- **Sealed:** {turn.digest or sealed_digest(sealed_text(turn))}\n{_confidence_line(turn)}\n"
            f"{quoted(turn.text or '')}\n"
        )
    if isinstance(turn, ChairmanFailure):
        return (
            f"## Stage 3 — No synthesis from {turn.chairman} ({turn.at or ''})\n\n"
            f"- **Reason:** {one_line(turn.failure)}\n- **Fallback:** {turn.fallback}\n"
        )
    if isinstance(turn, Review):
        if turn.failure is not None:
            return f"## Stage 2 — No review from {turn.reviewer} ({turn.at or ''})\n\n- **Reason:** {one_line(turn.failure)}\n"
        shown = ", ".join(f"{label(index)} = {member}" for index, member in enumerate(turn.shown))
        ranking = ranking_lines(turn)
        return (
            f"## Stage 2 — Review by {turn.reviewer} ({turn.at or ''})\n\n- **Shown:** {shown}\n"
            f"- **Sealed:** {turn.digest or sealed_digest(sealed_text(turn))}\n{_confidence_line(turn)}\n{ranking}\n"
        )
    rows = "\n".join(
        f"| {rank} | {member} | {points_text(points)} |" for rank, member, points in ranked_rows(turn.ranking)
    )
    agreement = NOT_MEASURABLE if turn.agreement is None else f"{turn.agreement:.3f}"
    dissent = "\n".join(
        f"- **{d.member}** — Position: {one_line(d.position)} — Not adopted: {one_line(d.why_not_adopted)}"
        for d in turn.dissent
    )
    return (
        f"## Stage 3 — Synthesis by {turn.chairman} ({turn.at or ''})\n\n"
        "### Aggregate ranking\n\n| Rank | Member | Borda points |\n|---:|---|---:|\n"
        f"{rows}\n\n- **Kendall's W:** {agreement}\n\n"
        f"### Final answer\n\n{quoted(turn.answer)}\n\n### Basis\n\n{quoted(turn.basis)}\n\n"
        f"### Dissent\n\n{dissent or '- none: every answer was adopted'}\n"
    )


def render_outcome(name: str, reason: str) -> str:
    return f"{OUTCOME_HEADING}\n\n- **Result:** {name}\n- **Reason:** {one_line(reason)}\n"


# --- parsing -----------------------------------------------------------------------------------


@dataclass
class Stage(Entry[TurnT]):
    """A stage entry (its line is its heading's); the Auto record's entries are these too."""

    sealed_text: str | None = None  # what the section's Sealed digest must cover
    confidence_line: int | None = None  # the line of its '- **Confidence:**' field, where COUNCIL_CONFIDENCE points


TurnSource = Stage[CouncilTurn]


@dataclass
class StageReading(Reading[ConfigT, Stage[TurnT]]):
    """A record of stages read; ``marks`` are the chain heads moot wrote after stages."""

    outcome: tuple[str, str, int] | None = None  # (result, reason, line)
    # Sections past the most a council can hold and TURNS_PAST_THE_END more: (line, text), kept for the chain only.
    unread: list[tuple[int, str]] = field(default_factory=list)

    def chained(self) -> list[tuple[str, int]]:
        return [*super().chained(), *((text, line) for line, text in self.unread)]


CouncilRecord = StageReading[CouncilConfig, CouncilTurn]


def _problem(record: CouncilRecord, rule: str, message: str, line: int, file: str | None) -> None:
    record.violations.append(RULES.violation(rule, message).at(file=file, line=line))


def _unquote(lines: Sequence[str]) -> str | None:
    if not lines or not all(line.startswith(">") for line in lines):
        return None
    return "\n".join(line[2:] if line.startswith("> ") else line[1:] for line in lines)


def _sections(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) line indexes of every '## ' section (end exclusive)."""
    starts = [index for index, line in enumerate(lines) if line.startswith("## ")]
    return [(start, starts[i + 1] if i + 1 < len(starts) else len(lines)) for i, start in enumerate(starts)]


def _fields(body: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in body:
        match = _FIELD.fullmatch(line)
        if match:
            found.setdefault(match["key"], (match["value"] or "").strip())
    return found


def parse(text: str, file: str | None = None) -> CouncilRecord:
    """Read a council record. Never raises: problems are located violations in ``violations``."""
    lines = text.replace("\r\n", "\n").split("\n")
    record = CouncilRecord(config=None)
    sections = _sections(lines)
    header_end = sections[0][0] if sections else len(lines)
    record.config = _parse_header(record, lines, header_end, sections, file)
    # Each member answers and reviews once, then a chairman's failure and the synthesis: any section past that
    # is out of place; a few are read, the rest only kept for the chain.
    read_up_to = (2 * len(record.config.members) + 2 if record.config else 0) + TURNS_PAST_THE_END
    seen = 0
    for start, end in sections:
        heading = lines[start]
        if heading == "## Question":
            continue
        if heading != OUTCOME_HEADING and seen >= read_up_to:
            record.unread.append((start + 1, _section_text(record, lines, start, end)))
            continue
        seen += heading != OUTCOME_HEADING
        if heading == OUTCOME_HEADING:
            fields = _fields(lines[start + 1 : end])
            if "Result" not in fields:
                _problem(record, "COUNCIL_FORMAT", "the outcome section has no '- **Result:**' line.", start + 1, file)
            record.outcome = (fields.get("Result", ""), fields.get("Reason", ""), start + 1)
            continue
        if record.outcome is not None:
            _problem(record, "COUNCIL_OUTCOME", "the outcome section must be the last section.", start + 1, file)
        source = _parse_turn(record, lines, start, end, file)
        if source is not None:
            record.turns.append(source)
    return record


def _parse_header(
    record: CouncilRecord, lines: list[str], end: int, sections: list[tuple[int, int]], file: str | None
) -> CouncilConfig | None:
    def bad(message: str, line: int = 1) -> None:
        _problem(record, "COUNCIL_HEADER", message, line, file)

    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    if not lines[first].startswith(TITLE + " "):
        bad(f"the record must start with '{TITLE} <title>'.", first + 1)
        return None
    head = lines[first + 1 : end]
    fields = _fields(head)
    members: list[Member] = []
    for line in head:
        match = _MEMBER.fullmatch(line)
        if match:
            members.append(Member(name=match["name"], model=match["model"].strip()))
    question = next(
        (
            _unquote([line for line in lines[s + 1 : e] if line.strip()])
            for s, e in sections
            if lines[s] == "## Question"
        ),
        None,
    )
    missing = [key for key in ("Seed", "Members", "Chairman") if key not in fields]
    if missing or question is None:
        what = ", ".join(missing + (["a quoted '## Question' section"] if question is None else []))
        bad(f"the header lacks {what}.", first + 1)
        return None
    if not fields["Seed"].isdigit() or len(fields["Seed"]) > 20:
        bad(f"the seed {fields['Seed']!r} must be a whole number.", first + 1)
        return None
    quorum = fields.get("Quorum", str(QUORUM))
    aggregate = fields.get("Aggregation")
    if not quorum.isdigit() or len(quorum) > 3:
        bad(f"the quorum {quorum!r} must be a whole number.", first + 1)
        return None
    separate = _CHAIRMAN_SEPARATE.fullmatch(fields["Chairman"])
    config = CouncilConfig(
        question=question,
        members=tuple(members),
        chairman=CHAIRMAN if separate else fields["Chairman"],
        chairman_model=separate["model"] if separate else None,
        seed=int(fields["Seed"]),
        started=fields.get("Started") or None,
        quorum=int(quorum),
        aggregate=aggregate,
    )
    problems = config.problems()
    if problems:
        bad("; ".join(problems) + ".", first + 1)
        return None
    return config


def _section_text(record: CouncilRecord, lines: list[str], start: int, end: int) -> str:
    """A section's exact text, which the digest chain covers; the chain's head after a stage ends its last section
    but is not part of it (it goes to ``record.marks``)."""
    while end > start + 1:
        mark = ChainMark.parse(lines[end - 1])
        if lines[end - 1] and mark is None:
            break
        record.marks += [mark] if mark is not None else []
        end -= 1
    return "\n".join(lines[start:end]).rstrip("\n") + "\n"


def _parse_turn(record: CouncilRecord, lines: list[str], start: int, end: int, file: str | None) -> TurnSource | None:
    heading = _STAGE_HEADING.fullmatch(lines[start])
    line = start + 1
    text = _section_text(record, lines, start, end)
    end = start + text.count("\n")

    def bad(message: str) -> None:
        _problem(record, "COUNCIL_FORMAT", message, line, file)

    if heading is None:
        bad(f"{lines[start]!r} is not a council section; see docs/formats.md.")
        return None
    body = lines[start + 1 : end]
    fields = _fields(body)
    who, at, kind = heading["who"], heading["at"] or None, heading["kind"]
    expected_stage = {"Answer of": "1", "No answer from": "1", "Review by": "2", "No review from": "2"}.get(kind, "3")
    if kind == "No synthesis from":
        if not fields.get("Reason") or not fields.get("Fallback"):
            bad("a chairman's failure gives its '- **Reason:**' and the '- **Fallback:**' member who writes instead.")
            return None
        return TurnSource(
            ChairmanFailure(chairman=who, at=at, failure=fields["Reason"], fallback=fields["Fallback"]), line, text
        )
    if heading["stage"] != expected_stage:
        bad(f"'{kind}' belongs to stage {expected_stage}.")
        return None
    if kind in ("No answer from", "No review from"):
        reason = fields.get("Reason", "")
        if not reason:
            bad("a stage entry without an answer gives its '- **Reason:**'.")
            return None
        if kind == "No answer from":
            return TurnSource(Answer(member=who, at=at, failure=reason), line, text)
        return TurnSource(Review(reviewer=who, at=at, failure=reason), line, text)
    if kind == "Synthesis by":
        return _parse_synthesis(who, at, body, line, text, bad)
    confidence, confidence_line = _stated_confidence(body, line, fields)
    if confidence_line is not None and confidence is None:
        _problem(
            record,
            "COUNCIL_FORMAT",
            f"the confidence {fields['Confidence']!r} is not a number; write one from 0.0 to 1.0, like 0.8.",
            confidence_line,
            file,
        )
        return None
    if kind == "Answer of":
        quote = [row for row in body if row.startswith(">")]
        answer = _unquote(quote)
        if answer is None or not answer.strip() or "Sealed" not in fields:
            bad("an answer has a '- **Sealed:**' digest and its text quoted with '> '.")
            return None
        turn = Answer(member=who, at=at, text=answer, digest=fields["Sealed"], confidence=confidence)
        return TurnSource(turn, line, text, sealed_text(turn), confidence_line)
    source = _parse_review(who, at, body, fields, line, text, bad, confidence)
    return None if source is None else replace(source, confidence_line=confidence_line)


def _stated_confidence(body: Sequence[str], line: int, fields: dict[str, str]) -> tuple[float | None, int | None]:
    """The confidence a section states and the line of its field ((None, None) when it states none); the value is
    None when the field is not a number."""
    if "Confidence" not in fields:
        return None, None
    index = next(i for i, row in enumerate(body) if _FIELD.fullmatch(row) and row.startswith("- **Confidence:**"))
    return read_confidence(fields["Confidence"]), line + 1 + index


def _parse_review(who, at, body, fields, line, text, bad, confidence) -> TurnSource | None:  # type: ignore[no-untyped-def]
    if "Shown" not in fields or "Sealed" not in fields:
        bad("a review has '- **Shown:**' and '- **Sealed:**' lines.")
        return None
    shown: list[str] = []
    for index, part in enumerate(p.strip() for p in fields["Shown"].split(",") if p.strip()):
        match = _SHOWN.fullmatch(part)
        if match is None or match["letter"] != label(index)[-1]:
            bad(f"'{part}' in Shown is not '{label(index)} = MEMBER'.")
            return None
        shown.append(match["member"])
    ranked = [row for row in body if re.match(r"\d+\. ", row)]
    matches = [_RANKED.fullmatch(row) for row in ranked]
    if any(m is None for m in matches) or [int(m["place"]) for m in matches if m] != list(range(1, len(ranked) + 1)):
        bad("a review ranks with lines '1. **Answer X** — reason', numbered from 1.")
        return None
    review = Review(
        reviewer=who,
        at=at,
        shown=tuple(shown),
        ranking=tuple(m["label"] for m in matches if m),
        reasons=tuple(m["reason"].strip() for m in matches if m),
        digest=fields["Sealed"],
        confidence=confidence,
    )
    return TurnSource(review, line, text, sealed_content("\n".join(ranked), confidence))


def _subsections(body: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for row in body:
        if row.startswith("### "):
            current = found.setdefault(row[4:].strip(), [])
        elif current is not None and row.strip():
            current.append(row)
    return found


def _parse_synthesis(who, at, body, line, text, bad) -> TurnSource | None:  # type: ignore[no-untyped-def]
    parts = _subsections(body)
    needed = ("Aggregate ranking", "Final answer", "Basis", "Dissent")
    if any(name not in parts for name in needed):
        bad(f"a synthesis has the subsections {', '.join(needed)}.")
        return None
    rows = [_ROW.fullmatch(row) for row in parts["Aggregate ranking"] if row.startswith("| ") and row[2:3].isdigit()]
    agreement_field = _fields(parts["Aggregate ranking"]).get("Kendall's W")
    answer, basis = _unquote(parts["Final answer"]), _unquote(parts["Basis"])
    if any(r is None for r in rows) or agreement_field is None or answer is None or basis is None:
        bad("a synthesis has its ranking table, a '- **Kendall's W:**' line and its answer and basis quoted.")
        return None
    try:
        agreement = None if agreement_field == NOT_MEASURABLE else float(agreement_field)
    except ValueError:
        bad(f"Kendall's W {agreement_field!r} is neither a number nor '{NOT_MEASURABLE}'.")
        return None
    dissent: list[Dissent] = []
    for row in parts["Dissent"]:
        if row.startswith("- none"):
            continue
        match = _DISSENT.fullmatch(row)
        if match is None:
            bad(f"{row!r} is not '- **MEMBER** — Position: … — Not adopted: …'.")
            return None
        dissent.append(Dissent(member=match["member"], position=match["position"], why_not_adopted=match["why"]))
    synthesis = Synthesis(
        chairman=who,
        at=at,
        ranking=tuple((r["member"], float(r["points"]) if "." in r["points"] else int(r["points"])) for r in rows if r),
        agreement=agreement,
        answer=answer,
        basis=basis,
        dissent=tuple(dissent),
    )
    return TurnSource(synthesis, line, text)


# --- checking ----------------------------------------------------------------------------------


class StageTurns(TurnRecord[ConfigT, TurnT, StateT, Stage[TurnT]]):
    """A record of stages (the council's, and the Auto record that holds one) as a
    :class:`~moot.core.turn_record.TurnRecord`: each stage entry is a turn, a sealed stage is appended whole."""

    rules: RuleBook
    outcome_rule: str
    ended: str  # "… ended in SYNTHESIZED but has no outcome section"
    decided_by: str  # "the outcome says X, but … say Y"

    @abstractmethod
    def failed(self, protocol: DeliberationProtocol[TurnT, StateT], state: StateT, reason: str) -> StateT: ...

    def render_outcome(self, outcome: Outcome) -> str:
        return render_outcome(outcome.name, outcome.reason)

    def line_of(self, entry: Stage[TurnT], violation: Violation) -> int:
        """The confidence's own line for COUNCIL_CONFIDENCE (where the turn states one), else the turn's heading."""
        if violation.rule == "COUNCIL_CONFIDENCE" and entry.confidence_line is not None:
            return entry.confidence_line
        return entry.line

    def settle(
        self,
        reading: Reading[ConfigT, Stage[TurnT]],
        protocol: DeliberationProtocol[TurnT, StateT],
        state: StateT,
        file: str,
    ) -> tuple[list[Violation], StateT]:
        """Each sealed text against its digest, the outcome section against the stages, and sections past the end."""
        assert isinstance(reading, StageReading)
        found: list[Violation] = []
        for number, source in enumerate(reading.turns, start=1):
            digest = getattr(source.turn, "digest", None)
            if source.sealed_text is not None and digest != sealed_digest(source.sealed_text):
                found.append(
                    RULES.violation(
                        "COUNCIL_SEALED", "the text differs from the digest committed when it was sealed.", turn=number
                    ).at(file=file, line=source.line)
                )
        outcome_problem, state = self._outcome(protocol, state, reading)
        if outcome_problem is not None:
            found.append(outcome_problem.at(file=file))
        if reading.unread:
            assert isinstance(reading.config, CouncilConfig)
            message = (
                f"{len(reading.unread):,} more sections, from this line on, also come after the last one a council "
                f"of {len(reading.config.members)} members can hold; remove them."
            )
            found.append(RULES.violation("COUNCIL_STAGE_ORDER", message).at(file=file, line=reading.unread[0][0]))
        return found, state

    def _outcome(
        self, protocol: DeliberationProtocol[TurnT, StateT], state: StateT, reading: StageReading[ConfigT, TurnT]
    ) -> tuple[Violation | None, StateT]:
        computed = protocol.outcome(state)
        written = reading.outcome
        if written is None:
            if computed is None:
                return None, state
            line = reading.turns[-1].line if reading.turns else 1
            message = f"{self.ended} ended in {computed.name} but has no outcome section."
            return self.rules.violation(self.outcome_rule, message).at(line=line), state
        result, reason, line = written
        if computed is None and result == FAILED:
            return None, self.failed(protocol, state, reason)
        if computed is None or result != computed.name:
            expected = "still open (or FAILED)" if computed is None else computed.name
            message = f"the outcome says {result}, but {self.decided_by} say {expected}."
            return self.rules.violation(self.outcome_rule, message).at(line=line), state
        return None, state


class CouncilTurns(StageTurns[CouncilConfig, CouncilTurn, CouncilState]):
    protocol_name = NAME
    format_rule = RULES.violation(
        "COUNCIL_FORMAT", "the stage would not read back as written; remove control characters from its text."
    )
    rules = RULES
    outcome_rule = "COUNCIL_OUTCOME"
    ended = "the council"
    decided_by = "the stages"

    def read(self, text: str, file: str) -> CouncilRecord:
        return parse(text, file)

    def protocol(self, config: CouncilConfig) -> CouncilProtocol:
        return CouncilProtocol(config)

    def render_turn(self, turn: CouncilTurn) -> str:
        return render_turn(turn)

    def failed(
        self, protocol: DeliberationProtocol[CouncilTurn, CouncilState], state: CouncilState, reason: str
    ) -> CouncilState:
        assert isinstance(protocol, CouncilProtocol)
        return protocol.failed(state, reason)


RECORD = CouncilTurns()
Checked = Inspection[CouncilConfig, CouncilTurn, CouncilState, TurnSource]


def check_text(text: str, path: Path) -> Checked:
    """The record read, replayed and held against its chain."""
    return RECORD.inspect(text, path)


# --- writing -----------------------------------------------------------------------------------


def council_path(root: Path, question: str) -> Path:
    return root / COUNCIL_DIR / f"{slugify(title_of(question), 'council')}.md"


def create(path: Path, config: CouncilConfig) -> None:
    """Start a council record. Refuses to overwrite an existing file."""
    create_record(path, render_header(config), "resume that council or ask another question.")


def load(path: Path) -> tuple[CouncilProtocol, CouncilState, str]:
    """The protocol, replayed state and text of a record that can take a stage (:meth:`TurnRecord.load`)."""
    protocol, state, text = RECORD.load(path)
    assert isinstance(protocol, CouncilProtocol)
    return protocol, state, text


def append_turns(path: Path, turns: Sequence[CouncilTurn], failure: str | None = None) -> CouncilState:
    """Validate ``turns`` against the record, then append them (and the outcome, if reached) in one write.

    A sealed stage is revealed this way: all its entries appear together or none do. ``failure`` ends an
    open council as FAILED with that reason. Raises :class:`ProtocolViolationError` on any broken rule.
    """
    return RECORD.append(path, turns, failure)


def agreement_text(value: float | None) -> str:
    rounded = rounded_w(value)
    return NOT_MEASURABLE if rounded is None else f"{rounded:.3f}"


check = RECORD.check
repair = RECORD.repair
FORMAT = RecordFormat(check=check, turn_heading="## Stage ")

"""Properties: any generated record survives render -> parse unchanged; any text or bytes give typed results.

Example counts are kept modest for the shared CI cores: 200 per property (150 where a file is written).
"""

from __future__ import annotations

import string
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moot.core.files import FILE_RULES, CheckReport, decode_text
from moot.detect import check_path
from moot.errors import Violation
from moot.protocols.duel.machine import (
    MAX_TURNS,
    OUTCOMES,
    RULES,
    STANCES,
    Counterpoint,
    DuelConclusion,
    DuelConfig,
    DuelProtocol,
    DuelTurn,
    Participant,
    Support,
    UnresolvedItem,
)
from moot.protocols.duel.record import FORMAT_RULES, DuelRecord, parse, render, slugify

EXAMPLE = (Path(__file__).parent / "examples" / "valid" / "consensus-six-turns.md").read_text(encoding="utf-8")
KNOWN_RULES = {rule.id for book in (RULES, FORMAT_RULES, FILE_RULES) for rule in book}
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Words never look like Markdown structure: no leading '-', '*', '#', '|', no ':' or parentheses.
word = st.text(
    alphabet=st.one_of(
        st.sampled_from(string.ascii_letters + string.digits + ".,;'?!§"),
        st.characters(categories=["L"], max_codepoint=0x2FFF),
    ),
    min_size=1,
    max_size=8,
)
line = st.lists(word, min_size=1, max_size=8).map(" ".join)
maybe_line = st.one_of(st.just(""), line)
paragraph = st.lists(line, min_size=0, max_size=3).flatmap(
    lambda lines: st.sampled_from(["\n", "\n\n"]).map(lambda sep: sep.join(lines))
)
identifier = st.text(alphabet=string.ascii_lowercase + string.digits + "-_.", min_size=1, max_size=10)
model_name = st.text(alphabet=string.ascii_letters + string.digits + "-_./", min_size=1, max_size=12)
source_path = st.lists(identifier, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts) + ".md")


@st.composite
def support_text(draw: st.DrawFn, source: str) -> str:
    kind = draw(st.sampled_from(["url", "source", "turn", "principle", "free"]))
    text = draw(line)
    return {
        "url": f"https://example.org/{draw(identifier)}",
        "source": f'`{source}` line {draw(st.integers(1, 999))}: "{text}"',
        "turn": f"Turn {draw(st.integers(0, 9))}",
        "principle": f"Principle: {text}",
        "free": text,
    }[kind]


@st.composite
def supports(draw: st.DrawFn, source: str) -> list[Support]:
    texts = draw(st.lists(st.one_of(support_text(source), st.just("")), max_size=3))
    return [Support.of(text, source) for text in texts]


@st.composite
def turns(draw: st.DrawFn, source: str, people: list[Participant]) -> DuelTurn:
    who = draw(st.sampled_from(people)) if people else Participant(name=draw(identifier), harness="h", model="m")
    return DuelTurn(
        number=draw(st.integers(0, 12)),
        participant=who.name,
        harness=who.harness,
        model=who.model,
        stance=draw(st.one_of(st.sampled_from(sorted(STANCES)), st.from_regex(r"[A-Z_]{1,12}", fullmatch=True))),
        position=draw(paragraph),
        counterpoints=draw(
            st.lists(
                st.builds(
                    Counterpoint,
                    addresses=st.one_of(maybe_line, st.integers(1, 9).map(lambda n: f"Turn {n}")),
                    claim=maybe_line,
                    support=supports(source),
                ),
                max_size=3,
            )
        ),
        agreements=draw(st.lists(maybe_line, max_size=3)),
        novel_argument=draw(paragraph),
        novel_support=draw(supports(source)),
        unresolved=draw(st.lists(st.builds(UnresolvedItem, text=maybe_line, blocking=st.booleans()), max_size=3)),
        stance_revision_support=draw(st.lists(maybe_line, max_size=2)),
    )


@st.composite
def records(draw: st.DrawFn) -> DuelRecord:
    source = draw(source_path)
    topic = draw(line)
    config = DuelConfig(
        duel_id=draw(identifier),
        source_path=source,
        topic=topic,
        topic_slug=slugify(topic),
        max_turns=draw(st.integers(1, MAX_TURNS)),  # DuelConfig refuses more
        created=draw(line),
    )
    names = draw(st.lists(identifier, max_size=2, unique=True))
    people = [
        Participant(name=n, harness=draw(identifier), model=draw(model_name), joined=draw(maybe_line)) for n in names
    ]
    conclusion = draw(
        st.one_of(
            st.none(),
            st.builds(
                DuelConclusion,
                outcome=st.one_of(st.sampled_from(sorted(OUTCOMES)), line),
                closed_at=maybe_line,
                candidate_convergence=st.one_of(st.none(), st.booleans()),
                reason=maybe_line,
                summary=paragraph,
            ),
        )
    )
    return DuelRecord(
        config=config,
        participants=people,
        turns=draw(st.lists(turns(source, people), max_size=4)),
        conclusion=conclusion,
    )


def assert_typed(record: object, violations: list[Violation], text: str) -> None:
    assert record is None or isinstance(record, DuelRecord)
    assert isinstance(violations, list)
    last = text.count("\n") + 1
    for violation in violations:
        assert isinstance(violation, Violation) and violation.rule in KNOWN_RULES
        assert violation.line is None or 1 <= violation.line <= last


@PROPERTY
@given(records())
def test_render_then_parse_round_trips(record: DuelRecord) -> None:
    text = render(record)
    parsed, problems = parse(text, "generated.md")
    assert problems == []
    # A turn past the duel's limit is read for its place only: its heading, none of its sections.
    limit = record.config.max_turns
    assert parsed is not None and parsed.model_copy(update={"turns": parsed.turns[:limit]}) == record.model_copy(
        update={"turns": record.turns[:limit]}
    )
    for late, written in zip(parsed.turns[limit:], record.turns[limit:], strict=True):
        assert (late.number, late.participant, late.stance) == (written.number, written.participant, written.stance)
        assert late.position == "" and late.counterpoints == []
    # The protocol replays any such record without raising.
    DuelProtocol(record.config, record.participants).replay(record.turns)


@PROPERTY
@given(st.text(max_size=3000))
def test_arbitrary_text_gives_a_record_or_located_violations(text: str) -> None:
    record, violations = parse(text, "fuzz.md")
    assert_typed(record, violations, text)
    assert record is not None or violations


@PROPERTY
@given(st.text(max_size=400).map(lambda tail: "# Socratic Duel: fuzz\n" + tail))
def test_text_under_a_duel_title_always_gives_a_record(text: str) -> None:
    record, violations = parse(text, "fuzz.md")
    assert isinstance(record, DuelRecord)
    assert_typed(record, violations, text)


@PROPERTY
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_give_typed_results(data: bytes) -> None:
    text, problems = decode_text(data, "fuzz.md")
    if text is None:
        assert problems and problems[0].rule in KNOWN_RULES
        return
    record, violations = parse(text, "fuzz.md")
    assert_typed(record, violations, text)


@st.composite
def mutated_example(draw: st.DrawFn) -> str:
    """The complete example with lines deleted, duplicated, swapped or replaced."""
    lines = EXAMPLE.split("\n")
    for _ in range(draw(st.integers(1, 6))):
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "insert"]))
        if action == "delete":
            del lines[index]
        elif action == "duplicate":
            lines.insert(index, lines[index])
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        else:
            noise = draw(st.one_of(st.text(max_size=40), st.sampled_from(["---", "## Turn 9", "**Position**", "- x"])))
            if action == "replace":
                lines[index] = noise
            else:
                lines.insert(index, noise)
    return "\n".join(lines)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_example())
def test_damaged_records_are_checked_without_raising(text: str) -> None:
    record, violations = parse(text, "damaged.md")
    assert_typed(record, violations, text)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "damaged.md"
        path.write_text(text, encoding="utf-8")
        report = check_path(path)
    assert isinstance(report, CheckReport)
    assert all(v.rule in KNOWN_RULES for v in report.violations)

"""Properties: every record moot can render reads back identically; no input makes reading raise."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moot.core.files import FILE_RULES, CheckReport, decode_text
from moot.errors import Violation
from moot.protocols.critique.machine import (
    RULES,
    TEMPLATES,
    CritiqueConfig,
    CritiqueTurn,
    StatusKind,
    is_turn_header,
    join_summary,
    normalize_text,
    split_summary,
)
from moot.protocols.critique.record import CritiqueRecord, check, parse, render, slugify

EXAMPLES = Path(__file__).parent / "examples"
SEEDS = sorted((EXAMPLES / "valid").glob("*.md"))

one_line = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=30)
role_names = st.from_regex(r"[^\s\[\]()@]+", fullmatch=True).filter(lambda r: len(r) < 20)
timestamps = st.datetimes(datetime(1000, 1, 1), datetime(9999, 12, 31)).map(lambda d: d.strftime("%Y-%m-%d %H:%M"))
# Lines meant to land on the format's edges, mixed with arbitrary text.
tricky_lines = st.sampled_from(
    [
        "",
        " ",
        "---",
        "-----",
        "Status: DONE",
        "Status: the build is green",
        "Summary: x",
        "**Summary:** y",
        "# Dialogue: z",
    ]
)
bodies = st.lists(st.one_of(tricky_lines, one_line), max_size=8).flatmap(
    lambda lines: st.sampled_from(["\n", "\r\n", "\r"]).map(lambda brk: brk.join(lines))
)


@st.composite
def configs(draw: st.DrawFn) -> CritiqueConfig:
    template = draw(st.sampled_from(["planning", "review", "pair", "custom"]))
    if template == "custom":
        first = draw(role_names)
        roles = (first, draw(role_names.filter(lambda r: r != first)))
    else:
        roles = TEMPLATES[template][:2]
    return CritiqueConfig(
        topic=draw(one_line.filter(lambda t: t.strip() != "")),
        roles=roles,
        template=template,
        max_rounds=draw(st.integers(1, 1000)),
        started=draw(timestamps),
        directory=draw(st.none() | one_line),
    )


@st.composite
def turns(draw: st.DrawFn, roles: tuple[str, str]) -> CritiqueTurn:
    status = draw(st.sampled_from(list(StatusKind)))
    message, summary = normalize_text(draw(bodies)), None
    if status is StatusKind.DONE:
        given_summary = draw(st.none() | bodies.map(normalize_text))
        message, summary = split_summary(join_summary(message, given_summary or None))
    return CritiqueTurn(
        role=draw(st.sampled_from(roles) | one_line.filter(lambda r: "]" not in r)),
        round=draw(st.integers(0, 999_999_999)),
        timestamp=draw(timestamps | one_line),
        message=message,
        status=status,
        awaiting=draw(st.sampled_from(roles) | one_line) if status is StatusKind.AWAITING else None,
        summary=summary,
    )


@st.composite
def records(draw: st.DrawFn) -> CritiqueRecord:
    config = draw(configs())
    drawn = draw(st.lists(turns(config.roles), max_size=5))
    # A message holding a turn header line is refused by the protocol (CRITIQUE_TURN_HEADER)
    # before it is ever written, so it is no record moot renders.
    kept = tuple(t for t in drawn if not any(is_turn_header(line) for line in t.body.split("\n")))
    return CritiqueRecord(config=config, turns=kept)


def assert_typed(violations: list[Violation]) -> None:
    for violation in violations:
        assert isinstance(violation, Violation)
        assert violation.rule in RULES or violation.rule in FILE_RULES
        assert violation.message


# 250 generated records per run.
@settings(max_examples=250, deadline=None)
@given(records())
def test_parse_of_render_is_identity(record: CritiqueRecord) -> None:
    assert parse(render(record), "x.md") == (record, [])


# 300 arbitrary strings, plus 300 that start like a dialogue so the turn reader is reached.
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400) | st.text(max_size=400).map(lambda t: "# Dialogue: t\n" + t))
def test_parse_is_total_on_any_text(text: str) -> None:
    record, violations = parse(text, "x.md")
    assert record is None or isinstance(record, CritiqueRecord)
    assert_typed(violations)
    assert record is not None or any(v.is_error for v in violations)


def _mutate(text: str, data: st.DataObject) -> str:
    lines = text.split("\n")
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(lines)))
        action = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = data.draw(
            st.one_of(tricky_lines, one_line, st.sampled_from(["## [critic] Round 9 — x", "Max rounds: 0"]))
        )
        if action == "insert" or not lines:
            lines.insert(index, piece)
        elif action == "delete":
            del lines[min(index, len(lines) - 1)]
        else:
            lines[min(index, len(lines) - 1)] = piece
    return "\n".join(lines)


def _check_text(data: bytes) -> CheckReport:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "d.md"
        path.write_bytes(data)
        return check(path)


# 150 mutated real records (lines inserted, deleted, replaced) checked from disk.
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_check_is_total_on_damaged_records(data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(SEEDS)).read_text(encoding="utf-8")
    report = _check_text(_mutate(seed, data).encode("utf-8"))
    assert_typed(report.violations)
    assert report.protocol == "critique"
    for violation in report.violations:
        assert violation.line is None or violation.line >= 1


# 150 arbitrary byte strings: decoding and checking never raise.
@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300) | st.binary(max_size=300).map(lambda b: b"# Dialogue: t\n" + b))
def test_check_is_total_on_any_bytes(data: bytes) -> None:
    text, problems = decode_text(data, "x.md")
    assert_typed(problems)
    if text is not None:
        assert_typed(parse(text, "x.md")[1])
    assert_typed(_check_text(data).violations)


# 300 topics: the slug is always one safe, non-empty file name.
@settings(max_examples=300)
@given(st.text())
def test_slug_is_always_a_safe_file_name(topic: str) -> None:
    slug = slugify(topic)
    assert slug and slug not in {".", ".."} and "/" not in slug and "\\" not in slug and "\x00" not in slug
    assert not slug.startswith(("-", ".")) and len(slug.encode()) <= 120

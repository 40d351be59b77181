"""The dialogue file: exact rendering, tolerant located parsing, crash-safe writes with a digest chain."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from moot.core.chain import chain_path, marks_of
from moot.core.files import ExitCode
from moot.detect import check_path
from moot.errors import ProtocolViolationError, Violation
from moot.protocols.critique.machine import CritiqueConfig, CritiqueTurn, StatusKind
from moot.protocols.critique.record import (
    CritiqueRecord,
    append_turn,
    check,
    create,
    dialogue_path,
    extend,
    parse,
    render,
    render_header,
    render_marked,
    render_turn,
    slugify,
    turn_sources,
)

CONFIG = CritiqueConfig.from_template(
    "planning", topic="API design", started="2026-01-31 14:00", directory="/home/dev/api"
)
P1 = CritiqueTurn(
    role="proposer", round=1, timestamp="2026-01-31 14:05", message="Use REST.", status=StatusKind.AWAITING,
    awaiting="critic",
)  # fmt: skip
C1 = CritiqueTurn(
    role="critic", round=1, timestamp="2026-01-31 14:09", message="Pagination?", status=StatusKind.PROPOSING_DONE
)
RECORD = CritiqueRecord(config=CONFIG, turns=(P1, C1))


def rules(violations: Sequence[Violation]) -> list[tuple[str, int | None]]:
    return [(v.rule, v.line) for v in violations]


# --- rendering ---------------------------------------------------------------------------------


def test_header_is_the_architecture_documents_block() -> None:
    assert render_header(CONFIG) == (
        "# Dialogue: API design\n"
        "Started: 2026-01-31 14:00\n"
        "Template: planning\n"
        "Max rounds: 5\n"
        "\n"
        "Participants:\n"
        "  - proposer @ /home/dev/api\n"
        "  - critic (partner)\n"
        "\n"
        "---\n"
    )
    custom = CritiqueConfig.custom(("architect", "skeptic"), topic="Queues", started="2026-01-31 14:00")
    assert "Template:" not in render_header(custom)  # the seed writes it only for templates
    assert "  - architect\n" in render_header(custom)


def test_turn_is_rule_2_of_the_participant_instructions() -> None:
    done = CritiqueTurn(
        role="critic", round=5, timestamp="2026-01-31 15:00", message="Agreed.", status=StatusKind.DONE,
        summary="REST with cursor pagination.",
    )  # fmt: skip
    assert render_turn(done) == (
        "---\n\n## [critic] Round 5 — 2026-01-31 15:00\n\nAgreed.\n\n"
        "Summary: REST with cursor pagination.\n\nStatus: DONE\n"
    )
    assert render_turn(P1).endswith("Use REST.\n\nStatus: AWAITING critic\n")


def test_parse_reads_back_what_render_wrote() -> None:
    assert parse(render(RECORD), "x.md") == (RECORD, [])


# --- tolerant, located reading -----------------------------------------------------------------


def test_crlf_blank_lines_and_trailing_spaces_are_tolerated() -> None:
    text = render(RECORD).replace("\n\n", "\n\n\n").replace("\n", "  \r\n")
    record, violations = parse(text, "x.md")
    assert violations == [] and record == RECORD


def test_seed_header_with_blank_line_after_title_is_accepted() -> None:
    text = render(RECORD).replace("# Dialogue: API design\n", "# Dialogue: API design\n\n", 1)
    assert parse(text)[0] == RECORD


def test_header_problems_are_located() -> None:
    text = render(RECORD)
    cases = {
        "Template: planning": ("Template: brainstorm", 3),
        "Max rounds: 5": ("Max rounds: many", 4),
        "Started: 2026-01-31 14:00": ("Started: today", 2),
        "  - critic (partner)": ("  - critic", 8),
        "  - proposer @": ("  - proposer critic @", 7),
    }
    for old, (new, line) in cases.items():
        record, violations = parse(text.replace(old, new, 1), "x.md")
        assert record is None and rules(violations) == [("CRITIQUE_RECORD_HEADER", line)], new


def test_turn_problems_are_located() -> None:
    text = render(RECORD)
    lines = text.split("\n")
    critic_header = lines.index("## [critic] Round 1 — 2026-01-31 14:09") + 1
    cases = {
        "## [critic] Round 1 — ": ("## [critic] Round 1 – ", critic_header),  # en dash
        "## [critic] Round 1 —": ("## [critic] Round one —", critic_header),
        "## [critic]": ("### [critic]", critic_header),
        "Status: PROPOSING_DONE": ("Status: FINISHED", critic_header + 4),
    }
    for old, (new, line) in cases.items():
        _, violations = parse(text.replace(old, new, 1), "x.md")
        assert rules(violations) in (
            [("CRITIQUE_TURN_HEADER", line)],
            [("CRITIQUE_STATUS_VALUE", line)],
        ), new
    # A turn whose Status line is missing: reported where the turn ends.
    _, violations = parse(text.replace("\nStatus: PROPOSING_DONE\n", "\n"), "x.md")
    assert rules(violations) == [("CRITIQUE_STATUS_LAST", critic_header + 2)]
    # Two turns without the '---' between them.
    _, violations = parse(text.replace("---\n\n## [critic]", "## [critic]"), "x.md")
    assert rules(violations) == [("CRITIQUE_TURN_HEADER", critic_header - 2)]


def test_text_outside_any_turn_is_reported() -> None:
    text = render(RECORD).replace("---\n\n---\n", "---\n\nsome notes\n\n---\n", 1)
    _, violations = parse(text, "x.md")
    assert rules(violations) == [("CRITIQUE_TURN_HEADER", 12)]
    assert text.split("\n")[11] == "some notes"


def test_not_a_dialogue() -> None:
    record, violations = parse("hello\n", "x.md")
    assert record is None and rules(violations)[0] == ("CRITIQUE_RECORD_HEADER", 1)


def test_missing_participants_make_the_record_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "d.md"
    path.write_text("# Dialogue: x\nStarted: 2026-01-31 14:00\nMax rounds: 5\n\n---\n", encoding="utf-8")
    report = check(path)
    assert report.exit_code is ExitCode.UNREADABLE and report.summary is None
    assert [v.rule for v in report.violations] == ["CRITIQUE_RECORD_HEADER"]


def test_turn_sources_keep_the_exact_text_and_first_line() -> None:
    text = render(RECORD).replace("\n", "\r\n")
    first, second = turn_sources(text)
    assert (
        first.line == 14
        and first.text == "## [proposer] Round 1 — 2026-01-31 14:05\r\n\r\nUse REST.\r\n\r\nStatus: AWAITING critic"
    )
    assert text.split("\r\n")[second.line - 1] == "## [critic] Round 1 — 2026-01-31 14:09"


# --- writing -----------------------------------------------------------------------------------


def test_create_then_append_writes_the_rendered_record(tmp_path: Path) -> None:
    path = dialogue_path(tmp_path, "API design")
    create(path, CONFIG)
    append_turn(path, P1)
    appended = append_turn(path, C1)
    # Each turn is followed by the chain's head after it, a comment line outside the turn.
    marks = marks_of([source.text for source in turn_sources(render(RECORD))])
    marked = render_header(CONFIG) + "".join(
        f"\n{render_marked(t, m)}" for t, m in zip(RECORD.turns, marks, strict=True)
    )
    assert path.read_text(encoding="utf-8") == marked
    assert parse(marked)[0] == RECORD
    assert appended.warnings == [] and appended.state.turns == 2
    report = check_path(path)
    assert report.exit_code is ExitCode.VALID and report.summary is not None
    assert report.summary.next_speaker == "proposer"


def test_create_refuses_an_existing_record_and_clears_a_stale_chain(tmp_path: Path) -> None:
    path = tmp_path / "d.md"
    chain_path(path).write_text('{"turn": 1, "digest": "x", "chain": "y"}\n')
    create(path, CONFIG)
    assert check(path).violations == []
    with pytest.raises(FileExistsError):
        create(path, CONFIG)


def test_append_refuses_an_illegal_turn_and_leaves_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "d.md"
    create(path, CONFIG)
    before = path.read_bytes()
    with pytest.raises(ProtocolViolationError) as caught:
        append_turn(path, C1)
    assert [v.rule for v in caught.value.violations] == ["CRITIQUE_ALTERNATION"]
    assert path.read_bytes() == before


def test_append_returns_warnings(tmp_path: Path) -> None:
    path = tmp_path / "d.md"
    create(path, CONFIG)
    append_turn(path, P1.model_copy(update={"status": StatusKind.PROPOSING_DONE, "awaiting": None}))
    appended = append_turn(
        path, CritiqueTurn(role="critic", round=1, timestamp="2026-01-31 14:07", message="Ok.", status=StatusKind.DONE)
    )
    assert [v.rule for v in appended.warnings] == ["CRITIQUE_DONE_SUMMARY"]


def test_an_edited_accepted_turn_is_reported_and_blocks_appends(tmp_path: Path) -> None:
    path = tmp_path / "d.md"
    create(path, CONFIG)
    append_turn(path, P1)
    path.write_text(path.read_text(encoding="utf-8").replace("Use REST.", "Use GraphQL."), encoding="utf-8")
    report = check(path)
    assert rules(report.violations) == [("PRIOR_TURN_MODIFIED", 14)] and report.exit_code is ExitCode.VIOLATIONS
    with pytest.raises(ProtocolViolationError) as caught:
        append_turn(path, C1)
    assert [v.rule for v in caught.value.violations] == ["PRIOR_TURN_MODIFIED"]


def test_append_continues_a_record_written_by_a_seed_agent(tmp_path: Path) -> None:
    # CRLF, no final line break, no chain: what an agent following the seed may leave behind.
    path = tmp_path / "d.md"
    path.write_bytes(render(CritiqueRecord(config=CONFIG, turns=(P1,))).rstrip("\n").replace("\n", "\r\n").encode())
    append_turn(path, C1)
    record, violations = parse(path.read_text(encoding="utf-8"))
    assert violations == [] and record == RECORD
    assert check(path).violations == []


def test_extend_raises_max_rounds_without_touching_turns(tmp_path: Path) -> None:
    path = tmp_path / "d.md"
    create(path, CONFIG.model_copy(update={"max_rounds": 1}))
    append_turn(path, P1)
    append_turn(path, C1.model_copy(update={"status": StatusKind.AWAITING, "awaiting": "proposer"}))
    summary = check(path).summary
    assert summary is not None and summary.status == "MAX_ROUNDS"
    turns_before = turn_sources(path.read_text(encoding="utf-8"))
    assert extend(path).max_rounds == 6
    assert "Max rounds: 6\n" in path.read_text(encoding="utf-8")
    assert turn_sources(path.read_text(encoding="utf-8")) == turns_before
    report = check(path)
    assert report.violations == [] and report.summary is not None and report.summary.next_speaker == "proposer"
    append_turn(path, P1.model_copy(update={"round": 2, "timestamp": "2026-01-31 14:20"}))


# --- file names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "slug"),
    [
        ("Adopt a monorepo for our services", "adopt-a-monorepo-for-our-services"),
        ("../../etc/passwd", "etc-passwd"),
        ("..", "dialogue"),
        ("", "dialogue"),
        ("Café  déjà vu?", "café-déjà-vu"),
        ("缓存 设计", "缓存-设计"),
        ("a/b\\c:d", "a-b-c-d"),
    ],
)
def test_slugify(topic: str, slug: str) -> None:
    assert slugify(topic) == slug


def test_slug_is_bounded_and_dialogue_path_is_under_dialogues(tmp_path: Path) -> None:
    assert len(slugify("é" * 500).encode()) <= 120
    assert dialogue_path(tmp_path, "API design") == tmp_path / ".dialogues" / "api-design.md"

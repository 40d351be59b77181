"""The debate artifact: rendering, tolerant parsing with located errors, crash-safe writers, tamper evidence."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from duel_helpers import ALICE, BOB, CLOSED, CONFIG, T1, T2, T3, TURNS

from moot.core.chain import chain_path
from moot.detect import check_path
from moot.errors import ProtocolViolationError
from moot.protocols.duel import record as artifact
from moot.protocols.duel.machine import OutcomeName, Participant, draft_conclusion

EXAMPLES = Path(__file__).parent / "examples"
RP1_STYLE = EXAMPLES / "valid" / "rp1-style-crlf.md"


def consensus_record() -> artifact.DuelRecord:
    conclusion = draft_conclusion(CONFIG, TURNS, closed_at=CLOSED)
    return artifact.DuelRecord(config=CONFIG, participants=[ALICE, BOB], turns=TURNS, conclusion=conclusion)


def new_duel(tmp_path: Path) -> Path:
    path = artifact.debate_path(tmp_path, dt.date(2026, 4, 25), CONFIG.topic_slug)
    artifact.create(path, CONFIG, [ALICE, BOB])
    return path


def rules(report_or_violations: object) -> set[str]:
    violations = getattr(report_or_violations, "violations", report_or_violations)
    assert isinstance(violations, list)
    return {v.rule for v in violations}


def test_render_then_parse_gives_the_same_record() -> None:
    record = consensus_record()
    parsed, problems = artifact.parse(artifact.render(record), "debate.md")
    assert problems == []
    assert parsed == record


def test_turn_headings_use_em_dashes() -> None:
    heading = artifact.render_turn(T1).splitlines()[2]
    assert heading == "## Turn 1 \u2014 alice (claude-code / claude-opus-4) \u2014 OPEN_TO_DEBATE"


def test_layout_follows_the_format_spec_in_order() -> None:
    text = artifact.render(consensus_record())
    markers = [
        "# Socratic Duel: Shared cache across tenants",
        "**Source Document**: `/srv/docs/cache-design.md`",
        "**Source Link**: [cache-design.md](/srv/docs/cache-design.md)",
        "**Status**: ACCEPTED_CONSENSUS",
        "**Created**: 2026-04-25T10:00:00Z",
        "## Metadata",
        "| Duel ID | `duel-7f3a` |",
        "| Candidate Convergence | true |",
        "## Participants",
        "| alice | claude-code | claude-opus-4 | 2026-04-25T10:00:00Z |",
        "---\n\n## Turn 1",
        "## Turn 6",
        "## Terminal Conclusion",
        "**Outcome**: ACCEPTED_CONSENSUS",
    ]
    positions = [text.index(m) for m in markers]
    assert positions == sorted(positions)


def test_crlf_and_lf_read_the_same() -> None:
    text = artifact.render(consensus_record())
    lf, _ = artifact.parse(text)
    crlf, problems = artifact.parse(text.replace("\n", "\r\n"))
    assert problems == [] and crlf == lf


def test_rp1_style_artifact_is_read_tolerantly() -> None:
    report = check_path(RP1_STYLE)
    assert report.exit_code == 0 and report.violations == []
    record, _ = artifact.parse(RP1_STYLE.read_bytes().decode())
    assert record is not None
    assert [t.participant for t in record.turns] == ["alice", "bob"]
    assert record.turns[0].position.startswith("The shared cache is sound")
    assert record.turns[1].unresolved[0].blocking is True  # "(Blocking)"
    assert record.turns[1].counterpoints[0].support[0].text == "https://en.wikipedia.org/wiki/Timing_attack"
    assert record.conclusion is None  # the template's empty conclusion means "open"


def test_turn_texts_and_lines_are_exact() -> None:
    text = artifact.render(consensus_record())
    document, _ = artifact.parse_document(text)
    assert document is not None
    lines = text.splitlines()
    for number, (turn_text, line) in enumerate(zip(document.turn_texts, document.turn_lines, strict=True), start=1):
        assert lines[line - 1] == "---"
        assert turn_text in text
        assert turn_text.splitlines()[2].startswith(f"## Turn {number} ")
        assert turn_text == turn_text.rstrip()


def test_not_a_duel_gives_no_record_and_a_located_error() -> None:
    record, problems = artifact.parse("\n\n# Something else\n", "x.md")
    assert record is None
    assert [(v.rule, v.line) for v in problems] == [("DUEL_HEADER", 3)]


def test_malformed_heading_is_located_on_its_line() -> None:
    text = artifact.render(consensus_record()).replace(
        "## Turn 2 — bob (codex / gpt-5) — DISSENTING", "## Turn 2 — bob — DISSENTING"
    )
    _, problems = artifact.parse(text, "d.md")
    line = text.splitlines().index("## Turn 2 — bob — DISSENTING") + 1
    assert [(v.rule, v.line, v.file) for v in problems] == [("DUEL_TURN_STRUCTURE", line, "d.md")]


def test_unknown_section_label_is_reported() -> None:
    text = artifact.render(consensus_record()).replace("**Agreements**", "**Concessions**", 1)
    _, problems = artifact.parse(text)
    assert "DUEL_TURN_STRUCTURE" in rules(problems)


def test_missing_metadata_section_is_reported_but_the_turns_still_replay(tmp_path: Path) -> None:
    text = artifact.render(consensus_record())
    start, end = text.index("## Metadata"), text.index("## Participants")
    path = tmp_path / "d.md"
    path.write_text(text[:start] + text[end:])
    report = check_path(path)
    assert report.exit_code == 1 and "DUEL_METADATA" in rules(report)
    assert report.summary is not None and report.summary.turns == 6


def test_header_status_must_agree_with_the_record(tmp_path: Path) -> None:
    path = tmp_path / "d.md"
    text = artifact.render(consensus_record())
    path.write_text(text.replace("**Status**: ACCEPTED_CONSENSUS", "**Status**: OPEN"))
    report = check_path(path)
    assert [(v.rule, v.line) for v in report.violations] == [("DUEL_STATUS_MISMATCH", 5)]


def test_a_turn_after_the_conclusion_is_reported(tmp_path: Path) -> None:
    record = consensus_record()
    text = artifact.render(record.model_copy(update={"turns": TURNS[:4]}))
    text = text.replace("\n## Terminal Conclusion", "").rstrip() + "\n"
    conclusion = artifact.render_conclusion(draft_conclusion(CONFIG, TURNS, closed_at=CLOSED))
    path = tmp_path / "d.md"
    path.write_text(text + "\n" + conclusion + "\n" + "\n\n".join(artifact.render_turn(t) for t in TURNS[4:]))
    assert {"DUEL_TURN_STRUCTURE"} <= rules(check_path(path))


def test_writers_build_a_valid_duel_and_keep_status_current(tmp_path: Path) -> None:
    path = new_duel(tmp_path)
    assert path == tmp_path / "debates" / "2026-04-25-shared-cache-across-tenants.md"
    assert check_path(path).exit_code == 0
    for turn in TURNS:
        summary = artifact.append_turn(path, turn)
        text = path.read_text()
        converging = "true" if summary.detail["candidate_convergence"] else "false"
        assert f"| Candidate Convergence | {converging} |" in text
        assert "**Status**: OPEN" in text
        assert check_path(path).errors == []
    assert summary.status == "ACCEPTED_CONSENSUS"
    assert [v.rule for v in check_path(path).violations] == ["DUEL_CONCLUSION_MISSING"]
    artifact.write_conclusion(path, draft_conclusion(CONFIG, TURNS, closed_at=CLOSED))
    report = check_path(path)
    assert report.exit_code == 0 and report.violations == []
    assert "**Status**: ACCEPTED_CONSENSUS" in path.read_text()
    assert len(chain_path(path).read_text().splitlines()) == 6
    parsed, _ = artifact.parse(path.read_text())
    assert parsed == consensus_record()


def test_appending_keeps_every_prior_turn_byte_for_byte(tmp_path: Path) -> None:
    path = new_duel(tmp_path)
    artifact.append_turn(path, T1)
    before, _ = artifact.parse_document(path.read_text())
    artifact.append_turn(path, T2)
    after, _ = artifact.parse_document(path.read_text())
    assert before is not None and after is not None
    assert after.turn_texts[0] == before.turn_texts[0]


def test_a_writer_takes_the_turn_that_is_legal_only_after_another_writers_turn(tmp_path: Path) -> None:
    path = new_duel(tmp_path)
    running = artifact.RECORD.writer(path)  # a run's writer, open before someone else appends turn 1
    artifact.append_turn(path, T1)
    assert len(running.append([T2]).state.turns) == 2  # validated against the record as it is now, not as opened
    report = check_path(path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.turns == 2


def test_an_illegal_turn_is_refused_and_the_file_is_unchanged(tmp_path: Path) -> None:
    path = new_duel(tmp_path)
    artifact.append_turn(path, T1)
    original = path.read_bytes()
    with pytest.raises(ProtocolViolationError) as caught:
        artifact.append_turn(path, T3.model_copy(update={"number": 2}))
    assert "DUEL_ALTERNATION" in rules(caught.value.violations)
    assert all(v.file == str(path) for v in caught.value.violations)
    assert path.read_bytes() == original


def test_a_turn_that_would_not_read_back_is_refused(tmp_path: Path) -> None:
    path = new_duel(tmp_path)
    original = path.read_bytes()
    broken = T1.model_copy(update={"agreements": ["first line\n**Position**"]})
    with pytest.raises(ProtocolViolationError) as refused:
        artifact.append_turn(path, broken)
    assert path.read_bytes() == original
    (why,) = refused.value.violations  # what in the record it would break, at its line
    assert (why.rule, why.file) == ("DUEL_TURN_STRUCTURE", str(path)) and why.line is not None


def test_conclusion_must_agree_with_the_turns(tmp_path: Path) -> None:
    path = new_duel(tmp_path)
    for turn in TURNS[:4]:
        artifact.append_turn(path, turn)
    claimed = draft_conclusion(CONFIG, TURNS, closed_at=CLOSED)
    with pytest.raises(ProtocolViolationError) as caught:
        artifact.write_conclusion(path, claimed)
    assert rules(caught.value.violations) == {"DUEL_CONCLUSION_INCONSISTENT"}
    timeout = draft_conclusion(CONFIG, TURNS[:4], closed_at=CLOSED, outcome=OutcomeName.TIMEOUT, reason="bob left")
    artifact.write_conclusion(path, timeout)
    report = check_path(path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.status == "TIMEOUT"
    with pytest.raises(ProtocolViolationError) as caught:
        artifact.append_turn(path, TURNS[4])
    assert rules(caught.value.violations) == {"DUEL_AFTER_TERMINAL"}


def test_tampering_invalidates_the_duel(tmp_path: Path) -> None:
    path = new_duel(tmp_path)
    for turn in TURNS[:3]:
        artifact.append_turn(path, turn)
    path.write_text(path.read_text().replace("one noisy tenant", "one tenant"))
    report = check_path(path)
    assert report.exit_code == 1
    assert [(v.rule, v.turn) for v in report.violations] == [("PRIOR_TURN_MODIFIED", 1)]
    assert report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "INVALIDATED"
    assert "PRIOR_TURN_MODIFIED" in report.summary.outcome.reason
    with pytest.raises(ProtocolViolationError):
        artifact.append_turn(path, TURNS[3])
    with pytest.raises(ProtocolViolationError):
        artifact.write_conclusion(
            path, draft_conclusion(CONFIG, TURNS[:3], closed_at=CLOSED, outcome=OutcomeName.TIMEOUT, reason="x")
        )
    invalid = draft_conclusion(
        CONFIG, TURNS[:3], closed_at=CLOSED, outcome=OutcomeName.INVALIDATED, reason="turn 1 was edited"
    )
    artifact.write_conclusion(path, invalid)
    after = check_path(path)
    assert "PRIOR_TURN_MODIFIED" in rules(after), "the chain must stay as evidence"
    assert after.summary is not None and after.summary.status == "INVALIDATED"
    assert "**Status**: INVALIDATED" in path.read_text()


def test_appending_to_an_rp1_written_artifact(tmp_path: Path) -> None:
    path = tmp_path / "debates" / "rp1.md"
    path.parent.mkdir()
    shutil.copyfile(RP1_STYLE, path)
    before, _ = artifact.parse_document(path.read_bytes().decode())
    bob = Participant(name="bob", harness="codex", model="unknown-model")
    third = T3.model_copy(
        update={
            "stance": "DISSENTING",
            "stance_revision_support": ["Turn 2 made the timing risk concrete."],
            "counterpoints": [T3.counterpoints[0].model_copy(update={"addresses": "Turn 2"})],
        }
    )
    artifact.append_turn(path, third)
    after, problems = artifact.parse_document(path.read_bytes().decode())
    assert before is not None and after is not None and problems == []
    assert after.turn_texts[:2] == before.turn_texts  # CRLF turns kept exactly
    assert after.record.turns[2] == third
    assert after.record.participants[1].name == bob.name
    assert "Terminal outcome must be one of" in path.read_text()  # the open template conclusion stays
    report = check_path(path)
    assert report.exit_code == 0, [str(v) for v in report.violations]
    assert report.summary is not None and report.summary.status == "DISSENT"
    artifact.write_conclusion(path, draft_conclusion(after.record.config, after.record.turns, closed_at=CLOSED))
    done = check_path(path)
    assert done.violations == [] and done.summary is not None and done.summary.status == "DISSENT"


def test_create_refuses_existing_files_and_bad_participants(tmp_path: Path) -> None:
    path = new_duel(tmp_path)
    with pytest.raises(FileExistsError):
        artifact.create(path, CONFIG, [ALICE, BOB])
    carol = Participant(name="carol", harness="amp", model="m")
    with pytest.raises(ProtocolViolationError) as caught:
        artifact.create(tmp_path / "three.md", CONFIG, [ALICE, BOB, carol])
    assert rules(caught.value.violations) == {"DUEL_PARTICIPANTS"}
    with pytest.raises(ProtocolViolationError):
        artifact.create(tmp_path / "twice.md", CONFIG, [ALICE, ALICE])
    with pytest.raises(ProtocolViolationError):
        artifact.create(tmp_path / "pipe.md", CONFIG, [ALICE.model_copy(update={"name": "al (ice)"})])
    assert not (tmp_path / "three.md").exists() and not (tmp_path / "pipe.md").exists()


def test_second_participant_can_join_later(tmp_path: Path) -> None:
    path = tmp_path / "d.md"
    artifact.create(path, CONFIG, [ALICE])
    artifact.add_participant(path, BOB)
    record, _ = artifact.parse(path.read_text())
    assert record is not None and record.participants == [ALICE, BOB]
    with pytest.raises(ProtocolViolationError):
        artifact.add_participant(path, Participant(name="carol", harness="amp", model="m"))


def test_a_rewrite_loses_no_turn_another_writer_appended_between_its_read_and_its_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "d.md"
    artifact.create(path, CONFIG, [ALICE])
    render = artifact.rendered
    others: list[str] = []

    def another_writer_first(*args: object, **kwargs: object) -> object:
        if not others:  # between the join's read and its write, alice's turn 1 lands
            others.append("turn 1")
            artifact.append_turn(path, T1)
        return render(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(artifact, "rendered", another_writer_first)
    artifact.add_participant(path, BOB)
    record, _ = artifact.parse(path.read_text())
    assert record is not None and record.participants == [ALICE, BOB] and record.turns == [T1]
    assert check_path(path).exit_code == 0


def test_concluding_a_record_that_is_gone_is_refused_in_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ProtocolViolationError) as refused:
        artifact.write_conclusion(tmp_path / "gone.md", draft_conclusion(CONFIG, TURNS, closed_at=CLOSED))
    assert [v.rule for v in refused.value.violations] == ["FILE_UNREADABLE"]
    assert not (tmp_path / "gone.md").exists()


@pytest.mark.parametrize(
    ("topic", "slug"),
    [
        ("Shared cache across tenants", "shared-cache-across-tenants"),
        ("../../etc/passwd", "etc-passwd"),
        ("Café au lait — déjà vu", "cafe-au-lait-deja-vu"),
        ("..", "debate"),
        ("", "debate"),
        ("a/b\\c", "a-b-c"),
    ],
)
def test_slugify_is_path_safe(topic: str, slug: str) -> None:
    assert artifact.slugify(topic) == slug


def test_debate_path_layout_and_refusals(tmp_path: Path) -> None:
    day = dt.date(2026, 4, 25)
    assert artifact.debate_path(tmp_path, day, "cache", "-2") == tmp_path / "debates" / "2026-04-25-cache-2.md"
    assert artifact.debate_path(tmp_path, "2026-04-25", "cache").name == "2026-04-25-cache.md"
    refused: list[tuple[str, str, dt.date | str]] = [
        ("../x", "", day),
        ("cache", "/../x", day),
        ("cache", "", "yesterday"),
    ]
    for slug, suffix, date in refused:
        with pytest.raises(ValueError):
            artifact.debate_path(tmp_path, date, slug, suffix)


def test_check_never_raises_on_unreadable_input(tmp_path: Path) -> None:
    binary = tmp_path / "b.md"
    binary.write_bytes(b"# Socratic Duel: x\n\xff\xfe")
    assert check_path(binary).exit_code == 2
    assert artifact.check(tmp_path / "missing.md").exit_code == 2
    title_only = tmp_path / "t.md"
    title_only.write_text("# Socratic Duel: x\n")
    report = check_path(title_only)
    assert report.exit_code == 1 and {"DUEL_HEADER", "DUEL_METADATA", "DUEL_PARTICIPANTS_TABLE"} <= rules(report)


def test_a_rule_before_the_conclusion_is_padding_not_part_of_the_last_turn(tmp_path: Path) -> None:
    # rp1 agents may close a duel with '---' then the conclusion; the chain must still verify.
    path = new_duel(tmp_path)
    for turn in TURNS:
        artifact.append_turn(path, turn)
    conclusion = artifact.render_conclusion(draft_conclusion(CONFIG, TURNS, closed_at=CLOSED))
    text = path.read_text().replace("**Status**: OPEN", "**Status**: completed")
    text = text.replace("| Status | OPEN |", "| Status | ACCEPTED_CONSENSUS |")
    path.write_text(text + "\n---\n\n" + conclusion)
    report = check_path(path)
    assert report.violations == [] and report.summary is not None
    assert report.summary.status == "ACCEPTED_CONSENSUS"
    timeout = tmp_path / "timeout.md"
    artifact.create(timeout, CONFIG, [ALICE])
    late = draft_conclusion(CONFIG, [], closed_at=CLOSED, outcome=OutcomeName.TIMEOUT, reason="bob never joined")
    text = timeout.read_text().replace("OPEN", "TIMEOUT")
    timeout.write_text(text + "\n---\n\n" + artifact.render_conclusion(late))
    assert check_path(timeout).violations == []

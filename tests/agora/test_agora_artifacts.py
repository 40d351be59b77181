"""The Agora record: render/parse, located errors, crash-safe appends, tamper evidence, model replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agora_helpers import EVIDENCE, Debate, config, reply

from moot.core.chain import chain_path
from moot.detect import check_path
from moot.errors import ProtocolViolationError, Violation
from moot.protocols.agora import record as agora
from moot.protocols.agora.machine import AgoraReply, AgoraTurn, make_turn

EXAMPLES = Path(__file__).parent / "examples"
STARTED = "2025-03-01T10:00:00Z"


def new_record(tmp_path: Path, methodology: str = "opinion") -> tuple[Path, Debate]:
    debate = Debate(config(methodology=methodology))  # type: ignore[arg-type]
    path = tmp_path / f"{agora.slugify(debate.protocol.config.topic)}.md"
    agora.create(path, debate.protocol.config, started=STARTED)
    return path, debate


def append(path: Path, debate: Debate, turn: AgoraTurn) -> None:
    debate.state = agora.append_turn(path, turn).state
    debate.turns.append(turn)


def rules(violations: list[Violation]) -> list[str]:
    return [v.rule for v in violations]


# --- rendering ---------------------------------------------------------------------------------


def test_rendered_turn_shows_heading_proposal_and_seed_json() -> None:
    turn = make_turn(reply("propose", evidence=True), 1, "advocate")
    text = agora.render_turn(turn)
    assert text.startswith("## Turn 1 — advocate\n\nProposal: proposal-advocate\n\n```json\n{\n")
    data = json.loads(text.split("```json\n")[1].split("\n```")[0])
    assert list(data) == ["signal", "message", "confidence", "target", "evidence"]
    assert data["evidence"] == [e.model_dump() for e in EVIDENCE]


def test_create_writes_a_header_that_check_accepts(tmp_path: Path) -> None:
    path, _ = new_record(tmp_path)
    assert path.name == "strategy-or-decorator.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Agora Debate: Strategy or Decorator?\n")
    assert f"- Started: {STARTED}\n" in text and "  - advocate: advocate is right.\n" in text
    report = check_path(path)
    assert report.exit_code == 0 and report.summary is not None
    assert report.summary.next_speaker == "advocate" and report.summary.turns == 0
    with pytest.raises(FileExistsError):
        agora.create(path, config())


def test_parse_of_rendered_record_gives_it_back() -> None:
    debate = Debate()
    debate.play([("propose", None), ("approve", "proposal-advocate"), ("no-change", None)])
    record = agora.AgoraRecord(
        config=debate.protocol.config, started=STARTED, turns=tuple(debate.turns), outcome=debate.state.outcome
    )
    parsed, violations = agora.parse(agora.render(record), "x.md")
    assert violations == [] and parsed == record


# --- appending ---------------------------------------------------------------------------------


def test_appending_to_consensus_writes_the_outcome_and_checks_valid(tmp_path: Path) -> None:
    path, debate = new_record(tmp_path)
    append(path, debate, debate.turn("propose"))
    append(path, debate, debate.turn("approve", "turn-1"))
    assert "## Outcome" not in path.read_text(encoding="utf-8")
    append(path, debate, debate.turn("no-change"))
    text = path.read_text(encoding="utf-8")
    assert text.endswith("## Outcome\n\n- Result: CONSENSUS\n- Reason: " + debate.state.outcome.reason + "\n")  # type: ignore[union-attr]
    report = check_path(path)
    assert report.violations == [] and report.summary is not None
    assert report.summary.outcome == debate.state.outcome
    assert len(chain_path(path).read_text().splitlines()) == 3
    with pytest.raises(ProtocolViolationError) as refused:
        agora.append_turn(path, make_turn(reply("counter", "turn-1"), 4, "skeptic"))
    assert rules(refused.value.violations) == ["AGORA_AFTER_OUTCOME"]


def test_load_resumes_a_debate_from_its_record(tmp_path: Path) -> None:
    path, debate = new_record(tmp_path)
    append(path, debate, debate.turn("propose"))
    protocol, state, _ = agora.RECORD.load(path)
    assert protocol.config == debate.protocol.config and state == debate.state
    assert protocol.next_speaker(state) == "skeptic"
    path.write_text(path.read_text(encoding="utf-8").replace("Proposal: proposal-advocate\n", ""), encoding="utf-8")
    with pytest.raises(ProtocolViolationError) as refused:
        agora.RECORD.load(path)
    assert set(rules(refused.value.violations)) == {"AGORA_PROPOSAL_ID", "PRIOR_TURN_MODIFIED"}


def test_a_writer_takes_the_turn_that_is_legal_only_after_another_writers_turn(tmp_path: Path) -> None:
    path, debate = new_record(tmp_path)
    running = agora.RECORD.writer(path)  # a run's writer, open before someone else appends turn 1
    append(path, debate, debate.turn("propose"))
    second = debate.turn("counter", "turn-1")
    assert running.append([second]).state.turns == 2  # validated against the record as it is now
    report = check_path(path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.turns == 2


def test_evidence_marks_are_written_beside_their_turn_and_read_back_with_it(tmp_path: Path) -> None:
    path, debate = new_record(tmp_path, methodology="fact-based")
    turn = debate.turn("propose", evidence=True)
    marks = [f"verified at notes.md:{n}" for n in range(1, len(turn.evidence) + 1)]
    agora.append_turn(path, turn, marks)
    text = path.read_text(encoding="utf-8")
    assert "Proposal: proposal-advocate\n\nEvidence 1: verified at notes.md:1\n" in text
    (source,) = agora.turn_sources(text)
    assert source.turn == turn and source.marks[1] == (source.line + 4, "verified at notes.md:1")
    with pytest.raises(ValueError, match="one per turn"):
        agora.RECORD.writer(path).append([debate.turn("counter", "turn-1")], notes=[marks, marks])


def test_a_refused_turn_leaves_the_record_untouched(tmp_path: Path) -> None:
    path, debate = new_record(tmp_path, methodology="fact-based")
    before = path.read_bytes()
    with pytest.raises(ProtocolViolationError) as refused:
        agora.append_turn(path, debate.turn("propose"))
    assert rules(refused.value.violations) == ["AGORA_EVIDENCE_REQUIRED"]
    assert path.read_bytes() == before
    append(path, debate, debate.turn("propose", evidence=True))
    assert check_path(path).exit_code == 0


def test_long_message_is_appended_with_a_warning(tmp_path: Path) -> None:
    path, debate = new_record(tmp_path)
    long = AgoraReply(signal="propose", message="A. B. C. D. E.", confidence=0.5)
    written = agora.append_turn(path, debate.protocol.next_turn(debate.state, long))
    assert rules(written.warnings) == ["AGORA_MESSAGE_LENGTH"] and written.state.turns == 1
    report = check_path(path)
    assert report.exit_code == 0 and rules(report.warnings) == ["AGORA_MESSAGE_LENGTH"]


def test_edited_accepted_turn_is_reported_and_blocks_appends(tmp_path: Path) -> None:
    path, debate = new_record(tmp_path)
    append(path, debate, debate.turn("propose"))
    append(path, debate, debate.turn("counter", "turn-1"))
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"confidence": 0.7', '"confidence": 0.9', 1), encoding="utf-8")
    report = check_path(path)
    assert [(v.rule, v.turn) for v in report.violations] == [("PRIOR_TURN_MODIFIED", 1)]
    assert report.violations[0].line == text.splitlines().index("## Turn 1 — advocate") + 1
    with pytest.raises(ProtocolViolationError) as refused:
        agora.append_turn(path, debate.turn("no-change"))
    assert rules(refused.value.violations) == ["PRIOR_TURN_MODIFIED"]


def test_removed_accepted_turn_is_reported(tmp_path: Path) -> None:
    path, debate = new_record(tmp_path)
    append(path, debate, debate.turn("propose"))
    append(path, debate, debate.turn("counter", "turn-1"))
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.index("\n## Turn 2")] + "\n", encoding="utf-8")
    assert rules(check_path(path).violations) == ["PRIOR_TURN_REMOVED"]


def test_create_replaces_a_stale_chain(tmp_path: Path) -> None:
    path, debate = new_record(tmp_path)
    append(path, debate, debate.turn("propose"))
    path.unlink()
    agora.create(path, config(), started=STARTED)
    assert check_path(path).violations == []


# --- reading: located errors -------------------------------------------------------------------


def test_bad_json_is_located_at_its_line_and_later_turns_are_not_blamed() -> None:
    report = check_path(EXAMPLES / "invalid" / "AGORA_TURN_JSON.md")
    lines = (EXAMPLES / "invalid" / "AGORA_TURN_JSON.md").read_text(encoding="utf-8").splitlines()
    [violation] = report.violations
    assert violation.rule == "AGORA_TURN_JSON" and violation.turn == 2
    assert lines[violation.line - 1] == "}"  # type: ignore[operator]  # the trailing comma shows here


def test_schema_errors_name_the_field_and_its_line() -> None:
    path = EXAMPLES / "invalid" / "AGORA_TURN_SCHEMA.md"
    lines = path.read_text(encoding="utf-8").splitlines()
    found = {v.message: v.line for v in check_path(path).violations}
    missing = next(m for m in found if "'confidence'" in m)
    signal = next(m for m in found if "'agree'" in m)
    assert "missing" in missing
    assert "propose, counter, approve, no-change, defer" in signal
    assert '"signal": "agree"' in lines[found[signal] - 1]  # type: ignore[operator]


def test_rule_violations_point_at_the_field_concerned() -> None:
    path = EXAMPLES / "invalid" / "AGORA_CONFIDENCE.md"
    [violation] = check_path(path).violations
    line = path.read_text(encoding="utf-8").splitlines()[violation.line - 1]  # type: ignore[operator]
    assert '"confidence": 1.5' in line


def test_crlf_record_is_read_like_lf(tmp_path: Path) -> None:
    source = EXAMPLES / "valid" / "consensus-fact-based.md"
    copy = tmp_path / "crlf.md"
    copy.write_bytes(source.read_bytes().replace(b"\n", b"\r\n"))
    report = check_path(copy)
    assert report.violations == [] and report.summary is not None
    assert report.summary.outcome is not None and report.summary.outcome.consensus


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("", "AGORA_HEADER"),
        ("# Agora Debate: x\n\n- Methodology: opinion\n- Participants:\n  - a: x\n  - b: y\n", "AGORA_HEADER"),
        (
            "# Agora Debate: x\n\n- Dialogue: d\n- Methodology: loud\n- Participants:\n  - a: x\n  - b: y\n",
            "AGORA_HEADER",
        ),
        (
            "# Agora Debate: x\n\n- Dialogue: d\n- Methodology: opinion\n- Participants:\n  - a: x\n  - a: y\n",
            "AGORA_CONFIG",
        ),
    ],
)
def test_records_without_a_usable_header_are_unreadable(tmp_path: Path, text: str, rule: str) -> None:
    _, violations = agora.parse(text)
    assert rule in rules(violations)
    path = tmp_path / "bad.md"
    path.write_text(text, encoding="utf-8")
    report = agora.check(path)
    assert report.exit_code == 2 and rule in rules(report.violations)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("- Started:", "'Started' is empty"),
        ("- Max turns: many", "whole number"),
        ("- Dialogue: again", "given twice"),
        ("Some notes about the debate.", "not part of the header"),
    ],
)
def test_header_problems_are_located(line: str, fragment: str) -> None:
    text = (EXAMPLES / "valid" / "in-progress-defaults.md").read_text(encoding="utf-8")
    edited = text.replace("- Participants:", f"{line}\n- Participants:")
    record, violations = agora.parse(edited)
    assert record is None
    [violation] = violations
    assert violation.rule == "AGORA_HEADER" and fragment in violation.message
    assert edited.splitlines()[violation.line - 1] == line  # type: ignore[operator]


def test_participant_lines_must_name_role_and_position() -> None:
    text = (EXAMPLES / "valid" / "in-progress-defaults.md").read_text(encoding="utf-8")
    _, violations = agora.parse(text.replace("  - skeptic: Lenient parsing keeps agents productive.", "  - skeptic"))
    assert any(v.rule == "AGORA_HEADER" and "<role>: <position>" in v.message for v in violations)
    _, violations = agora.parse(text.replace("- Participants:", "- Participants: advocate, skeptic"))
    assert any(v.rule == "AGORA_HEADER" and "below '- Participants:'" in v.message for v in violations)


def test_format_problems_inside_turns() -> None:
    header = (EXAMPLES / "valid" / "in-progress-defaults.md").read_text(encoding="utf-8").split("\n## ")[0]
    cases = {
        "## Turn 1 — advocate\n\nno json here\n": "unexpected text",
        "## Turn 1 — advocate\n\n```json\n{}\n": "not closed",
        "## Turn 1 — advocate\n\n```json\n{}\n```\nremark\n": "after the JSON block",
        "## Turn 1 — advocate\n\nProposal:\n\n```json\n{}\n```\n": "'Proposal:' line is empty",
        "## Notes\n\ntext\n": "unknown section",
    }
    for body, fragment in cases.items():
        record, violations = agora.parse(f"{header}\n{body}")
        assert record is None
        assert any(v.rule == "AGORA_TURN_FORMAT" and fragment in v.message for v in violations), body


def test_outcome_section_must_come_last() -> None:
    text = (EXAMPLES / "valid" / "timeout.md").read_text(encoding="utf-8")
    outcome = text[text.index("## Outcome") :]
    moved = text.replace(outcome, "").replace("## Turn 3", outcome + "\n## Turn 3")
    _, violations = agora.parse(moved)
    assert any(v.rule == "AGORA_OUTCOME" and "last" in v.message for v in violations)


def test_outcome_that_disagrees_with_the_turns(tmp_path: Path) -> None:
    text = (EXAMPLES / "valid" / "timeout.md").read_text(encoding="utf-8")
    path = tmp_path / "wrong.md"
    path.write_text(text.replace("Result: TIMEOUT", "Result: CONSENSUS"), encoding="utf-8")
    [violation] = check_path(path).violations
    assert violation.rule == "AGORA_OUTCOME" and "Result: TIMEOUT" in violation.message


# --- a model's raw reply -----------------------------------------------------------------------

SEED_REPLY = (
    '{"signal": "counter", "message": "Decorator is simpler.", "confidence": 0.7, "target": "turn-1", '
    '"evidence": [{"source": "SOLID", "content": "OCP", "confidence": 0.85}]}'
)


@pytest.mark.parametrize(
    "text", [SEED_REPLY, f"  {SEED_REPLY}\n", f"```json\n{SEED_REPLY}\n```", f"\n```\n{SEED_REPLY}\n```\n"]
)
def test_parse_reply_accepts_bare_or_fenced_json(text: str) -> None:
    parsed = agora.parse_reply(text)
    assert isinstance(parsed, AgoraReply)
    assert parsed.signal == "counter" and parsed.target == "turn-1" and parsed.evidence[0].confidence == 0.85


def test_parse_reply_defaults_optional_fields_and_accepts_integer_confidence() -> None:
    parsed = agora.parse_reply('{"signal": "defer", "message": "You know best.", "confidence": 1}')
    assert parsed == AgoraReply(signal="defer", message="You know best.", confidence=1.0)


@pytest.mark.parametrize(
    ("text", "rule", "fragment"),
    [
        ("Sure! " + SEED_REPLY, "AGORA_TURN_JSON", "not valid JSON"),
        (SEED_REPLY + " Hope this helps.", "AGORA_TURN_JSON", "send only the JSON object"),
        ("```json\n" + SEED_REPLY, "AGORA_TURN_JSON", "not closed"),
        ("[1, 2]", "AGORA_TURN_JSON", "not a JSON object"),
        ('{"signal": "defer", "signal": "approve", "message": "m", "confidence": 0.5}', "AGORA_TURN_JSON", "twice"),
        ('{"signal": "defer", "message": "m", "confidence": NaN}', "AGORA_TURN_JSON", "NaN"),
        ('{"signal": "defer", "message": "m", "confidence": 1e999}', "AGORA_TURN_JSON", "too large"),
        ('{"signal": "defer", "message": "m\\ud800", "confidence": 0.5}', "AGORA_TURN_JSON", "unpaired"),
        ('{"signal": "defer", "message": "m"}', "AGORA_TURN_SCHEMA", "'confidence' is missing"),
        ('{"signal": "agree", "message": "m", "confidence": 0.5}', "AGORA_TURN_SCHEMA", "not a signal"),
        ('{"signal": "defer", "message": "m", "confidence": "high"}', "AGORA_TURN_SCHEMA", "without quotes"),
        ('{"signal": "defer", "message": "m", "confidence": true}', "AGORA_TURN_SCHEMA", "must be a number"),
        ('{"signal": "defer", "message": 5, "confidence": 0.5}', "AGORA_TURN_SCHEMA", "must be a string"),
        ('{"signal": "defer", "message": "m", "confidence": 0.5, "mood": "calm"}', "AGORA_TURN_SCHEMA", "remove it"),
        ('{"signal": "defer", "message": "m", "confidence": 0.5, "evidence": "docs"}', "AGORA_TURN_SCHEMA", "list"),
        ('{"signal": "defer", "message": "m", "confidence": 0.5, "evidence": [3]}', "AGORA_TURN_SCHEMA", "object"),
        (
            '{"signal": "defer", "message": "m", "confidence": 0.5, "evidence": [{"source": "s"}]}',
            "AGORA_TURN_SCHEMA",
            "'evidence.0.content' is missing",
        ),
    ],
)
def test_parse_reply_says_what_to_fix(text: str, rule: str, fragment: str) -> None:
    parsed = agora.parse_reply(text)
    assert isinstance(parsed, list) and parsed
    assert all(v.rule == rule for v in parsed)
    assert any(fragment in v.message for v in parsed), [v.message for v in parsed]


def test_parse_reply_locates_errors_in_the_reply_text() -> None:
    text = '\n```json\n{\n  "signal": "agree",\n  "message": "m",\n  "confidence": 0.5\n}\n```'
    parsed = agora.parse_reply(text)
    assert isinstance(parsed, list) and len(parsed) == 1
    assert parsed[0].line == 4 and text.splitlines()[3].strip().startswith('"signal"')


def test_slugify_makes_safe_names() -> None:
    assert agora.slugify("Strategy or Decorator?") == "strategy-or-decorator"
    assert agora.slugify("../../etc") == "etc"
    assert agora.slugify("???") == "debate"
    assert agora.slugify("Кэш — да или нет") == "кэш-да-или-нет"

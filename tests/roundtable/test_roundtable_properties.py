"""Properties: what moot renders it parses back unchanged, and no input makes the parsers raise.

Example counts (kept modest; the CPU is shared): pure properties 200-300 examples each, properties
that write meeting directories 60-100.
"""

from __future__ import annotations

import json
import tempfile
import unicodedata
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import moot.protocols.roundtable.record as rt
from moot.core.files import CheckReport, decode_text
from moot.detect import check_path
from moot.errors import Violation
from moot.protocols.roundtable.machine import (
    MINUTES_PARTS,
    Language,
    MeetingState,
    Minutes,
    RoundtableClosing,
    RoundtableProtocol,
    RoundtableReply,
    Speech,
    TurnState,
    advance,
    close_state,
    name_problem,
    opening_state,
    replay_meeting,
    speech_file_name,
    turn_from_reply,
)

PURE = settings(max_examples=250, deadline=None)
ON_DISK = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Role names: Latin, CJK, Cyrillic, digits and a few separators; NFC like names typed in turn.json.
role_names = (
    st.text(
        alphabet=st.sampled_from("abcxyz ABC_-.0129架构师审查员安全éöЖя"),
        min_size=1,
        max_size=12,
    )
    .map(lambda name: unicodedata.normalize("NFC", name))
    .filter(lambda name: name_problem(name) is None)
)
speaker_orders = st.lists(role_names, min_size=1, max_size=4, unique=True).map(tuple)
free_text = st.text(max_size=60)
# What goes into a file moot reads back: no NUL (binary) and no leading byte-order mark (dropped on read).
file_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=60).filter(
    lambda text: not text.startswith("\ufeff")
)


@st.composite
def turn_states(draw: st.DrawFn) -> TurnState:
    """Any well-typed turn.json, including ones the rules reject: rendering must not care."""
    return TurnState(
        conference=draw(free_text),
        status=draw(st.sampled_from(["open", "concluding", "closed"])),
        round=draw(st.integers(-(10**12), 10**12)),
        max_rounds=draw(st.integers(-5, 10**6)),
        speaker_order=tuple(draw(st.lists(free_text, max_size=4))),
        current_speaker_index=draw(st.integers(-10, 10)),
        current_speaker=draw(free_text),
        prompt_for_speaker=draw(free_text),
    )


# A part of the minutes: any text that is stripped and has no line that looks like a heading or fence.
minutes_part = (
    st.lists(
        st.text(st.characters(codec="utf-8", exclude_characters="\r\x00"), max_size=30).filter(
            lambda line: not line.lstrip(" ").startswith(("#", "```", "~~~"))
        ),
        max_size=4,
    )
    .map("\n".join)
    .map(str.strip)
    .filter(lambda part: part == part.strip() and not part.lstrip(" ").startswith(("#", "```", "~~~")))
)
minutes_models = st.builds(
    Minutes, summary=minutes_part, consensus=minutes_part, unresolved=minutes_part, action_items=minutes_part
)


@PURE
@given(turn_states())
def test_turn_json_round_trips(state: TurnState) -> None:
    parsed, found = rt.parse_turn_json(rt.render_turn_json(state))
    assert found == []
    assert parsed == state


@PURE
@given(minutes_models, free_text, st.sampled_from(["en", "zh"]))
def test_minutes_round_trip(minutes: Minutes, conference: str, language: Language) -> None:
    parsed, found = rt.parse_minutes(rt.render_minutes(minutes, conference, language))
    assert found == []
    assert parsed == minutes


@PURE
@given(st.integers(1, 10**6), role_names)
def test_speech_names_round_trip(sequence: int, role: str) -> None:
    parsed, found = rt.parse_speech_name(speech_file_name(sequence, role))
    assert found == []
    assert parsed == (sequence, role)


def assert_typed(found: list[Violation]) -> None:
    for violation in found:
        assert isinstance(violation, Violation)
        assert violation.rule.isupper() and violation.message


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_parses_to_a_state_or_violations(text: str) -> None:
    parsed, found = rt.parse_turn_json(text)
    assert isinstance(parsed, TurnState) or (parsed is None and any(v.is_error for v in found))
    assert_typed(found)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | free_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(free_text, children, max_size=3),
    max_leaves=8,
)


@PURE
@given(st.dictionaries(st.sampled_from([*rt.FIELD_TYPES, "extra"]), json_values, max_size=10))
def test_any_json_object_parses_to_a_state_or_violations(data: dict[str, object]) -> None:
    parsed, found = rt.parse_turn_json(json.dumps(data))
    assert isinstance(parsed, TurnState) or parsed is None
    assert_typed(found)
    if parsed is not None:
        # Whatever parses can be checked by the rules without raising.
        assert_typed(replay_meeting(parsed, [], None).violations)


@PURE
@given(st.binary(max_size=200))
def test_any_bytes_decode_and_parse_or_give_violations(data: bytes) -> None:
    text, found = decode_text(data, "turn.json")
    assert_typed(found)
    if text is not None:
        assert_typed(rt.parse_turn_json(text)[1])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_file_name_parses_to_a_speech_or_violations(name: str) -> None:
    parsed, found = rt.parse_speech_name(name)
    assert parsed is not None or found
    assert_typed(found)


@PURE
@given(st.text(max_size=300))
def test_any_minutes_text_parses(text: str) -> None:
    minutes, found = rt.parse_minutes(text)
    assert isinstance(minutes, Minutes)
    assert_typed(found)


# --- whole meetings -----------------------------------------------------------------------------


@st.composite
def meetings(draw: st.DrawFn) -> rt.MeetingRecord:
    """A legal meeting at any point of its life, built by the protocol's own rules."""
    order = draw(speaker_orders)
    max_rounds = draw(st.integers(1, 3))
    conference = draw(free_text.filter(str.strip))
    protocol = RoundtableProtocol(opening_state(conference, order, max_rounds, draw(free_text)))
    state: MeetingState = protocol.initial_state()
    speeches: list[Speech] = []
    for _ in range(draw(st.integers(0, len(order) * max_rounds))):
        if state.turn.status != "open":
            break
        reply = RoundtableReply(
            position=draw(file_text),
            analysis="a",
            responses_and_questions="q",
            prompt_for_next_speaker=draw(free_text),
            consensus_reached=draw(st.sampled_from([False, False, False, True])),
        )
        turn = turn_from_reply(state, reply, draw(st.sampled_from(["en", "zh"])))
        state, _ = protocol.step(state, turn)
        speeches.append(turn.speech)
    minutes = None
    if state.turn.status == "concluding" and draw(st.booleans()):
        minutes = draw(minutes_models.filter(lambda m: all(getattr(m, f) for f, _, _ in MINUTES_PARTS)))
        state, _ = protocol.step(state, RoundtableClosing(minutes=minutes, next_state=close_state(state.turn)))
    agenda = draw(file_text.filter(str.strip))
    return rt.MeetingRecord(agenda=agenda, state=state.turn, speeches=tuple(speeches), minutes=minutes)


def write(directory: Path, record: rt.MeetingRecord) -> None:
    directory.mkdir(parents=True)
    for name, text in rt.render_meeting(record).items():
        (directory / name).write_text(text, encoding="utf-8", newline="")


@ON_DISK
@given(meetings())
def test_meeting_round_trips_and_passes_check(record: rt.MeetingRecord) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "meeting"
        write(directory, record)
        parsed, found = rt.parse_meeting(directory)
        assert found == []
        assert parsed == record
        report = check_path(directory)
        assert report.violations == []
        minutes = record.minutes is not None  # the moderator's minutes are a turn too
        assert report.summary is not None and report.summary.turns == len(record.speeches) + minutes


@ON_DISK
@given(meetings())
def test_speech_k_is_by_the_kth_speaker_in_its_round(record: rt.MeetingRecord) -> None:
    order = record.state.speaker_order
    for k, speech in enumerate(record.speeches, start=1):
        assert speech.role == order[(k - 1) % len(order)]
    # And moving any one speech to another role is caught.
    if len(order) > 1 and record.speeches:
        first = record.speeches[0]
        swapped = (first.model_copy(update={"role": order[1]}), *record.speeches[1:])
        rules = {v.rule for v in replay_meeting(record.state, swapped, record.minutes).violations}
        assert "ROUNDTABLE_SPEAKER_ORDER" in rules


@ON_DISK
@given(meetings(), st.data())
def test_any_lost_turn_json_advance_is_repairable(record: rt.MeetingRecord, data: st.DataObject) -> None:
    """Roll turn.json back to before the last speech, as a crash between the two writes would."""
    if not record.speeches or record.minutes is not None:
        return
    state = opening_state(record.state.conference, record.state.speaker_order, record.state.max_rounds, "")
    for _ in record.speeches[:-1]:
        state = advance(state)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "meeting"
        write(directory, record.model_copy(update={"state": state}))
        report: CheckReport = check_path(directory)
        assert [v.rule for v in report.violations] == ["ROUNDTABLE_UNCOMMITTED_SPEECH"]
        assert report.repairable
        rt.finish_commit(directory, consensus=data.draw(st.booleans()))
        assert check_path(directory).violations == []


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["turn.json", "AGENDA.md", "MINUTES.md", "001_a.md", "002_b.md", "01_a.md", "x.md", "9_.md"]),
        st.binary(max_size=120) | json_values.map(lambda v: json.dumps(v).encode()),
        max_size=6,
    )
)
def test_check_never_raises_on_a_garbage_meeting(files: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for name, data in files.items():
            (directory / name).write_bytes(data)
        report = rt.check(directory)
        assert isinstance(report, CheckReport)
        assert_typed(report.violations)
        assert report.exit_code in (0, 1, 2)

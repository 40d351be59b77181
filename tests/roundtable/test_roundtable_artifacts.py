"""The meeting directory on disk: writing it crash-safely, reading it totally, checking it."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest

import moot.protocols.roundtable.record as rt
from moot.core.files import CheckReport, atomic_write_text
from moot.detect import check_path
from moot.errors import ProtocolViolationError
from moot.protocols.roundtable.machine import Minutes, RoundtableReply, Speech, advance, compose_speech, opening_state

MINUTES = Minutes(summary="We met.", consensus="Adopt the cache.", unresolved="None.", action_items="- write it up")
ZH_MINUTES = Minutes(
    summary="讨论了缓存方案。", consensus="采用写穿缓存。", unresolved="无。", action_items="- 撰写设计文档"
)


def reply(text: str = "I agree.", *, consensus: bool = False) -> RoundtableReply:
    return RoundtableReply(
        position=text,
        analysis="Because.",
        responses_and_questions="None.",
        prompt_for_next_speaker="Your view?",
        consensus_reached=consensus,
    )


def start(root: Path, order: tuple[str, ...] = ("architect", "reviewer"), max_rounds: int = 1) -> Path:
    return rt.start_meeting(root, "cache-design", "Should we cache reads?", order, max_rounds, "Present the design.")


def rules(report: CheckReport) -> list[str]:
    return [v.rule for v in report.violations]


class CrashOnTurnJson:
    """Stands in for a process killed after the first write of a commit and before turn.json."""

    def __call__(self, path: Path, text: str) -> None:
        if path.name == "turn.json":
            raise KeyboardInterrupt("killed between the two writes")
        atomic_write_text(path, text)


def test_chinese_meeting_end_to_end(tmp_path: Path) -> None:
    directory = rt.start_meeting(tmp_path, "缓存设计", "是否加一层缓存？", ["架构师", "审查员"], 1, "请阐述初始设计")
    assert directory == tmp_path / ".roundtable" / "缓存设计"
    rt.commit_reply(directory, reply("采用写穿缓存。"), language="zh")
    rt.commit_reply(directory, reply("同意。"), language="zh")
    rt.write_minutes(directory, ZH_MINUTES, language="zh")

    names = sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))
    assert names == ["001_架构师.md", "002_审查员.md", "AGENDA.md", "MINUTES.md", "turn.json"]
    turn_text = (directory / "turn.json").read_text(encoding="utf-8")
    assert '"conference": "缓存设计"' in turn_text  # readable, not \\u-escaped
    assert turn_text.startswith('{\n  "conference"')  # two-space indent, the guide's field order
    assert "## 立场" in (directory / "001_架构师.md").read_text(encoding="utf-8")
    assert "## 最终共识" in (directory / "MINUTES.md").read_text(encoding="utf-8")

    report = check_path(directory)
    assert report.violations == [] and report.exit_code == 0
    assert report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "closed"


def test_start_writes_the_guide_agenda_and_opening_state(tmp_path: Path) -> None:
    directory = start(tmp_path)
    guide = (tmp_path / ".roundtable" / "GUIDE.md").read_text(encoding="utf-8")
    assert guide.startswith("# Roundtable Protocol v2") and "turn.json" in guide
    assert "Should we cache reads?" in (directory / "AGENDA.md").read_text(encoding="utf-8")
    state = json.loads((directory / "turn.json").read_text(encoding="utf-8"))
    assert state == {
        "conference": "cache-design",
        "status": "open",
        "round": 1,
        "max_rounds": 1,
        "speaker_order": ["architect", "reviewer"],
        "current_speaker_index": 0,
        "current_speaker": "architect",
        "prompt_for_speaker": "Present the design.",
    }
    assert check_path(directory).violations == []


def test_start_refuses_an_existing_meeting_and_bad_settings(tmp_path: Path) -> None:
    start(tmp_path)
    with pytest.raises(FileExistsError):
        start(tmp_path)
    with pytest.raises(ProtocolViolationError) as error:
        rt.start_meeting(tmp_path, "other", "x", ["a", "a"], 1, "")
    assert "ROUNDTABLE_STATE_SCHEMA" in str(error.value)
    with pytest.raises(ProtocolViolationError):
        rt.start_meeting(tmp_path, "third", "x", ["a"], 0, "")


@pytest.mark.parametrize("name", ["../escape", "a/b", "", ".hidden", "..", "x\x00y"])
def test_meeting_names_cannot_leave_the_roundtable_directory(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError):
        rt.meeting_dir(tmp_path, name)


def test_crash_between_speech_and_turn_json_is_repairable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = start(tmp_path, order=("架构师", "审查员"))
    rt.commit_reply(directory, reply("first"))
    with monkeypatch.context() as patch:
        patch.setattr(rt, "atomic_write_text", CrashOnTurnJson())
        with pytest.raises(KeyboardInterrupt):
            rt.commit_reply(directory, reply("second"))
    assert (directory / "002_审查员.md").exists()  # the speech was written first

    report = check_path(directory)
    # The speech's chain row was not appended either; its mark, written with it, proves it.
    assert rules(report) == ["ROUNDTABLE_UNCOMMITTED_SPEECH", "CHAIN_SHORT"]
    assert report.repairable and report.exit_code == 1
    assert {v.file for v in report.violations} == {str(directory / "002_审查员.md")}

    # Nothing builds on a half-finished commit.
    with pytest.raises(ProtocolViolationError) as error:
        rt.commit_reply(directory, reply("third"))
    assert "ROUNDTABLE_UNCOMMITTED_SPEECH" in str(error.value)

    state = rt.finish_commit(directory)
    assert (state.turn.status, state.turn.current_speaker) == ("concluding", "moderator")
    assert check_path(directory).violations == []
    # The repaired speech is now in the chain: editing it is tampering.
    (directory / "002_审查员.md").write_text("rewritten", encoding="utf-8")
    assert "PRIOR_TURN_MODIFIED" in rules(check_path(directory))


def test_finish_commit_uses_the_speakers_prompt_when_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = start(tmp_path, order=("a", "b", "c"))
    with monkeypatch.context() as patch:
        patch.setattr(rt, "atomic_write_text", CrashOnTurnJson())
        with pytest.raises(KeyboardInterrupt):
            rt.commit_reply(directory, reply())
    state = rt.finish_commit(directory, prompt="b, check the numbers.")
    assert (state.turn.current_speaker, state.turn.prompt_for_speaker) == ("b", "b, check the numbers.")
    assert rt.finish_commit(directory) == state  # nothing pending: a no-op


def test_crash_between_minutes_and_closing_is_repairable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = start(tmp_path, order=("a",))
    rt.commit_reply(directory, reply())
    with monkeypatch.context() as patch:
        patch.setattr(rt, "atomic_write_text", CrashOnTurnJson())
        with pytest.raises(KeyboardInterrupt):
            rt.write_minutes(directory, MINUTES)
    report = check_path(directory)
    assert rules(report) == ["ROUNDTABLE_UNCOMMITTED_MINUTES", "CHAIN_SHORT"] and report.repairable
    state = rt.finish_commit(directory)
    assert state.turn.status == "closed"
    assert check_path(directory).violations == []


def test_non_moderator_speech_while_concluding_is_refused(tmp_path: Path) -> None:
    directory = start(tmp_path, order=("a", "b"))
    rt.commit_reply(directory, reply())
    rt.commit_reply(directory, reply())
    state = rt.load_meeting(directory)
    assert state.turn.status == "concluding"
    late = Speech(sequence=3, role="a", body="One more thing.")
    with pytest.raises(ProtocolViolationError) as error:
        rt.commit_speech(directory, late, state.turn)
    assert [v.rule for v in error.value.violations] == ["ROUNDTABLE_CONCLUDING_MODERATOR_ONLY"]
    assert not (directory / "003_a.md").exists()
    # Written by hand anyway, check reports it.
    (directory / "003_a.md").write_text("One more thing.", encoding="utf-8")
    assert "ROUNDTABLE_CONCLUDING_MODERATOR_ONLY" in rules(check_path(directory))


def test_minutes_missing_a_part_block_closing(tmp_path: Path) -> None:
    directory = start(tmp_path, order=("a",))
    rt.commit_reply(directory, reply())
    with pytest.raises(ProtocolViolationError) as error:
        rt.write_minutes(directory, MINUTES.model_copy(update={"action_items": ""}))
    assert "Action Items" in str(error.value)
    assert not (directory / "MINUTES.md").exists()
    assert rt.load_meeting(directory).turn.status == "concluding"

    rt.write_minutes(directory, MINUTES)
    minutes = directory / "MINUTES.md"
    text = minutes.read_text(encoding="utf-8")
    minutes.write_text(text.split("## Action Items")[0], encoding="utf-8")  # a part deleted by hand
    found = rules(check_path(directory))
    assert "ROUNDTABLE_MINUTES" in found and "PRIOR_TURN_MODIFIED" in found


def test_speech_out_of_turn_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    directory = start(tmp_path)
    state = rt.load_meeting(directory)
    speech = Speech(sequence=1, role="reviewer", body="Me first.")
    with pytest.raises(ProtocolViolationError) as error:
        rt.commit_speech(directory, speech, advance(state.turn))
    assert "ROUNDTABLE_SPEAKER_ORDER" in str(error.value)
    assert not (directory / "001_reviewer.md").exists()


def test_edited_speech_is_reported_at_its_file(tmp_path: Path) -> None:
    directory = start(tmp_path, order=("a", "b"), max_rounds=2)
    rt.commit_reply(directory, reply("original"))
    rt.commit_reply(directory, reply())
    (directory / "001_a.md").write_text("quietly changed", encoding="utf-8")
    report = check_path(directory)
    assert [(v.rule, v.file) for v in report.violations] == [("PRIOR_TURN_MODIFIED", str(directory / "001_a.md"))]


def test_decomposed_role_names_on_disk_match(tmp_path: Path) -> None:
    # macOS may hand back file names in NFD; the roles in turn.json are NFC.
    directory = rt.start_meeting(tmp_path, "café", "x", ["José", "Zoë"], 1, "")
    body = "Hola."
    nfd = unicodedata.normalize("NFD", "001_José.md")
    (directory / nfd).write_text(body, encoding="utf-8")
    assert rules(check_path(directory)) == ["ROUNDTABLE_UNCOMMITTED_SPEECH"]


def test_not_utf8_speech_is_located_and_unreadable(tmp_path: Path) -> None:
    directory = start(tmp_path)
    (directory / "001_architect.md").write_bytes(b"line one\ncaf\xe9\n")
    report = check_path(directory)
    assert [(v.rule, v.line) for v in report.violations] == [("FILE_NOT_UTF8", 2)]
    assert report.exit_code == 2


def test_symlinks_are_refused(tmp_path: Path) -> None:
    directory = start(tmp_path)
    outside = tmp_path / "elsewhere.md"
    outside.write_text("text", encoding="utf-8")
    os.symlink(outside, directory / "001_architect.md")
    assert "FILE_SYMLINK" in rules(check_path(directory))
    link = tmp_path / "linked-meeting"
    os.symlink(directory, link)
    assert rules(rt.check(link)) == ["FILE_SYMLINK"]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("", "ROUNDTABLE_STATE_JSON"),
        ('{"round": NaN}', "ROUNDTABLE_STATE_JSON"),
        ("[1, 2]", "ROUNDTABLE_STATE_SCHEMA"),
        ('{"round": 1}', "ROUNDTABLE_STATE_SCHEMA"),
        ("[" * 100_000, "ROUNDTABLE_STATE_JSON"),
        ('{"round": ' + "9" * 5000 + "}", "ROUNDTABLE_STATE_JSON"),
    ],
)
def test_garbage_turn_json_is_an_invalid_record_not_a_crash(tmp_path: Path, text: str, rule: str) -> None:
    directory = start(tmp_path)
    (directory / "turn.json").write_text(text, encoding="utf-8")
    report = check_path(directory)
    assert rule in rules(report)
    assert report.exit_code == 1


def test_boolean_round_is_a_type_error() -> None:
    state = json.loads(rt.render_turn_json(opening_state("x", ["a"], 1, "")))
    state["round"] = True
    parsed, found = rt.parse_turn_json(json.dumps(state))
    assert parsed is None
    assert [(v.rule, v.line) for v in found] == [("ROUNDTABLE_STATE_SCHEMA", 1)]
    assert "'round' must be an integer" in found[0].message


def test_unknown_key_is_a_warning_and_the_state_still_parses() -> None:
    state = json.loads(rt.render_turn_json(opening_state("x", ["a"], 1, "")))
    state["notes"] = "hand-added"
    parsed, found = rt.parse_turn_json(json.dumps(state, indent=2))
    assert parsed is not None
    assert [(v.rule, v.is_error, v.line) for v in found] == [("ROUNDTABLE_STATE_UNKNOWN_KEY", False, 12)]


def test_stray_files_warn_and_temp_files_are_ignored(tmp_path: Path) -> None:
    directory = start(tmp_path)
    (directory / "notes.txt").write_text("scratch", encoding="utf-8")
    (directory / ".turn.json.abc.tmp").write_text("{", encoding="utf-8")  # left by a killed atomic write
    report = check_path(directory)
    assert [(v.rule, v.is_error) for v in report.violations] == [("ROUNDTABLE_STRAY_FILE", False)]
    assert report.exit_code == 0


def test_minutes_headings_are_tolerant() -> None:
    text = (
        "# Minutes\n\n## 1. discussion summary:\n\nWe met.\n\n### Detail\n\nMore.\n\n"
        "## **Final Consensus**\n\nAdopt.\n\n```\n## Action Items\n```\n\n"
        "## 悬而未决的分歧\n\n无。\n\n## ACTION ITEMS ##\n\n- ship\n"
    )
    minutes, found = rt.parse_minutes(text)
    assert found == []
    assert minutes.summary == "We met.\n\n### Detail\n\nMore."
    assert minutes.consensus == "Adopt.\n\n```\n## Action Items\n```"
    assert (minutes.unresolved, minutes.action_items) == ("无。", "- ship")


def test_repeated_minutes_heading_is_reported() -> None:
    _, found = rt.parse_minutes("## Summary\n\na\n\n## Discussion Summary\n\nb\n")
    assert [(v.rule, v.line) for v in found] == [("ROUNDTABLE_MINUTES", 5)]


def test_moot_ends_its_speeches_with_the_chain_head_and_a_speech_written_by_hand_after_them_is_adopted(
    tmp_path: Path,
) -> None:
    directory = start(tmp_path, order=("a", "b", "c"))
    rt.commit_reply(directory, reply("first"))
    written = (directory / "001_a.md").read_text(encoding="utf-8")
    assert written.splitlines()[-1].startswith("<!-- moot-chain turns=1 head=")
    meeting, _ = rt.parse_meeting(directory)
    assert meeting is not None and meeting.speeches[0].body == compose_speech(reply("first"), "en")  # mark set aside
    # An agent following the guide by hand: a new speech file, then turn.json.
    state = rt.load_meeting(directory)
    (directory / "002_b.md").write_text("## Position\n\nWritten by hand.\n", encoding="utf-8")
    atomic_write_text(directory / "turn.json", rt.render_turn_json(advance(state.turn, prompt="c, go on.")))
    report = check_path(directory)
    assert rules(report) == ["CHAIN_SHORT"] and report.repairable  # one turn outside moot's chain
    rt.commit_reply(directory, reply("third"))  # moot's next write adopts it
    assert check_path(directory).violations == []
    (directory / "002_b.md").write_text("## Position\n\nRewritten later.\n", encoding="utf-8")
    assert rules(check_path(directory)) == ["PRIOR_TURN_MODIFIED"]

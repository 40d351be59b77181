"""The roundtable driver run by the real Engine with scripted participants."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from moot.agents import AgentRequest, FunctionAgent
from moot.core.files import atomic_write_text
from moot.detect import check_path
from moot.engine.loop import Engine, Limits
from moot.errors import UserError
from moot.protocols.roundtable import record
from moot.protocols.roundtable.driver import FAILURES_FILE, RoundtableDriver, RoundtableOptions
from moot.protocols.roundtable.machine import MODERATOR, Speech, speech_file_name

STARTED = "2026-05-01 10:00"
MINUTES = {
    "summary": "Three roles discussed caching reads.",
    "consensus": "Cache reads with a short TTL.",
    "unresolved": "How to invalidate on writes.",
    "action_items": "- architect: write the design note",
}


def start(
    root: Path, speakers: tuple[str, ...] = ("architect", "reviewer", "security"), **options: object
) -> RoundtableDriver:
    options.setdefault("topic", "Should we cache reads?")
    return RoundtableDriver.start(root, RoundtableOptions(speakers=speakers, **options), STARTED)  # type: ignore[arg-type]


class Meeting:
    """Participants as one function: speech n says 'speech n', its prompt for the next names n."""

    def __init__(self, *, consensus_at: int | None = None, minutes: dict[str, str] = MINUTES) -> None:
        self.consensus_at = consensus_at
        self.minutes = minutes
        self.spoken = 0
        self.agent = FunctionAgent(self.reply)

    def reply(self, request: AgentRequest) -> str:
        if request.role == MODERATOR:
            return json.dumps(self.minutes)
        self.spoken += 1
        n = self.spoken
        return json.dumps(
            {
                "position": f"Position of speech {n}.",
                "analysis": f"Analysis of speech {n}.",
                "responses_and_questions": f"Questions of speech {n}.",
                "prompt_for_next_speaker": f"Instruction written by speech {n}.",
                "consensus_reached": n == self.consensus_at,
            }
        )

    def prompts(self, role: str | None = None) -> list[AgentRequest]:
        return [r for r in self.agent.requests if role is None or r.role == role]


def run(driver: RoundtableDriver, agent: FunctionAgent, **limits: object) -> dict[str, object]:
    engine = Engine(driver, {role: agent for role in driver.roles()}, Limits(**limits))  # type: ignore[arg-type]
    return asyncio.run(engine.run()).to_json()


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))


def test_three_speakers_two_rounds_close_with_minutes(tmp_path: Path) -> None:
    driver = start(tmp_path, max_rounds=2)
    assert driver.roles() == ["architect", "reviewer", "security", "moderator"]
    meeting = Meeting()
    result = run(driver, meeting.agent)

    # Six speeches and the minutes: the summary counts every turn that ran.
    assert result["outcome"] == "closed" and result["consensus"] is False
    assert result["turns"] == result["turns_this_run"] == 7
    directory = driver.record_path
    assert directory == tmp_path / ".roundtable" / "should-we-cache-reads"
    assert files(directory) == [
        "001_architect.md",
        "002_reviewer.md",
        "003_security.md",
        "004_architect.md",
        "005_reviewer.md",
        "006_security.md",
        "AGENDA.md",
        "MINUTES.md",
        "turn.json",
    ]
    assert [r.role for r in meeting.agent.requests] == ["architect", "reviewer", "security"] * 2 + ["moderator"]
    minutes = (directory / "MINUTES.md").read_text(encoding="utf-8")
    for heading, text in zip(
        ("Discussion Summary", "Final Consensus", "Unresolved Disagreements", "Action Items"),
        MINUTES.values(),
        strict=True,
    ):
        assert f"## {heading}\n\n{text}" in minutes
    speech = (directory / "004_architect.md").read_text(encoding="utf-8")
    assert speech.startswith("## Position\n\nPosition of speech 4.") and "## Responses / Questions" in speech
    state = json.loads((directory / "turn.json").read_text(encoding="utf-8"))
    assert state["status"] == "closed" and state["current_speaker"] == MODERATOR
    assert state["round"] == 3  # the seed's step 2 counts past max_rounds before step 3 concludes
    report = check_path(directory)
    assert report.exit_code == 0 and report.violations == []


def test_speaker_prompts_hold_the_agenda_the_instruction_and_only_the_latest_three_speeches(tmp_path: Path) -> None:
    driver = start(tmp_path, max_rounds=2)
    meeting = Meeting()
    run(driver, meeting.agent)
    speakers = [r for r in meeting.prompts() if r.role != MODERATOR]

    sixth = speakers[5].prompt
    assert "Should we cache reads?" in sixth and "## Roles" in sixth  # AGENDA.md
    for n in (3, 4, 5):
        assert f"Position of speech {n}." in sixth
    for n in (1, 2):
        assert f"speech {n}." not in sixth
    assert "002_reviewer.md" not in sixth and "[2 earlier speech(es) not shown]" in sixth
    # Each speaker's instruction is what the previous speaker wrote for them.
    assert "Open the discussion" in speakers[0].prompt
    for k in range(1, 6):
        assert f"Instruction written by speech {k}." in speakers[k].prompt
    # The moderator reads every speech and gets the last speaker's instruction.
    moderator = meeting.prompts(MODERATOR)[0].prompt
    assert all(f"Position of speech {n}." in moderator for n in range(1, 7))
    assert "Instruction written by speech 6." in moderator


def test_consensus_can_only_be_declared_once_everyone_has_spoken(tmp_path: Path) -> None:
    driver = start(tmp_path, max_rounds=3)
    first = driver.request_for("architect").json_schema
    assert first is not None and first["properties"]["consensus_reached"]["enum"] == [False]
    early = Meeting(consensus_at=1)
    candidate = driver.read_reply("architect", early.reply(driver.request_for("architect")), "t")
    assert [v.rule for v in candidate.errors] == ["REPLY_FORMAT"]

    meeting = Meeting(consensus_at=3)
    result = run(driver, meeting.agent)
    assert result["outcome"] == "closed" and result["consensus"] is True and result["turns"] == 4
    last_of_round_one = meeting.prompts("security")[0].json_schema
    assert last_of_round_one is not None and "enum" not in last_of_round_one["properties"]["consensus_reached"]
    assert "stays false" in (meeting.prompts("reviewer")[0].system or "")
    assert check_path(driver.record_path).exit_code == 0


def test_an_invalid_reply_is_repaired_with_the_rule_that_it_broke(tmp_path: Path) -> None:
    driver = start(tmp_path, ("architect", "reviewer"), max_rounds=1)
    meeting = Meeting(minutes={**MINUTES, "consensus": " "})
    fixed = Meeting()

    def moderator_fixes_it(request: AgentRequest) -> str:
        if request.role == MODERATOR and "ROUNDTABLE_MINUTES" in request.prompt:
            return fixed.reply(request)
        return meeting.reply(request)

    agent = FunctionAgent(moderator_fixes_it)
    result = run(driver, agent, repairs=2)
    assert result["outcome"] == "closed"
    first, repair = [r for r in agent.requests if r.role == MODERATOR]
    assert "ROUNDTABLE_MINUTES" in repair.prompt and "Final Consensus" in repair.prompt
    assert "Fix the errors and try again." in repair.prompt and "Fix the errors" not in first.prompt
    assert check_path(driver.record_path).exit_code == 0


def test_a_speech_of_headings_alone_is_sent_back_and_the_repaired_meeting_checks_clean(tmp_path: Path) -> None:
    driver = start(tmp_path, ("architect", "reviewer"), max_rounds=1)
    meeting = Meeting()
    hollow = {"position": "][", "analysis": "-", "responses_and_questions": "...", "prompt_for_next_speaker": "Go."}

    def empty_first(request: AgentRequest) -> str:
        if len(agent.requests) == 1:
            return json.dumps({**hollow, "consensus_reached": False})
        return meeting.reply(request)

    agent = FunctionAgent(empty_first)
    result = run(driver, agent, repairs=2)
    assert result["outcome"] == "closed" and "ROUNDTABLE_EMPTY_SPEECH" in agent.requests[1].prompt
    report = check_path(driver.record_path)
    assert report.exit_code == 0 and report.violations == []
    assert "Position of speech 1." in (driver.record_path / speech_file_name(1, "architect")).read_text()


def test_a_chinese_meeting_runs_in_chinese(tmp_path: Path) -> None:
    driver = start(tmp_path, ("架构师", "审查员"), topic="是否为读请求加缓存？", name="缓存设计", max_rounds=1)
    meeting = Meeting(
        minutes={
            "summary": "讨论了缓存。",
            "consensus": "加缓存。",
            "unresolved": "失效策略。",
            "action_items": "- 架构师：写文档",
        }
    )
    result = run(driver, meeting.agent)

    assert result["outcome"] == "closed"
    directory = tmp_path / ".roundtable" / "缓存设计"
    assert files(directory) == ["001_架构师.md", "002_审查员.md", "AGENDA.md", "MINUTES.md", "turn.json"]
    assert (directory / "001_架构师.md").read_text(encoding="utf-8").startswith("## 立场\n\n")
    minutes = (directory / "MINUTES.md").read_text(encoding="utf-8")
    assert "## 讨论摘要" in minutes and "## 决议行动项\n\n- 架构师：写文档" in minutes
    second = meeting.prompts("审查员")[0]
    assert "你是圆桌会议「缓存设计」中的 审查员" in (second.system or "")
    assert "给你的指示" in second.prompt and "Instruction written by speech 1." in second.prompt
    assert check_path(directory).exit_code == 0
    assert RoundtableDriver(directory).language == "zh"


class Killed(BaseException):
    """Stands in for a SIGKILL mid-turn: not an Exception, so the engine does not turn it into an outcome."""


def test_resume_after_a_crash_finishes_with_no_lost_or_repeated_speech(tmp_path: Path) -> None:
    driver = start(tmp_path, max_rounds=2)
    meeting = Meeting()

    def crash_at_four(request: AgentRequest) -> str:
        if meeting.spoken == 3:
            raise Killed("the process was killed")
        return meeting.reply(request)

    with pytest.raises(Killed, match="killed"):
        run(driver, FunctionAgent(crash_at_four))
    assert len(list(driver.record_path.glob("0*.md"))) == 3

    resumed = RoundtableDriver(driver.record_path)
    assert resumed.next_speaker() == "architect" and resumed.summary().round == 2
    result = run(resumed, meeting.agent)
    assert result["outcome"] == "closed" and result["turns_this_run"] == 4
    bodies = [p.read_text(encoding="utf-8") for p in sorted(driver.record_path.glob("0*.md"))]
    assert [f"Position of speech {n}." in body for n, body in enumerate(bodies, start=1)] == [True] * 6
    assert check_path(driver.record_path).exit_code == 0


def test_a_speech_written_without_its_turn_json_is_finished_when_the_driver_is_built(tmp_path: Path) -> None:
    driver = start(tmp_path, ("architect", "reviewer"), max_rounds=1)
    speech = Speech(sequence=1, role="architect", body="## Position\n\nWrite-through.\n")
    atomic_write_text(driver.record_path / speech_file_name(1, "architect"), speech.body)  # then the crash
    assert check_path(driver.record_path).repairable

    resumed = RoundtableDriver(driver.record_path)
    assert resumed.next_speaker() == "reviewer"
    assert "Read 001_architect.md" in resumed.request_for("reviewer").prompt
    run(resumed, Meeting().agent)
    assert files(driver.record_path)[:2] == ["001_architect.md", "002_reviewer.md"]
    assert check_path(driver.record_path).exit_code == 0


def test_a_speaker_that_fails_leaves_the_meeting_open_and_resumable(tmp_path: Path) -> None:
    driver = start(tmp_path, ("architect", "reviewer"), max_rounds=1)
    meeting = Meeting()

    def reviewer_never_answers(request: AgentRequest) -> str:
        return "not json" if request.role == "reviewer" else meeting.reply(request)

    result = run(driver, FunctionAgent(reviewer_never_answers), repairs=1)
    assert result["outcome"] == "RUN_HALTED" and result["consensus"] is False
    assert "reviewer gave no valid turn in 2 attempts (last: REPLY_FORMAT)" in str(result["reason"])
    logged = json.loads((driver.record_path / FAILURES_FILE).read_text(encoding="utf-8"))
    assert logged["role"] == "reviewer" and "REPLY_FORMAT" in logged["reason"]
    report = check_path(driver.record_path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.next_speaker == "reviewer"

    resumed = RoundtableDriver(driver.record_path)
    assert run(resumed, meeting.agent)["outcome"] == "closed"
    assert check_path(driver.record_path).exit_code == 0


def test_a_moderator_that_fails_gets_minutes_recording_the_failure(tmp_path: Path) -> None:
    driver = start(tmp_path, ("architect", "reviewer"), max_rounds=1)
    meeting = Meeting(minutes={**MINUTES, "summary": ""})
    result = run(driver, meeting.agent, repairs=1)

    assert result["outcome"] == "closed" and "moderator failed" in str(result["reason"])
    minutes, _ = record.parse_minutes((driver.record_path / "MINUTES.md").read_text(encoding="utf-8"))
    assert "001_architect.md, 002_reviewer.md" in minutes.summary
    assert "ROUNDTABLE_MINUTES" in minutes.unresolved and minutes.consensus == "None recorded."
    assert check_path(driver.record_path).exit_code == 0
    assert RoundtableDriver(driver.record_path).next_speaker() is None


def test_headings_inside_a_minutes_part_do_not_break_the_minutes(tmp_path: Path) -> None:
    driver = start(tmp_path, ("architect", "reviewer"), max_rounds=1)
    tricky = {**MINUTES, "summary": "We met.\n## Action Items\nnot a heading\n```"}
    run(driver, Meeting(minutes=tricky).agent)
    minutes, problems = record.parse_minutes((driver.record_path / "MINUTES.md").read_text(encoding="utf-8"))
    assert problems == [] and minutes.action_items == MINUTES["action_items"]
    assert "not a heading" in minutes.summary
    assert check_path(driver.record_path).exit_code == 0


def test_an_agenda_file_becomes_the_background(tmp_path: Path) -> None:
    agenda = tmp_path / "cache-agenda.md"
    agenda.write_text("# Caching\n\nOur reads are slow.\n", encoding="utf-8")
    driver = start(tmp_path, ("architect", "reviewer"), topic=None, agenda=agenda, max_rounds=1)
    assert driver.record_path.name == "cache-agenda"
    assert "Our reads are slow." in driver.request_for("architect").prompt


def test_bad_input_is_a_one_sentence_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="give --topic TEXT or --agenda FILE"):
        start(tmp_path, topic=None)
    with pytest.raises(UserError, match="at least two different roles"):
        start(tmp_path, ("architect",))
    with pytest.raises(UserError, match="at least two different roles"):
        start(tmp_path, ("architect", "architect"))
    with pytest.raises(UserError, match="contains the character '/'"):
        start(tmp_path, ("architect", "re/viewer"))
    with pytest.raises(UserError, match="names 'moderator', the role that writes the minutes"):
        start(tmp_path, ("moderator", "reviewer"))  # it would speak and then write the minutes silently
    with pytest.raises(UserError, match="starts with a dot"):
        start(tmp_path, name="../elsewhere")
    with pytest.raises(UserError, match="--max-rounds 0"):
        start(tmp_path, max_rounds=0)
    with pytest.raises(UserError, match="cannot read the agenda file"):
        start(tmp_path, topic=None, agenda=tmp_path / "missing.md")
    start(tmp_path)
    with pytest.raises(UserError, match="already exists; resume it with `moot resume"):
        start(tmp_path)
    assert not (tmp_path / "elsewhere").exists()

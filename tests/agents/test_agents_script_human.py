"""Prepared replies (ScriptAgent, FunctionAgent, script:FILE) and people (HumanAgent)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from agents_helpers import VERDICT_SCHEMA

from moot.agents import AgentReply, AgentRequest, FunctionAgent, HumanAgent, ScriptAgent, resolve_agent
from moot.agents.base import Agent
from moot.errors import AgentBadReply, AgentError, AgentUnavailable


def say(agent: Agent, role: str = "", prompt: str = "go") -> str:
    return asyncio.run(agent.reply(AgentRequest(prompt=prompt, role=role))).text


def test_script_agent_replays_in_order_and_per_role() -> None:
    agent = ScriptAgent(["first", "second"]).enqueue("for the critic", role="critic")
    assert say(agent, "critic") == "first"  # unrouted replies go to whoever asks next
    assert say(agent, "author") == "second"
    assert say(agent, "critic") == "for the critic"
    assert [request.role for request in agent.requests] == ["critic", "author", "critic"]
    assert agent.remaining == 0


def test_role_replies_wait_for_their_role() -> None:
    agent = ScriptAgent().enqueue("critique", role="critic").enqueue("draft", role="author")
    assert say(agent, "author") == "draft"
    assert say(agent, "critic") == "critique"


def test_exhausted_script_is_a_clear_error() -> None:
    agent = ScriptAgent(["only"], source="demo.jsonl")
    say(agent, "critic")
    with pytest.raises(AgentError, match=r"demo\.jsonl has no reply left for role 'critic' after 1 calls"):
        say(agent, "critic")


def test_script_file_as_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "debate.jsonl"
    lines = [
        json.dumps({"role": "author", "reply": "My draft."}),
        "",
        json.dumps({"role": "critic", "reply": {"verdict": "agree", "reason": "ok"}}),
        json.dumps({"verdict": "disagree", "reason": "a bare turn object"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    agent = resolve_agent(f"script:{path}")
    assert say(agent, "critic") == '{"verdict":"agree","reason":"ok"}'
    assert say(agent, "author") == "My draft."
    assert json.loads(say(agent, "critic")) == {"verdict": "disagree", "reason": "a bare turn object"}
    reply = asyncio.run(ScriptAgent.from_file(path).reply(AgentRequest(prompt="x", role="author")))
    assert reply.model == f"script:{path}"


def test_script_file_as_json_array(tmp_path: Path) -> None:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(["one", {"reply": "two", "role": "b"}, "three"]))
    agent = ScriptAgent.from_file(path)
    assert [say(agent, "a"), say(agent, "a"), say(agent, "b")] == ["one", "three", "two"]


def test_bad_script_files_name_the_problem(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('"fine"\n{not json\n')
    with pytest.raises(AgentError, match=r"broken\.jsonl line 2 is not JSON"):
        ScriptAgent.from_file(broken)
    with pytest.raises(AgentUnavailable, match=r"script file .*absent\.json was not found"):
        resolve_agent(f"script:{tmp_path / 'absent.json'}")


def test_function_agent_sync_and_async() -> None:
    echo = FunctionAgent(lambda request: f"{request.role} heard {request.prompt}")
    assert say(echo, "critic", "hello") == "critic heard hello"

    async def counted(request: AgentRequest) -> AgentReply:
        return AgentReply(text="{}", latency_s=0.0, model="fn", completion_tokens=1)

    assert asyncio.run(FunctionAgent(counted).reply(AgentRequest(prompt="x"))).completion_tokens == 1


def test_human_answers_a_plain_turn_in_lines_until_a_dot_then_until_eof() -> None:
    shown = io.StringIO()
    typed = io.StringIO("The plan is **sound**.\n\nExcept for step 3.\n.\nSecond turn.\n")
    agent = HumanAgent(input_stream=typed, output_stream=shown)
    first = asyncio.run(agent.reply(AgentRequest(prompt="Review the plan.", role="critic", protocol="critique")))
    assert first.text == "The plan is **sound**.\n\nExcept for step 3."
    screen = shown.getvalue()
    assert "turn for critic (critique)" in screen and "Review the plan." in screen
    assert "line holding only '.'" in screen
    assert say(agent) == "Second turn."  # end of input also ends a turn
    with pytest.raises(AgentBadReply, match="no turn was typed"):
        say(agent)


def test_human_fills_a_structured_turn_in_words_and_moot_builds_the_json() -> None:
    shown = io.StringIO()
    typed = io.StringIO("nonsense\n2\nStep 3 has no owner.\nAssign one.\n.\n")
    agent = HumanAgent(input_stream=typed, output_stream=shown)
    request = AgentRequest(prompt="Review the plan.", role="critic", json_schema=VERDICT_SCHEMA)
    answer = asyncio.run(agent.reply(request))
    assert json.loads(answer.text) == {"verdict": "disagree", "reason": "Step 3 has no owner.\nAssign one."}
    screen = shown.getvalue()
    assert "1) agree  2) disagree" in screen and screen.count("choose 1-2") == 2  # asked again after 'nonsense'
    assert '"properties"' not in screen and "JSON Schema" not in screen


def test_human_writes_a_whole_duel_turn_from_the_schema_and_the_driver_accepts_it(tmp_path: Path) -> None:
    from moot.protocols.duel.driver import DuelDriver, DuelOptions

    source = tmp_path / "doc.md"
    source.write_text("# Use SQLite\n\n## Why\nIt is one file.\n\n## Cost\nIt is free.\n", encoding="utf-8")
    options = DuelOptions(source=source, topic=None, roles=("advocate", "skeptic"), models=("human", "human"))
    driver = DuelDriver.start(tmp_path, options, "2026-11-24 10:00")
    request = driver.request_for("advocate")
    answers = [
        "SQLite is enough for one writer.\n.",  # position (stance has one choice on turn 1)
        "1",  # one counterpoint
        "2",  # addresses: source § Why
        "A server adds operations work.\n.",
        "3",  # evidence section: Cost
        "Keep it simple.\n.",
        "1",  # one agreement
        "Backups matter either way.\n.",
        "Nobody has priced the migration.\n.",  # novel argument
        "2",  # novel evidence section: Why
        ".",  # no principle
        "Many writers would need a server.\n.",  # limitation
        "0",  # no blocking issues
    ]
    agent = HumanAgent(input_stream=io.StringIO("\n".join(answers) + "\n"), output_stream=io.StringIO())
    reply = asyncio.run(agent.reply(request))
    candidate = driver.read_reply("advocate", reply.text, "2026-11-24 10:01")
    assert candidate.turn is not None and not candidate.errors, candidate.violations
    assert json.loads(reply.text)["counterpoints"][0]["evidence"]["section"] == "Cost"


def test_human_refuses_without_a_terminal_when_probed_or_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("piped text"))
    agent = resolve_agent("human")  # choosing a person needs no terminal (a dry run prices one)
    with pytest.raises(AgentUnavailable, match=r"needs a terminal on stdin: .*script:FILE"):
        asyncio.run(agent.probe())
    with pytest.raises(AgentUnavailable, match=r"needs a terminal on stdin"):
        asyncio.run(agent.reply(AgentRequest(prompt="Your turn.")))


def test_human_gives_an_agora_signal_confidence_and_message_in_words(tmp_path: Path) -> None:
    from moot.protocols.agora.driver import AgoraDriver, AgoraOptions

    driver = AgoraDriver.start(tmp_path, AgoraOptions(topic="Strategy or Decorator?"), "2026-11-24 10:00")
    role = driver.next_speaker()
    assert role is not None
    answers = ["1", "Strategy keeps each rule in one class.\n.", "0.72", "0.7"]  # 0.72 is not a step
    shown = io.StringIO()
    agent = HumanAgent(input_stream=io.StringIO("\n".join(answers) + "\n"), output_stream=shown)
    reply = asyncio.run(agent.reply(driver.request_for(role)))
    turn = json.loads(reply.text)
    assert turn["signal"] == "propose" and turn["confidence"] == 0.7 and turn["target"] is None
    assert turn["evidence"] == [] and "the nearest is 0.7" in shown.getvalue()
    candidate = driver.read_reply(role, reply.text, "2026-11-24 10:01")
    assert candidate.turn is not None and not candidate.errors, candidate.violations

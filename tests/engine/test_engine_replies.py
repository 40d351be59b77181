"""Reading what real models send: raw line breaks in strings, one fenced block, prose around one object,
and repair prompts that say what the parser found and where."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from moot.agents import AgentRequest, FunctionAgent
from moot.detect import check_path
from moot.engine.loop import Engine, Limits
from moot.engine.replies import find_object, parse_reply
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions
from moot.protocols.critique.machine import CritiqueReply

STARTED = "2026-11-22 09:00"


def read(text: str) -> CritiqueReply:
    reply, problem = parse_reply(text, CritiqueReply)
    assert problem is None, problem
    assert reply is not None
    return reply


def problem_of(text: str) -> str:
    reply, problem = parse_reply(text, CritiqueReply)
    assert reply is None and problem is not None and problem.rule == "REPLY_FORMAT"
    return problem.message


def test_a_raw_line_break_inside_a_string_is_read_as_one() -> None:
    reply = read('{"message": "First paragraph.\n\nSecond paragraph.", "status": "AWAITING", "summary": ""}')
    assert reply.message == "First paragraph.\n\nSecond paragraph."


def test_one_fenced_json_block_is_read() -> None:
    text = 'Here is my turn:\n\n```json\n{"message": "Fenced.", "status": "AWAITING", "summary": ""}\n```\n'
    assert read(text).message == "Fenced."


def test_prose_around_a_single_object_is_read() -> None:
    text = 'Sure! My turn follows.\n{"message": "In prose.", "status": "AWAITING", "summary": ""}\nHope that helps {:'
    assert read(text).message == "In prose."


def test_two_objects_or_two_blocks_are_refused_with_where_they_are() -> None:
    one = '{"message": "A", "status": "AWAITING", "summary": ""}'
    assert "more than one JSON object (lines 1 and 3)" in problem_of(f"{one}\n\n{one}")
    assert "2 fenced blocks" in problem_of(f"```json\n{one}\n```\nor\n```json\n{one}\n```")


def test_a_parse_error_names_its_line_and_column() -> None:
    text = '{\n  "message": "Fine."\n  "status": "AWAITING"\n}'
    message = problem_of(text)
    assert message == "the reply is not valid JSON at line 3, column 3: Expecting ',' delimiter; fix it there."


def test_a_cut_off_reply_says_where_it_ends_and_that_it_may_have_been_cut() -> None:
    message = problem_of('{"message": "A long thought that never')
    assert "incomplete: it ends at line 1, column 39 with a string" in message and "cut off" in message


def test_no_object_an_array_and_schema_errors_each_say_so() -> None:
    assert "holds no JSON object (it begins 'I think we should merge.')" in problem_of("I think we should merge.")
    assert "a JSON array, not an object" in problem_of('[{"message": "A"}]')
    assert "does not match the schema: status:" in problem_of('{"message": "A", "status": "MAYBE", "summary": ""}')


def test_the_found_object_is_strict_json_with_its_first_line() -> None:
    found = find_object('Turn:\n\n{"message": "two\nlines\there"}')
    assert not isinstance(found, str)
    assert found.line == 3 and json.loads(found.text) == {"message": "two\nlines\there"}


def test_the_repair_prompt_states_the_parse_error_not_a_false_one(tmp_path: Path) -> None:
    """A reply with a stray key (a real JSON object) used to be called 'not a JSON object'."""
    driver = CritiqueDriver.start(tmp_path, CritiqueOptions(topic="Adopt a monorepo"), STARTED)
    seen: list[AgentRequest] = []
    replies = [
        '{"message": "Use one repo."\n "status": "AWAITING", "summary": ""}',
        '{"message": "Use one repo,\nwith scoped builds.", "status": "AWAITING", "summary": ""}',
    ]

    def answer(request: AgentRequest) -> str:
        seen.append(request)
        return replies.pop(0)

    agent = FunctionAgent(answer)
    engine = Engine(driver, {"proposer": agent, "critic": agent}, Limits(max_turns=1))
    asyncio.run(engine.run())
    assert "not valid JSON at line 2, column 2: Expecting ',' delimiter" in seen[1].prompt
    assert "not a JSON object" not in seen[1].prompt
    text = driver.record_path.read_text(encoding="utf-8")
    assert "Use one repo,\nwith scoped builds." in text
    assert check_path(driver.record_path).exit_code == 0


def _with_raw_controls(dumped: str) -> str:
    """JSON text as a model writes it: the escapes of line breaks and tabs in its strings as the raw characters."""
    raw = {"n": "\n", "t": "\t", "r": "\r"}
    return re.sub(r"\\(\\)|\\([ntr])", lambda m: "\\\\" if m.group(1) else raw[m.group(2)], dumped)


@settings(max_examples=300)
@given(st.dictionaries(st.text(max_size=8), st.text() | st.lists(st.text(), max_size=3), max_size=4))
def test_raw_controls_in_any_string_read_as_the_characters_they_are(value: dict[str, object]) -> None:
    # Pretty-printed (line breaks between the fields) with raw line breaks and tabs inside the strings, beside
    # escaped quotes, backslashes and other control characters: the strict text holds exactly the same value.
    text = _with_raw_controls(json.dumps({"message": value}, ensure_ascii=False, indent=2))
    found = find_object(text)
    assert not isinstance(found, str), found
    assert json.loads(found.text) == {"message": value}

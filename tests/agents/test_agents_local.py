"""The embedded SmolLM2 model, run for real in this process."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Literal

import pytest
from agents_helpers import VERDICT_SCHEMA
from pydantic import BaseModel, Field

import forked_moot
from moot.agents import AgentRequest, LocalAgent
from moot.errors import AgentError, AgentTimeout, AgentUnavailable


class Verdict(BaseModel):
    verdict: Literal["agree", "disagree"]
    reason: str = Field(max_length=80)


def test_schema_constrained_reply_parses_as_the_turn(smollm_path: Path) -> None:
    agent = LocalAgent()
    request = AgentRequest(
        prompt="Is the sky green? Give your verdict.",
        system="You are a careful critic.",
        json_schema=VERDICT_SCHEMA,
        max_tokens=96,
    )
    reply = asyncio.run(agent.reply(request))

    Verdict.model_validate_json(reply.text)  # grammar-constrained: always the turn's shape
    assert reply.model == "local:SmolLM2-135M-Instruct.Q4_1"
    assert reply.prompt_tokens > 10
    assert 0 < reply.completion_tokens <= 96
    assert reply.finish_reason == "stop"
    assert reply.attempts == 1
    # The same request and seed give the same reply, whatever ran on the model before.
    asyncio.run(agent.reply(AgentRequest(prompt="Say something else entirely.", max_tokens=8)))
    assert asyncio.run(agent.reply(request)).text == reply.text


def test_the_grammar_holds_where_the_model_would_write_something_else(smollm_path: Path) -> None:
    # Values the model never writes on its own: every reply below needed the grammar to overrule its first choice.
    schema = {
        "type": "object",
        "properties": {
            "code": {"enum": ["zq-77", "xv-13"]},
            "votes": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2},
        },
        "required": ["code", "votes"],
        "additionalProperties": False,
    }
    agent = LocalAgent()
    for seed in range(4):
        request = AgentRequest(prompt="Name your favourite animal.", json_schema=schema, max_tokens=64, seed=seed)
        reply = asyncio.run(agent.reply(request))
        answer = json.loads(reply.text)
        assert set(answer) == {"code", "votes"} and answer["code"] in ("zq-77", "xv-13"), reply.text
        assert len(answer["votes"]) == 2 and all(isinstance(v, int) and v >= 0 for v in answer["votes"]), reply.text
        assert reply.finish_reason == "stop"


def test_a_prompt_that_starts_as_the_last_one_reads_only_the_rest_and_gets_the_same_reply(smollm_path: Path) -> None:
    # A debate's next prompt repeats the last one's instructions and record, then adds a turn. The shared start
    # here is longer than one of llama.cpp's 512-token batches, so reuse and a fresh read split it differently.
    system = "You are the critic in a critique loop about adopting a monorepo. Judge the latest turn."
    record = "".join(
        f"Turn {n}: the proposer says builds are slow and a monorepo shares one cache.\n" for n in range(40)
    )
    agent = LocalAgent()

    def ask(tail: str) -> tuple[str, int, int]:
        request = AgentRequest(system=system, prompt=record + tail, json_schema=VERDICT_SCHEMA, max_tokens=48, seed=3)
        reply = asyncio.run(agent.reply(request))
        return reply.text, reply.cached_tokens, reply.prompt_tokens

    _, cached, _ = ask("Turn 40: the critic answers.\nYour verdict?")
    assert cached < 10  # at most the chat template's opening was the same as in the last prompt
    reused, cached, prompt = ask("Your verdict on turn 39?")
    assert prompt - 30 < cached < prompt, (cached, prompt)  # all but the changed end came from the cache
    asyncio.run(agent.reply(AgentRequest(prompt="Name a fruit.", max_tokens=4)))  # another prompt: nothing to reuse
    read_again, cached, _ = ask("Your verdict on turn 39?")
    assert cached < 10
    assert read_again == reused
    # The same request twice: all of it is reused but its last token, and the reply is the same.
    again, cached, prompt = ask("Your verdict on turn 39?")
    assert (again, cached) == (reused, prompt - 1)


def test_free_text_reply_and_max_tokens(smollm_path: Path) -> None:
    reply = asyncio.run(LocalAgent().reply(AgentRequest(prompt="Write a long poem about the sea.", max_tokens=12)))
    assert reply.text.strip()
    assert reply.completion_tokens == 12
    assert reply.finish_reason == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.text)


def test_prompt_longer_than_the_context_is_a_clear_error(smollm_path: Path) -> None:
    with pytest.raises(AgentError, match="does not fit the local model's context of 2048 tokens"):
        asyncio.run(LocalAgent().reply(AgentRequest(prompt="word " * 3000, max_tokens=8)))


def test_timeout_is_reported_promptly_and_the_model_stays_usable(smollm_path: Path) -> None:
    agent = LocalAgent()

    async def timed_out_after() -> float:
        start = time.perf_counter()
        with pytest.raises(AgentTimeout, match=r"within 0\.05 s"):
            await agent.reply(AgentRequest(prompt="Tell a long story.", max_tokens=48, timeout_s=0.05))
        return time.perf_counter() - start

    # The caller hears at the deadline; the abandoned generation stops at its next token.
    assert asyncio.run(timed_out_after()) < 0.5
    assert asyncio.run(agent.reply(AgentRequest(prompt="Say hello.", max_tokens=8))).text


def test_a_cancelled_generation_stops_at_its_next_token_and_frees_the_model(smollm_path: Path) -> None:
    """Ctrl-C cancels the reply being generated: the model stops within a token or so (not at max_tokens) and the
    next request has it at once. Meanwhile its token counts reached the listener."""
    from moot.agents.local import _models
    from moot.agents.streaming import listening

    agent = LocalAgent()
    heard: list[int] = []
    story = AgentRequest(prompt="Write a very long story about the sea.", max_tokens=1500, timeout_s=600)

    async def cancel_while_generating() -> float:
        with listening(heard.append):
            generating = asyncio.create_task(agent.reply(story))
        while len(heard) < 3:  # a few tokens in
            await asyncio.sleep(0.05)
        generating.cancel()
        with pytest.raises(asyncio.CancelledError):
            await generating
        return time.perf_counter()

    cancelled = asyncio.run(cancel_while_generating())  # asyncio.run returns once the worker thread has ended
    assert time.perf_counter() - cancelled < 10
    assert heard[:3] == [1, 2, 3] and len(heard) < 1500
    (loaded,) = (model for key, model in _models.items() if key[0] == smollm_path.resolve())
    assert loaded.lock.acquire(blocking=False)  # the model is free for the next request
    loaded.lock.release()


def test_any_gguf_path_and_bad_files(smollm_path: Path, tmp_path: Path) -> None:
    reply = asyncio.run(LocalAgent(smollm_path).reply(AgentRequest(prompt="Hi", max_tokens=4)))
    assert reply.model == f"local:{smollm_path.stem}"

    with pytest.raises(AgentUnavailable, match=r"no model file at .*missing\.gguf"):
        LocalAgent(tmp_path / "missing.gguf")

    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"not a model" * 100)
    with pytest.raises(AgentUnavailable, match=r"llama\.cpp cannot load .*garbage\.gguf"):
        asyncio.run(LocalAgent(garbage).reply(AgentRequest(prompt="Hi", max_tokens=4)))


def test_the_local_grammar_keeps_raw_control_characters_out_of_strings() -> None:
    """llama-cpp-python's schema converter lets a raw line break into a JSON string; moot's grammar does not."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from moot.agents.local import json_grammar

    schema = json.dumps({"type": "object", "properties": {"message": {"type": "string", "maxLength": 400}}})
    upstream = next(line for line in json_schema_to_gbnf(schema).splitlines() if line.startswith("char ::="))
    assert "\\x00-\\x1F" not in upstream  # the converter's own rule: the defect this grammar fixes
    strict = next(line for line in json_grammar(schema).splitlines() if line.startswith("char ::="))
    assert strict.startswith('char ::= [^"\\\\\\x7F\\x00-\\x1F]')
    assert "message" in json_grammar(schema) and json_grammar(schema).count("char") > 400


def _char_rule_as_regex(rule: str) -> re.Pattern[str]:
    """The grammar's ``char`` rule (literals, classes, groups, alternatives) as a Python regular expression."""
    body, out, at = rule.removeprefix("char ::= "), [], 0
    while at < len(body):
        if body[at] == "[":  # a class reads the same in both syntaxes
            end = re.compile(r"\[(?:[^\]\\]|\\.)*\]").match(body, at)
            assert end is not None
            out.append(end.group())
            at = end.end()
        elif body[at] == '"':  # a literal: unescape it, then escape it for the regex
            end = re.compile(r'"((?:[^"\\]|\\.)*)"').match(body, at)
            assert end is not None
            out.append(re.escape(end.group(1).encode().decode("unicode_escape")))
            at = end.end()
        else:
            out.append("" if body[at] == " " else body[at])
            at += 1
    return re.compile("".join(out))


@pytest.mark.parametrize(
    ("text", "allowed"),
    [
        *[(text, True) for text in ("a", "é", "\\n", "\\u00e9", "\\uD7FF", "\\uE000")],
        *[(text, False) for text in ("\x01", "\n", "\\uD83D", "\\udc00", "\\uDFFF")],
    ],
)
def test_the_local_grammar_refuses_lone_surrogate_escapes(text: str, allowed: bool) -> None:
    """No record can hold a lone surrogate, so no string character may be one (the 135M model wrote \\uDcAe…)."""
    from moot.agents.local import json_grammar

    schema = json.dumps({"type": "object", "properties": {"message": {"type": "string"}}})
    rule = next(line for line in json_grammar(schema).splitlines() if line.startswith("char ::="))
    assert bool(_char_rule_as_regex(rule).fullmatch(text)) is allowed


def test_moot_local_threads_sets_the_models_threads_and_a_bad_value_is_one_sentence(
    smollm_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOOT_LOCAL_THREADS", "1")
    agent = LocalAgent(smollm_path)
    assert agent.n_threads == 1
    assert asyncio.run(agent.reply(AgentRequest(prompt="Hi", max_tokens=4))).model == f"local:{smollm_path.stem}"

    monkeypatch.setenv("MOOT_LOCAL_THREADS", "many")
    done = forked_moot.run(["run", "critique", "--topic", "T", "--agents", "local"], cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "moot: MOOT_LOCAL_THREADS='many' is not a number of threads; set it to a whole number such as 1 or 4.\n"
    )
    assert not (tmp_path / ".dialogues").exists()

"""Commands as participants, run as real subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest
from agents_helpers import VERDICT_SCHEMA

from moot.agents import AgentRequest, CommandAgent
from moot.errors import AgentBadReply, AgentError, AgentTimeout, AgentUnavailable


def python_command(code: str) -> str:
    return shlex.join([sys.executable, "-c", code])


ECHO_TURN = """
import json, os, sys
prompt = sys.stdin.read()
print(json.dumps({
    "role": os.environ["MOOT_ROLE"],
    "protocol": os.environ["MOOT_PROTOCOL"],
    "schema": json.loads(os.environ["MOOT_JSON_SCHEMA"]),
    "prompt": prompt,
}))
"""


def test_prompt_goes_to_stdin_and_stdout_is_the_turn() -> None:
    agent = CommandAgent(python_command(ECHO_TURN))
    request = AgentRequest(
        prompt="Review the plan.",
        system="You are the critic.",
        json_schema=VERDICT_SCHEMA,
        role="critic",
        protocol="critique",
    )
    reply = asyncio.run(agent.reply(request))
    seen = json.loads(reply.text)
    assert (seen["role"], seen["protocol"], seen["schema"]) == ("critic", "critique", VERDICT_SCHEMA)
    assert seen["prompt"].startswith("You are the critic.\n\nReview the plan.")
    assert "JSON Schema" in seen["prompt"] and '"verdict"' in seen["prompt"]
    assert reply.model == f"cmd:{Path(sys.executable).name}"


def test_timeout_kills_the_command_and_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    # A shell that starts a long-lived child, as wrappers around coding agents do.
    agent = CommandAgent(["sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait"])
    start = time.perf_counter()
    with pytest.raises(AgentTimeout, match=r"command 'sh' did not answer within 0\.5 s"):
        asyncio.run(agent.reply(AgentRequest(prompt="x", timeout_s=0.5)))
    assert time.perf_counter() - start < 5
    child = int(pid_file.read_text())
    for _ in range(50):  # the kill is delivered asynchronously
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the command's child process survived the timeout")


def test_nonzero_exit_names_the_code_and_the_stderr_tail() -> None:
    agent = CommandAgent(python_command("import sys; sys.stderr.write('boom: model not loaded\\n'); sys.exit(3)"))
    with pytest.raises(AgentError) as caught:
        asyncio.run(agent.reply(AgentRequest(prompt="x")))
    assert type(caught.value) is AgentError
    assert "exited with code 3" in str(caught.value)
    assert "boom: model not loaded" in str(caught.value)


def test_empty_output_is_a_bad_reply() -> None:
    with pytest.raises(AgentBadReply, match="printed nothing"):
        asyncio.run(CommandAgent(python_command("pass")).reply(AgentRequest(prompt="x")))


def test_missing_program_is_unavailable() -> None:
    with pytest.raises(AgentUnavailable, match="command 'no-such-program-moot' was not found"):
        CommandAgent("no-such-program-moot --flag")

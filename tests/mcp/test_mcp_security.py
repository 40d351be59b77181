"""What a client of ``moot mcp`` can make the server's machine do, over stdio and over HTTP, driven with the SDK's
client: an agent that runs a program, reads a file or the terminal, and a model server the client names are
refused in one sentence naming the flag that allows them, before anything is written, started or connected to;
the operator's allow-list opens exactly them; a server the client names never receives the server's key; and
another user of the machine cannot use a loopback server without its token."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import ClientSession
from mcp_helpers import (
    REPLIES,
    PacedModelServer,
    call,
    environment,
    moot_mcp,
    serving_http,
    session_over,
    tool_error,
    tree,
)

TRANSPORTS = ["stdio", "http"]
KEY = "sk-the-operators-own-key"  # the server's $OPENAI_API_KEY


def _touching(mark: Path) -> str:
    """A command that leaves ``mark`` behind if it ever runs, then answers like a critique participant."""
    reply = json.dumps({"message": "Ran.", "status": "AWAITING", "summary": ""})
    return f"sh -c {shlex.quote(f'touch {mark}; cat >/dev/null; echo {shlex.quote(reply)}')}"


def _script(tmp_path: Path) -> Path:
    script = tmp_path / "replies.jsonl"
    script.write_text("".join(json.dumps({"reply": json.loads(reply)}) + "\n" for reply in REPLIES), encoding="utf-8")
    return script


def _members(*specs: str) -> list[list[str]]:
    return [[name, spec] for name, spec in zip(("alice", "bob", "carol"), specs, strict=False)]


def _refused_starts(tmp_path: Path, mark: Path, model: PacedModelServer) -> list[tuple[str, dict[str, Any]]]:
    """(the backend or server the refusal must name, start_debate's arguments), one per place a spec can hide."""
    runs = _touching(mark)
    configured = "openai:gpt-4o-mini"  # a model of the operator's environment: allowed, never reached here
    critique = {"protocol": "critique", "topic": "Cache"}
    council = {"protocol": "council", "question": "Which cache?"}
    return [
        ("cmd", {**critique, "agents": f"cmd:{runs}"}),
        ("acp", {**critique, "agents": f"acp:{runs}"}),
        ("script", {**critique, "agents": f"script:{_script(tmp_path)}"}),
        ("human", {**critique, "agents": "human"}),
        ("local", {**critique, "agents": "local:/etc/passwd"}),
        ("cmd", {**critique, "agent": {"proposer": configured, "critic": f"cmd:{runs}"}}),
        ("cmd", {**council, "options": {"members": _members(configured, f"cmd:{runs}")}}),
        ("script", {**council, "options": {"members": _members(configured, configured), "chairman": "script:x"}}),
        (model.url, {**critique, "agents": model.spec}),
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_agents_that_run_read_or_call_a_named_server_are_refused_and_nothing_happens(
    root: Path, tmp_path: Path, transport: str
) -> None:
    mark = tmp_path / "ran"

    async def scenario() -> None:
        with PacedModelServer(REPLIES) as model:
            starts = _refused_starts(tmp_path, mark, model)
            async with session_over(transport, root, env={"OPENAI_API_KEY": KEY}) as session:
                before = tree(root)
                for opens, arguments in starts:
                    refusal = await tool_error(session, "start_debate", **arguments)
                    flag = "--allow-server" if opens.startswith("http") else "--allow-agent"
                    assert f"{flag} {opens}" in refusal["error"], refusal["error"]
                    assert "moot.toml" in refusal["error"] and KEY not in refusal["error"]
                assert tree(root) == before  # no record, not even one written and removed again
                assert (await call(session, "list_debates"))["debates"] == []
            assert model.authorizations == []  # the named server was never connected to
        assert not mark.exists()  # no command ran

    anyio.run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_operators_allow_list_opens_exactly_what_it_names(root: Path, tmp_path: Path, transport: str) -> None:
    mark = tmp_path / "ran"
    flags = ("--allow-agent", "cmd", "--allow-agent", "local")

    async def scenario() -> None:
        with PacedModelServer(REPLIES) as model:
            async with session_over(transport, root, *flags, *model.allowed) as session:
                started = await call(
                    session, "start_debate", protocol="critique", topic="Run", agents=f"cmd:{_touching(mark)}"
                )
                with anyio.fail_after(30):
                    while not mark.exists():
                        await anyio.sleep(0.1)
                await call(session, "cancel_debate", debate_id=started["debate_id"])
                # local with a path is allowed now: what answers is the backend itself, not the policy.
                missing = await tool_error(
                    session, "start_debate", protocol="critique", topic="Local", agents="local:/nowhere/m.gguf"
                )
                assert "--allow-agent" not in missing["error"]
                served = await call(session, "start_debate", protocol="critique", topic="Served", agents=model.spec)
                status = await call(session, "debate_status", debate_id=served["debate_id"], wait_seconds=60)
                assert status["outcome"] == "DONE"
                # What the list does not name stays closed.
                closed = await tool_error(
                    session, "start_debate", protocol="critique", topic="T", agents=f"script:{_script(tmp_path)}"
                )
                assert "--allow-agent script" in closed["error"]

    anyio.run(scenario)


def test_moot_toml_allows_too_and_its_own_specs_pass_the_policy(root: Path, tmp_path: Path) -> None:
    mark = tmp_path / "ran"
    settings = root / "moot.toml"

    async def scenario() -> None:
        async with session_over("stdio", root) as session:
            # A spec moot.toml gives every role passes the same policy as a client's.
            settings.write_text(f"agents = {json.dumps('cmd:' + _touching(mark))}\n", encoding="utf-8")
            before = tree(root)
            refusal = await tool_error(session, "start_debate", protocol="critique", topic="Cache")
            assert "--allow-agent cmd" in refusal["error"]
            assert tree(root) == before and not mark.exists()
        settings.write_text('allow_agents = ["script"]\n', encoding="utf-8")
        async with session_over("stdio", root) as session:  # the allow-list is read when the server starts
            script = _script(tmp_path)
            started = await call(session, "start_debate", protocol="critique", topic="Cache", agents=f"script:{script}")
            status = await call(session, "debate_status", debate_id=started["debate_id"], wait_seconds=60)
            assert status["outcome"] == "DONE"

    anyio.run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_server_the_client_names_never_receives_the_servers_key(root: Path, transport: str) -> None:
    async def run_against(session: ClientSession, topic: str, spec: str) -> None:
        started = await call(session, "start_debate", protocol="critique", topic=topic, agents=spec)
        status = await call(session, "debate_status", debate_id=started["debate_id"], wait_seconds=60)
        assert status["outcome"] == "DONE"

    async def scenario() -> None:
        env = {"OPENAI_API_KEY": KEY}
        with PacedModelServer(REPLIES) as model:
            async with session_over(transport, root, *model.allowed, env=env) as session:
                # Another spelling of the listed URL reaches the listed server, and with no key of the server's.
                await run_against(session, "Listed", model.spec + "/")
            assert model.authorizations and set(model.authorizations) == {"Bearer not-needed"}
        with PacedModelServer(REPLIES) as model:
            keyed = ("--allow-server", f"{model.url}=OPENAI_API_KEY")  # the operator gives this server the key
            async with session_over(transport, root, *keyed, env=env) as session:
                await run_against(session, "Keyed", model.spec)
            assert set(model.authorizations) == {f"Bearer {KEY}"}

    anyio.run(scenario)


def test_a_wrong_allow_list_is_one_sentence_before_anything_is_served(root: Path) -> None:
    for flags, named in [
        (["--allow-agent", "cmnd"], "'cmnd'"),
        (["--allow-server", "ftp://127.0.0.1/v1"], "ftp://127.0.0.1/v1"),
        (["--allow-server", "http://127.0.0.1:8080/v1=NO_SUCH_KEY_VAR"], "$NO_SUCH_KEY_VAR"),
    ]:
        done = moot_mcp("--root", str(root), *flags)
        assert done.returncode == 2 and done.stdout == ""
        message = done.stderr.strip()
        assert message.count("\n") == 0 and named in message and flags[0] in message, message


# The other user's side: the system's python3 and its standard library only.
KNOCK = r"""
import json, sys, urllib.error, urllib.request
url, pid = sys.argv[1], sys.argv[2]
def post(body, **headers):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
        "Accept": "application/json, text/event-stream", "Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code
hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "other", "version": "0"}}}
start = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "start_debate", "arguments": {"protocol": "critique", "topic": "x", "agents": sys.argv[3]}}}
seen = {"initialize": post(hello), "guessed": post(hello, Authorization="Bearer guess"), "start": post(start)}
seen["cmdline"] = open(f"/proc/{pid}/cmdline", "rb").read().decode("utf-8", "replace")
try:
    open(f"/proc/{pid}/environ", "rb").read()
    seen["environ"] = "read"
except OSError:
    seen["environ"] = "denied"
print(json.dumps(seen))
"""


def test_another_user_of_the_machine_cannot_use_a_loopback_server_without_its_token(
    root: Path, tmp_path: Path, other_user: Any
) -> None:
    mark = tmp_path / "ran-as-root"
    tmp_path.chmod(0o755)  # the other user could read it; the server is what must keep them out
    for given in ({}, {"MOOT_MCP_TOKEN": "operator-chosen-token"}):
        with serving_http(root, "--allow-agent", "cmd", env=environment(**given)) as served:
            knocked = other_user(KNOCK, served.url, str(served.pid), f"cmd:{_touching(mark)}")
            assert knocked.returncode == 0, knocked.stderr
            seen = json.loads(knocked.stdout)
            assert (seen["initialize"], seen["guessed"], seen["start"]) == (401, 401, 401), seen
            token = given.get("MOOT_MCP_TOKEN") or re.findall(r"Bearer (\S+)'", served.said)[0]
            assert token not in seen["cmdline"] and seen["environ"] == "denied"
        assert not mark.exists()

"""Spec strings, plugins through entry points, readiness listing, and the pinned public surface."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import moot.agents
from moot.agents import (
    ENTRY_POINT_GROUP,
    AgentRequest,
    CommandAgent,
    HumanAgent,
    ScriptAgent,
    list_backends,
    resolve_agent,
)
from moot.errors import AgentUnavailable, UnknownAgentSpec

BUILTIN_FORMS = [
    "local",
    "local:PATH.gguf",
    "openai:MODEL[@BASE_URL]",
    "ollama:MODEL",
    "anthropic:MODEL",
    "cmd:COMMAND",
    "human",
    "script:FILE",
]


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def install_plugins(monkeypatch: pytest.MonkeyPatch, *points: EntryPoint) -> None:
    """Stand in for installed distributions: the registry sees these entry points."""

    def entry_points(*, group: str) -> list[EntryPoint]:
        return [point for point in points if point.group == group]

    monkeypatch.setattr("moot.agents.registry.entry_points", entry_points)


def plugin(name: str, target: str) -> EntryPoint:
    return EntryPoint(name=name, value=f"agents_plugin_example:{target}", group=ENTRY_POINT_GROUP)


def test_sdk_free_forms_resolve(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("sys.stdin", FakeTTY())
    script = tmp_path / "replies.json"
    script.write_text('["hello"]')
    command = resolve_agent("cmd:python3 -c 'print(1)'")
    assert isinstance(command, CommandAgent) and command.argv == ["python3", "-c", "print(1)"]
    assert isinstance(resolve_agent("human"), HumanAgent)
    assert isinstance(resolve_agent(f"  script:{script}  "), ScriptAgent)


def test_local_forms_resolve(smollm_path: Path) -> None:
    assert isinstance(resolve_agent("local"), moot.agents.LocalAgent)
    assert resolve_agent("local").path == smollm_path  # type: ignore[attr-defined]
    assert resolve_agent(f"local:{smollm_path}").path == smollm_path  # type: ignore[attr-defined]


def test_provider_forms_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    from moot.agents.ollama import OLLAMA_URL
    from moot.agents.openai_compat import OllamaAgent, OpenAIAgent

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    openai = resolve_agent("openai:gpt-4o-mini")
    assert isinstance(openai, OpenAIAgent) and openai.base_url == "https://api.openai.com/v1"
    served = resolve_agent("openai:qwen2.5:7b@http://127.0.0.1:8080/v1")
    assert isinstance(served, OpenAIAgent)
    assert (served.model, served.base_url) == ("qwen2.5:7b", "http://127.0.0.1:8080/v1")
    ollama = resolve_agent("ollama:llama3.2")
    assert isinstance(ollama, OllamaAgent) and ollama.base_url == OLLAMA_URL and ollama.name == "ollama"
    assert isinstance(resolve_agent("anthropic:claude-sonnet-4-6"), moot.agents.AnthropicAgent)


def test_unknown_spec_is_one_sentence_listing_the_valid_forms() -> None:
    with pytest.raises(UnknownAgentSpec) as caught:
        resolve_agent("gpt-4o")
    message = str(caught.value)
    assert message.startswith("unknown agent spec 'gpt-4o': use one of ")
    for form in BUILTIN_FORMS:
        assert form in message
    assert "\n" not in message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("openai:", "openai needs a model name"),
        ("ollama:", "ollama needs a model name"),
        ("anthropic:", "anthropic needs a model name"),
        ("cmd:", "cmd needs a command"),
        ("script:", "script needs a file"),
        ("human:bob", "human takes no argument"),
        ("", "unknown agent spec ''"),
    ],
)
def test_malformed_specs_say_how_to_write_them(spec: str, says: str) -> None:
    with pytest.raises(UnknownAgentSpec, match=says):
        resolve_agent(spec)


def test_entry_point_plugins_resolve_and_are_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugins(monkeypatch, plugin("shout", "make_agent"))
    agent = resolve_agent("shout:oi")
    assert asyncio.run(agent.reply(AgentRequest(prompt="over here"))).text == "OI: over here"
    listed = {status.name: status for status in list_backends()}
    assert listed["shout"].ready and listed["shout"].plugin == "agents_plugin_example:make_agent"
    with pytest.raises(UnknownAgentSpec, match=r"shout\[:…\]"):
        resolve_agent("whisper:x")


def test_broken_plugins_are_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugins(
        monkeypatch,
        plugin("nothing", "make_nothing"),
        EntryPoint(name="gone", value="no_such_module_moot:make", group=ENTRY_POINT_GROUP),
    )
    with pytest.raises(AgentUnavailable, match="returned str, not an Agent"):
        resolve_agent("nothing")
    with pytest.raises(AgentUnavailable, match=r"agent plugin 'gone' .* cannot be loaded"):
        resolve_agent("gone")


def test_builtins_cannot_be_hijacked_by_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    install_plugins(monkeypatch, plugin("script", "make_agent"))
    script = tmp_path / "s.json"
    script.write_text('["real"]')
    assert isinstance(resolve_agent(f"script:{script}"), ScriptAgent)


def test_list_backends_reports_readiness(monkeypatch: pytest.MonkeyPatch, smollm_path: Path) -> None:
    install_plugins(monkeypatch)
    statuses = {status.name: status for status in list_backends()}
    builtins = ["local", "openai", "ollama", "anthropic", "cmd", "human", "script", "acp"]
    assert list(statuses) == [*builtins, "acp claude-code-acp", "acp codex-acp", "acp gemini"]
    assert statuses["local"].ready and str(smollm_path) in statuses["local"].detail
    assert not statuses["openai"].ready and "OPENAI_API_KEY is not set" in statuses["openai"].detail
    assert not statuses["anthropic"].ready and "ANTHROPIC_API_KEY" in statuses["anthropic"].detail

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    statuses = {status.name: status for status in list_backends()}
    assert statuses["openai"].ready and statuses["anthropic"].ready


def test_only_the_backend_in_use_is_imported(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('["hi"]')
    code = textwrap.dedent(
        f"""
        import asyncio, json, sys
        from moot.agents import AgentRequest, list_backends, resolve_agent
        list_backends()
        agent = resolve_agent({str(f"script:{script}")!r})
        asyncio.run(agent.reply(AgentRequest(prompt="x")))
        print(json.dumps(sorted(m for m in ("openai", "anthropic", "llama_cpp", "llm") if m in sys.modules)))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_public_surface_is_pinned() -> None:
    assert set(moot.agents.__all__) == {
        "ENTRY_POINT_GROUP",
        "AcpAgent",
        "Agent",
        "AgentBadReply",
        "AgentError",
        "AgentReply",
        "AgentRequest",
        "AgentTimeout",
        "AgentUnavailable",
        "AnthropicAgent",
        "BackendStatus",
        "CommandAgent",
        "FunctionAgent",
        "HumanAgent",
        "LocalAgent",
        "OllamaAgent",
        "OpenAIAgent",
        "RetryPolicy",
        "ScriptAgent",
        "ScriptedReply",
        "UnknownAgentSpec",
        "call_with_retries",
        "list_backends",
        "resolve_agent",
        "valid_forms",
    }
    for name in moot.agents.__all__:
        assert getattr(moot.agents, name) is not None


def _ollama_server(models: list[dict[str, object]]) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """A real HTTP server on loopback answering GET /api/tags as Ollama documents it."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            payload = json.dumps({"models": models}).encode() if self.path == "/api/tags" else b"{}"
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def test_moot_agents_asks_ollama_and_reports_what_it_said(monkeypatch: pytest.MonkeyPatch) -> None:
    model = {
        "name": "llama3.2:latest",
        "model": "llama3.2:latest",
        "modified_at": "2026-11-01T10:00:00Z",
        "size": 2019393189,
        "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
        "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B", "quantization_level": "Q4_K_M"},
    }
    server, thread = _ollama_server([model])
    host = f"127.0.0.1:{server.server_address[1]}"
    try:
        monkeypatch.setenv("OLLAMA_HOST", host)
        status = next(s for s in list_backends() if s.name == "ollama")
        assert status.ready and status.detail == f"the Ollama server at http://{host} has 1 model(s): llama3.2:latest"
        assert resolve_agent("ollama:llama3.2").base_url == f"http://{host}/v1"  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    # The same port with nobody listening: not ready, and the reason says so.
    status = next(s for s in list_backends() if s.name == "ollama")
    assert not status.ready and f"no Ollama server answers at http://{host}" in status.detail

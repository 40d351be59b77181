"""Shared fixtures for the participant tests: the shipped SmolLM2 weights and a real llama.cpp server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents_helpers import free_port

from moot.agents.base import AgentUnavailable


@pytest.fixture(autouse=True)
def _no_inherited_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must not depend on (or spend) whatever keys the developer has exported."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def smollm_path() -> Path:
    from moot.agents.local import default_weights, llama_cpp_available

    if not llama_cpp_available():
        pytest.skip("llama-cpp-python is not installed (pip install 'moot[local]')")
    try:
        return default_weights()
    except AgentUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def llama_server(smollm_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real llama-cpp-python OpenAI-compatible server on loopback; yields its /v1 base URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [
                *(sys.executable, "-m", "llama_cpp.server", "--model", str(smollm_path)),
                *("--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {server.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
                    if json.load(answer)["data"]:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer /v1/models within 60 s: {log.read_text()[-2000:]}")
            time.sleep(0.25)
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

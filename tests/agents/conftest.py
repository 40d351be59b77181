"""Shared fixtures for the participant tests: the shipped SmolLM2 weights and a real llama.cpp server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.agents.base import AgentUnavailable
from moot.agents.llama_server import llama_server as serve_model


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
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with serve_model(smollm_path, n_threads=2, log=log) as base_url:
        yield base_url

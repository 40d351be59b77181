"""Shared fixtures for the participant tests: the shipped SmolLM2 weights and a real llama.cpp server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.agents.llama_server import embedded_model_missing
from moot.agents.llama_server import llama_server as serve_model
from moot.agents.local import default_weights


@pytest.fixture(autouse=True)
def _no_inherited_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must not depend on (or spend) whatever keys the developer has exported."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def smollm_path() -> Path:
    missing = embedded_model_missing()
    if missing is not None:
        pytest.skip(missing)
    return default_weights()


@pytest.fixture(scope="session")
def llama_server(smollm_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real llama-cpp-python OpenAI-compatible server on loopback; yields its /v1 base URL."""
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with serve_model(smollm_path, log=log) as base_url:
        yield base_url

"""Where the Ollama server is, and whether it answers: without importing any SDK (``moot agents`` asks it)."""

from __future__ import annotations

import os

import httpx2

OLLAMA_URL = "http://127.0.0.1:11434/v1"  # its OpenAI-compatible API on Ollama's default port
OLLAMA_PROBE_TIMEOUT_S = 2.0


def ollama_host() -> str:
    """Where Ollama listens: ``OLLAMA_HOST`` (Ollama's own variable, e.g. ``127.0.0.1:11434``), else its default."""
    host = os.environ.get("OLLAMA_HOST", "").strip().rstrip("/")
    if not host:
        return OLLAMA_URL.removesuffix("/v1")
    return host if "://" in host else f"http://{host}"


def ollama_models(host: str, timeout_s: float = OLLAMA_PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """Ask the Ollama server at ``host`` for its models (GET /api/tags): ready or not, and what it said."""
    url = f"{host}/api/tags"
    try:
        response = httpx2.get(url, timeout=timeout_s)
    except httpx2.TimeoutException:
        return False, f"the Ollama server at {host} did not answer within {timeout_s:g} s: check that it runs"
    except httpx2.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        return False, f"no Ollama server answers at {host} ({reason}): start it with `ollama serve`"
    if response.status_code != 200:
        return False, f"{url} answered HTTP {response.status_code}: is this an Ollama server?"
    try:
        names = [str(m["name"]) for m in response.json()["models"]]
    except (ValueError, KeyError, TypeError):
        return False, f"{url} answered, but not with Ollama's model list: is this an Ollama server?"
    if not names:
        return False, f"the Ollama server at {host} has no models: pull one with `ollama pull llama3.2`"
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return True, f"the Ollama server at {host} has {len(names)} model(s): {shown}"

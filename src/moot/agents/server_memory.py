"""What moot learnt of the model servers it talked to, kept so that no later request repeats a refused one.

A server that refused the ``json_schema`` response format (llama-cpp-python's answers HTTP 500) is asked in the
``json_object`` form from then on; a model whose server reported a smaller context window than moot assumed
(HTTP 400, "maximum context length is N tokens") gets prompts and turns sized to it. Both hold in the process
and, for a week, in the user's state (``servers.jsonl`` in :mod:`moot.core.user_state`), so that the next run's first
request is already one the server takes. After a week a server is asked as if new: it may have been upgraded,
or another may serve at its address.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from moot.core.user_state import state_dir

MEMORY_NAME = "servers.jsonl"  # one JSON line per fact learnt: {"url", "at" (epoch s), and the fact}
MEMORY_S = 7 * 24 * 3600

_facts: list[dict[str, Any]] | None = None  # read from the user's state on first use


def _known() -> list[dict[str, Any]]:
    global _facts
    if _facts is None:
        _facts = []
        try:
            lines = (state_dir() / MEMORY_NAME).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        since = time.time() - MEMORY_S
        for line in lines:
            with contextlib.suppress(ValueError, TypeError):  # a line a crash cut short, or not ours
                row = json.loads(line)
                if isinstance(row, dict) and isinstance(row.get("url"), str) and row.get("at", 0) >= since:
                    _facts.append(row)
    return _facts


def _learn(row: dict[str, Any]) -> None:
    """Keep a fact for later requests and runs (best effort: an unwritable home only costs a refused request)."""
    row["at"] = round(time.time())
    _known().append(row)
    path = state_dir() / MEMORY_NAME
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(row) + "\n")


def refuses_json_schema(url: str) -> bool:
    """Whether the server at ``url`` is known to refuse ``response_format: json_schema``."""
    return any(row["url"] == url and row.get("refuses") == "json_schema" for row in _known())


def remember_json_schema_refusal(url: str) -> None:
    _learn({"url": url, "refuses": "json_schema"})


def context_tokens(url: str, model: str) -> int | None:
    """The context window the server at ``url`` showed for ``model`` (refusing a prompt as too long, or cutting a
    reply short where the context ended), if it ever did."""
    reported = [row["context_tokens"] for row in _known() if row["url"] == url and row.get("model") == model]
    return reported[-1] if reported and isinstance(reported[-1], int) else None


def remember_context(url: str, model: str, tokens: int) -> None:
    _learn({"url": url, "model": model, "context_tokens": tokens})

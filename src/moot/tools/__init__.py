"""The agent-facing operations, shared by the CLI (``moot duel …``, ``moot roundtable …``, ``moot critique …``,
``moot emit``, ``moot events``) and the MCP server. Transport-free: plain functions over an open
:class:`Workspace` that return frozen pydantic models and raise only :class:`ToolError`::

    from moot import tools
    from moot.protocols.duel import tools as duel

    with tools.open_workspace("/work/root") as ws:
        joined = duel.join(ws, target="/work/root/design.md", topic="Caching", participant_name="alice",
                           harness="codex", run_id="run-1")
        me = {"duel_id": joined.duel_id, "participant_id": joined.participant_id,
              "participant_secret": joined.participant_secret}     # the secret is returned once: keep it
        lock = duel.claim_lock(ws, **me)
        duel.append(ws, **me, lease_token=lock.lease_token, turn_markdown=text)

    payload, exit_code = tools.invoke(lambda: duel.status(ws, duel_id=...))   # what the CLI prints

Each protocol's operations are in its ``tools`` module (the duel's join, status, claim_lock, refresh_lock,
release_lock, append, read; the roundtable's and the critique loop's likewise), declared once in its ``TOOLS``
(:mod:`moot.tools.declare`), from which the CLI and the MCP server are generated; :mod:`moot.tools.events`
holds emit and read_events.
A participant's secret is passed as ``participant_secret``, else read from ``ws.keyring`` (see
:mod:`moot.tools.seats`). Exit codes: 0 ok, 1 refused (:class:`Refused`), 2 bad input (:class:`BadInput`),
3 unavailable.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from moot.errors import BadInput, Refused, ToolError, Unavailable
    from moot.tools import events
    from moot.tools.errors import TOOL_RULES
    from moot.tools.workspace import Workspace, open_workspace

# The parts load on first use: a command imports only what it needs, and declaring a tool
# (moot.tools.declare) imports no ledger, so that `moot --help` lists the agent tools without one.
_LAZY = {
    "TOOL_RULES": "moot.tools.errors",
    "BadInput": "moot.errors",
    "Refused": "moot.errors",
    "ToolError": "moot.errors",
    "Unavailable": "moot.errors",
    "Workspace": "moot.tools.workspace",
    "open_workspace": "moot.tools.workspace",
}


def __getattr__(name: str) -> Any:
    if name == "events":
        return importlib.import_module(f"moot.tools.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'moot.tools' has no attribute {name!r}")


def result_payload(result: BaseModel) -> dict[str, Any]:
    """A successful tool result as JSON-ready data, ``ok: true`` first."""
    return {"ok": True, **result.model_dump(mode="json")}


def invoke(action: Callable[[], BaseModel]) -> tuple[dict[str, Any], int]:
    """Run one tool call and return what a transport sends back: the JSON payload and the exit code."""
    from moot.errors import ToolError

    try:
        result = action()
    except ToolError as refusal:
        return refusal.payload(), refusal.exit_code
    return result_payload(result), 0


__all__ = [
    "TOOL_RULES",
    "BadInput",
    "Refused",
    "ToolError",
    "Unavailable",
    "Workspace",
    "events",
    "invoke",
    "open_workspace",
    "result_payload",
]

"""Helpers of the MCP tests: ``moot mcp`` started the way an agent host starts it, driven with the official
SDK's client (``stdio_client`` + ``ClientSession``)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, TextContent
from tools_helpers import ALICE, BOB, TOPIC, example_turns, write_source

__all__ = ["ALICE", "BOB", "TOPIC", "call", "connect", "example_turns", "join", "refused", "write_source"]


@asynccontextmanager
async def connect(root: Path) -> AsyncIterator[ClientSession]:
    """An initialized session with ``python -m moot mcp --root ROOT`` over stdio (its own process).

    The SDK passes the server only a minimal environment (PATH, HOME, …), so no MOOT_* variable of the
    test run leaks into it.
    """
    params = StdioServerParameters(command=sys.executable, args=["-m", "moot", "mcp", "--root", str(root)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _first_text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A successful call's payload (``ok: true``)."""
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, f"{tool} was refused: {_first_text(result)}"
    payload = result.structured_content
    assert payload is not None and payload["ok"] is True
    return payload


async def refused(session: ClientSession, tool: str, rule: str, **arguments: Any) -> dict[str, Any]:
    """A refusal: a tool error (not a protocol error), its first line the sentence and the rule ids."""
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error, f"{tool} was not refused: {_first_text(result)}"
    payload = result.structured_content
    assert payload is not None and payload["ok"] is False
    rules = [r["rule"] for r in payload["rules"]]
    assert rule in rules, f"{rule} not among {rules}: {payload['error']}"
    lead = _first_text(result)
    assert lead.startswith(payload["error"]) and rule in lead
    return payload


async def join(session: ClientSession, source: Path, who: dict[str, str]) -> dict[str, Any]:
    return await call(
        session,
        "join",
        target=str(source),
        topic=TOPIC,
        participant_name=who["name"],
        harness=who["harness"],
        model_id=who["model"],
        run_id=f"run-{who['name']}",
    )

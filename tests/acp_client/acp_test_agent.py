"""A small ACP agent for the tests, built on the SDK's agent side and run as a real process.

    python acp_test_agent.py (--replies REPLIES.json | --llama BASE_URL) --log LOG.jsonl [--write PATH] [--hang]

It answers each role (read from "You are the ROLE" in its session's first prompt) with the next
prepared reply, or with what a llama.cpp server's model writes (held to the JSON Schema the prompt
shows), streamed in chunks after a read tool call. ``--write PATH`` first asks permission
to edit PATH and, when allowed, writes it through the client; it also tries a direct write without
asking. ``--hang`` never answers a prompt until it is cancelled. Every request is logged as a JSON
line so the tests can see what moot sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    run_agent,
    start_edit_tool_call,
    start_read_tool_call,
    update_agent_message_text,
)
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    ToolCallUpdate,
)

SCHEMA_MARK = "it must match this JSON Schema:\n"  # how moot shows the turn's schema in a text prompt


class PreparedAgent:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.replies: dict[str, list[str]] = json.loads(Path(args.replies).read_text()) if args.replies else {}
        self.roles: dict[str, str] = {}
        self.cancelled: dict[str, asyncio.Event] = {}
        self.client: Any = None

    def log(self, **row: Any) -> None:
        with open(self.args.log, "a", encoding="utf-8") as log:
            log.write(json.dumps(row) + "\n")

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        fs = client_capabilities.fs if client_capabilities is not None else None
        self.log(event="initialize", pid=os.getpid(), write_capability=bool(fs and fs.write_text_file))
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="prepared-agent", version="1"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        session_id = uuid.uuid4().hex
        self.cancelled[session_id] = asyncio.Event()
        self.log(event="new_session", session=session_id, cwd=cwd, process_cwd=os.getcwd())
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        if session_id not in self.roles:
            found = re.search(r"You are the (\w+)", text)
            self.roles[session_id] = found.group(1) if found else "?"
        role = self.roles[session_id]
        self.log(event="prompt", session=session_id, role=role, has_system="You are the" in text)
        if self.args.hang:
            await self.cancelled[session_id].wait()
            return PromptResponse(stop_reason="cancelled")
        await self.client.session_update(session_id, start_read_tool_call("read-1", "Reading the dialogue", "x.md"))
        permission = await self.client.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="read-1", kind="read", title="Reading the dialogue"),
            options=_options(),
        )
        self.log(event="permission", kind="read", outcome=_outcome(permission))
        if self.args.write:
            await self._try_writes(session_id)
        try:
            reply = self._from_model(text) if self.args.llama else self.replies[role].pop(0)
        except Exception as exc:
            self.log(event="error", error=repr(exc))
            raise
        for start in range(0, len(reply), 40):
            await self.client.session_update(session_id, update_agent_message_text(reply[start : start + 40]))
        return PromptResponse(stop_reason="end_turn")

    def _from_model(self, text: str) -> str:
        """The turn from the llama.cpp server, constrained to the schema at the end of the prompt."""
        schema = text.partition(SCHEMA_MARK)[2]
        body = {
            "messages": [{"role": "user", "content": text}],
            "temperature": 0,
            "max_tokens": 320,
            # llama-cpp-python's server holds decoding to a schema given this way (json_schema it refuses).
            "response_format": {"type": "json_object", "schema": json.loads(schema)},
        }
        request = urllib.request.Request(
            f"{self.args.llama}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=300) as answer:
            return str(json.load(answer)["choices"][0]["message"]["content"])

    async def _try_writes(self, session_id: str) -> None:
        path = self.args.write
        await self.client.session_update(session_id, start_edit_tool_call("edit-1", f"Editing {path}", path, "x"))
        permission = await self.client.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="edit-1", kind="edit", title=f"Editing {path}"),
            options=_options(),
        )
        outcome = _outcome(permission)
        self.log(event="permission", kind="edit", outcome=outcome)
        if outcome == "allow-once":
            await self.client.write_text_file(session_id=session_id, path=path, content="edited by the agent\n")
        try:  # a direct write, without asking first
            await self.client.write_text_file(session_id=session_id, path=path + ".direct", content="direct\n")
            self.log(event="direct_write", ok=True)
        except Exception as exc:
            self.log(event="direct_write", ok=False, error=str(exc))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.log(event="cancel", session=session_id)
        self.cancelled[session_id].set()


def _options() -> list[Any]:
    from acp.schema import PermissionOption

    return [
        PermissionOption(option_id="allow-once", name="Allow", kind="allow_once"),
        PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
    ]


def _outcome(response: Any) -> str:
    outcome = response.outcome
    return getattr(outcome, "option_id", None) or outcome.outcome


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replies")
    parser.add_argument("--log", required=True)
    parser.add_argument("--write")
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--llama")
    asyncio.run(run_agent(PreparedAgent(parser.parse_args())))


if __name__ == "__main__":
    main()

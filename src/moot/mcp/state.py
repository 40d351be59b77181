"""What every MCP tool call shares: the open work root, who joined on which connection, and how a tool's
answer becomes an MCP result (refusals are tool errors, never protocol errors or crashes)."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, cast

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from moot import tools
from moot.engine.runner import Runner
from moot.errors import BadInput, ToolError, UserError
from moot.mcp.identity import Identities, connection_key
from moot.plugin import Tool
from moot.tools import Workspace
from moot.tools.declare import SECRET_FIELD as SEAT_SECRET  # the argument a tool whose seat moot keeps gains
from moot.tools.declare import call_values, declares_secret, moot_keeps_seat
from moot.tools.errors import translate
from moot.tools.seats import kept_seat, settle_taken


@dataclass
class ServerState:
    """Opened once per server (the lifespan) and shared by every connection."""

    workspace: Workspace
    runner: Runner
    identities: Identities = field(default_factory=Identities)
    over_http: bool = False  # streamable HTTP (debates outlive a client's connection), else stdio

    def acting(self, connection: str | None) -> Workspace:
        """The workspace as ``connection`` acts in it: with the secrets of the seats that connection took."""
        return replace(self.workspace, keyring=self.identities.keyring(connection))


def state_of(ctx: Context) -> ServerState:
    return cast(ServerState, ctx.request_context.lifespan_context)


def connection_of(ctx: Context) -> str | None:
    return connection_key(ctx.headers)


def tool_result(payload: dict[str, Any], exit_code: int) -> CallToolResult:
    """The tools' JSON payload as structured content and as text; a refusal is ``isError`` and leads with
    its sentence and rule ids, so that a model reading only the first text block still sees the fix."""
    text = json.dumps(payload, ensure_ascii=False, indent=2)
    content = [TextContent(type="text", text=text)]
    if exit_code:
        rules = ", ".join(dict.fromkeys(r["rule"] for r in payload.get("rules", [])))
        lead = str(payload.get("error", "Refused.")) + (f" [{rules}]" if rules else "")
        content.insert(0, TextContent(type="text", text=lead))
    return CallToolResult(content=content, structured_content=payload, is_error=bool(exit_code))


def answer(action: Callable[[], BaseModel]) -> CallToolResult:
    """Run one tools-layer call; its refusals (``ToolError``) come back as tool errors."""
    return tool_result(*tools.invoke(action))


def answer_tool(ctx: Context, tool: Tool, values: dict[str, Any]) -> CallToolResult:
    """Run one agent tool for this connection, in the seat its declaration names: a call that takes a seat binds
    it to the connection once it succeeds; a call that requires one is refused unless the connection took it."""
    state, connection = state_of(ctx), connection_of(ctx)
    seat = tool.seat
    kept = moot_keeps_seat(tool)
    given = (values.get if declares_secret(tool) else values.pop)(SEAT_SECRET, None) if kept else None
    taken: list[tuple[tuple[str, str, str], str]] = []  # a seat this call took there, and its secret

    def act() -> BaseModel:
        try:
            arguments = call_values(tool, values)
        except ValidationError as error:  # the SDK checked the same schema: only a value it let through
            first = error.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "the arguments"
            raise BadInput(
                f"The argument {where!r} is invalid ({first['msg'].lower()}); fix it and call the tool again."
            ) from None
        run = functools.partial(tool.function, state.acting(connection), **arguments)
        if seat is None:
            return run()
        if seat.of is None:  # the answer names the seat (joining a duel by its source)
            assert seat.answered is not None
            with state.identities.joining(connection, str(arguments[seat.name])) as bind:
                result = run()
                bind(*seat.answered(result))
            return result
        record, role, where = seat.of(state.workspace, arguments)

        def keep() -> None:  # held against the other connections and the command line's users too
            if kept:
                keyring = state.identities.keyring(connection)
                assert keyring is not None  # a sessionless request was refused its seat above
                secret = kept_seat(
                    state.workspace.root,
                    (record, role, where),
                    takes=seat.takes,
                    claim=seat.claim,
                    keyring=keyring,
                    given=given,
                )
                taken.extend([((record, role, where), secret)] if secret is not None else [])

        if seat.takes:
            with state.identities.seating(connection, record, role, where=where):
                keep()
                return run()
        state.identities.require_seat(connection, record, role, where=where, claim=seat.claim)
        keep()
        return run()

    payload, code = tools.invoke(act)
    settle_taken(state.workspace.root, taken, payload, code)
    return tool_result(payload, code)


async def answer_async(action: Callable[[], Awaitable[BaseModel]]) -> CallToolResult:
    """Run one async call; a refusal, or a usage error the CLI would report (exit 2), comes back as a tool error."""
    try:
        result = await action()
    except ToolError as refusal:
        return tool_result(refusal.payload(), refusal.exit_code)
    except UserError as problem:
        bad = translate(problem) or BadInput(str(problem), rule="TOOLS_BAD_INPUT")  # a full disk is not bad input
        return tool_result(bad.payload(), bad.exit_code)
    except Exception as exc:  # the files below (a link, a full disk) refuse as the synchronous tools' do
        error = translate(exc)
        if error is None:
            raise
        return tool_result(error.payload(), error.exit_code)
    return tool_result(tools.result_payload(result), 0)

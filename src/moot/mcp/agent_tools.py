"""The agent tools over MCP, generated from their declarations (:class:`moot.plugin.Tool`): one MCP tool per
tool of every registered protocol (``PROTOCOL_NAME``, or the name the tool keeps) and the shared ``emit``.

A tool's input schema is its argument model's (:mod:`moot.tools.declare`), with two changes a model finds
easier to fill: an argument that may be None is published as its plain type, and a tool that acts in a seat
the connection holds does not take the seat's secret (the connection keeps it). A tool that takes a seat moot
keeps (a plugin's) gains an optional ``participant_secret``, to take back from a new connection a seat taken
before. Each answers the tools' JSON payload (``ok: true`` …) or, when refused, a tool error with the
one-sentence fix and the rule ids (:mod:`moot.mcp.state`).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import Field, TypeAdapter, WithJsonSchema

from moot import registry
from moot.mcp.params import READ_ONLY, WRITES
from moot.mcp.state import answer_tool
from moot.plugin import Ref, Tool, ToolSet
from moot.tools.declare import SECRET_FIELD as SEAT_SECRET
from moot.tools.declare import (
    SHARED,
    Argument,
    ParticipantSecret,
    arguments_of,
    declares_secret,
    description,
    mcp_name,
    takes_kept_seat,
)


def _published(arg: Argument) -> Any:
    """The argument's annotation as the MCP schema shows it: an optional one as its plain type."""
    metadata = list(arg.metadata)
    if arg.optional and not any(isinstance(item, WithJsonSchema) for item in metadata):
        plain = [t for t in typing.get_args(arg.annotation) if t is not type(None)]
        kind: Any = plain[0] if len(plain) == 1 else typing.Union[tuple(plain)]  # noqa: UP007
        schema = TypeAdapter(kind).json_schema()
        metadata.append(WithJsonSchema(schema))
    field = Field(description=arg.description)
    return Annotated.__class_getitem__((arg.annotation, *metadata, field))  # type: ignore[attr-defined]


def _seat_secret(*, participant_secret: ParticipantSecret = None) -> None:
    """The argument a tool whose seat moot keeps gains over MCP, declared as a tool's are."""


_SEAT_SECRET = _published(arguments_of(_seat_secret)[0])
assert arguments_of(_seat_secret)[0].name == SEAT_SECRET


def mcp_function(tool: Tool) -> Callable[..., CallToolResult]:
    """The function the SDK serves as ``tool``: its signature is the tool's published arguments and ``ctx``."""
    keeps_secret = tool.seat is not None and not tool.seat.takes
    params = [
        inspect.Parameter(
            arg.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if arg.required else arg.default,
            annotation=_published(arg),
        )
        for arg in arguments_of(tool.function)
        if not (keeps_secret and arg.secret)
    ]
    if takes_kept_seat(tool) and not declares_secret(tool):  # to take a seat back
        secret = inspect.Parameter(SEAT_SECRET, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_SEAT_SECRET)
        params.append(secret)
    params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))

    def call(ctx: Context, **values: Any) -> CallToolResult:
        return answer_tool(ctx, tool, values)

    call.__signature__ = inspect.Signature(params, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": CallToolResult}
    call.__name__ = tool.function.__name__
    return call


def tool_sets() -> list[tuple[str | None, ToolSet]]:
    """Every ToolSet served, with the protocol it belongs to (None for the shared tools)."""
    found: list[tuple[str | None, ToolSet]] = []
    for plugin in registry.protocols().values():
        if plugin.tools is not None:
            found.append((plugin.name, plugin.tools.load()))
    found.append((None, Ref[ToolSet](SHARED).load()))
    return found


def add_agent_tools(server: MCPServer[Any]) -> None:
    """Serve every protocol's agent tools and the shared ones on ``server``."""
    for protocol, tools in tool_sets():
        for tool in tools:
            server.add_tool(
                mcp_function(tool),
                name=mcp_name(protocol, tool),
                description=description(tool),
                annotations=READ_ONLY if tool.read_only else WRITES,
            )

"""The MCP server: the tools that run deliberations, every protocol's agent tools (generated from their
declarations, :mod:`moot.mcp.agent_tools`), and the debate artifacts, served with the official SDK's ``MCPServer``.

The work root's ledger and the runner of its debates are opened once, in the server's lifespan, and shared by
every connection. The participation tools run on the SDK's worker threads (the ledger serialises its
transactions); the run tools are async and run in the event loop, where the debates run as tasks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import Resource
from pydantic import ValidationError

from moot import __version__, tools
from moot.agents.policy import AgentPolicy
from moot.doors import agent_policy, same_token
from moot.engine.runner import Runner
from moot.errors import BadInput
from moot.errors import ToolError as MootToolError  # mcp has a ToolError of its own
from moot.mcp import resources
from moot.mcp.agent_tools import add_agent_tools
from moot.mcp.run_tools import RUN_TOOLS
from moot.mcp.state import ServerState, state_of

NAME = "moot"
DOOR = "moot mcp"  # how refusals name the server whose flags open them
INSTRUCTIONS = (
    "moot runs deliberations between models and agents and enforces every rule in code. To have other models "
    "deliberate, call start_debate (any protocol; it answers at once with a debate_id), then debate_status with "
    "wait_seconds until its state is no longer running, then debate_result. To take part in a Socratic duel "
    "yourself: join "
    "(once per duel) -> wait_turn (until waited is your_turn; ended means stop) -> claim_lock -> read_debate -> "
    "append_turn (one turn in the duel's turn format) -> release_lock, then wait_turn again; whoever's claim_lock "
    "succeeds first writes Turn 1. When append_turn reports terminal_outcome, close with release_lock(close=true, "
    "outcome=<terminal_outcome>). A refusal is a tool error whose first line names the fix and the rule ids. "
    "Every record that is a file is a resource under moot://<its protocol's folder>/ (a duel's under moot://debates/)."
)


def _add_record_resource(server: MCPServer[ServerState], protocol: str, folder: str, uri: str) -> None:
    """One resource template: the records of ``protocol`` under ``folder``, read by name."""

    def record(name: str, ctx: Context) -> str:
        try:
            return resources.read_record(state_of(ctx).workspace, folder, name)
        except BadInput as missing:
            raise ResourceNotFoundError(missing.message) from None
        except MootToolError as refused:
            raise ResourceError(refused.message) from None

    record.__doc__ = f"A {protocol} record under {folder}/ (its turns and outcome, as moot wrote them)."
    server.resource(uri, name=f"{protocol}-record", title=f"{protocol} record", mime_type=resources.MARKDOWN)(record)


class StaticBearer:
    """The SDK's ``TokenVerifier`` for one shared secret: ``Authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        if same_token(token, self._token):
            return AccessToken(token=token, client_id=NAME, scopes=[])
        return None


class MootServer(MCPServer[ServerState]):
    """``MCPServer`` whose resource list is the debate artifacts on disk at the time of asking."""

    def __init__(self, root: Path, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.root = root

    async def list_resources(self) -> list[Resource]:
        return resources.listed(self.root)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """The SDK's call, with arguments that do not fit the schema told in one sentence (not pydantic's text)."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if isinstance(error.__cause__, ValidationError):
                raise ToolError(f"Error executing tool {name}: {schema_error(name, error.__cause__)}") from None
            raise


def schema_error(tool: str, error: ValidationError) -> str:
    """The first argument problem as one sentence naming the fix; the rejected value is never echoed."""
    problems = error.errors(include_url=False, include_input=False)
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"]) or "the arguments"
    more = f" ({len(problems) - 1} more argument problem(s))" if len(problems) > 1 else ""
    if first["type"] == "missing":
        return f"the argument {where!r} is missing; pass it and call {tool} again{more}."
    return f"the argument {where!r} is invalid ({first['msg'].lower()}); fix it and call {tool} again{more}."


def build_server(
    root: str | Path,
    *,
    database_url: str | None = None,
    bearer_token: str | None = None,
    url: str | None = None,
    policy: AgentPolicy | None = None,
) -> MootServer:
    """The server for the work root ``root``; with ``bearer_token`` every HTTP request must carry it. Its
    clients' debates run under ``policy`` (default: what the work root's moot.toml allows, else models only).

    Nothing is opened until the server runs, so the tool list can be read without a work root.
    """
    where = Path(root).resolve()
    allowed = policy if policy is not None else agent_policy(DOOR, where)

    @asynccontextmanager
    async def lifespan(_: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        with tools.open_workspace(where, database_url=database_url) as workspace:
            runner = Runner(where, allowed)
            try:
                yield ServerState(workspace=workspace, runner=runner, over_http=bearer_token is not None)
            finally:
                await runner.close()  # debates still running record where they stopped

    server = MootServer(
        where,
        name=NAME,
        title="moot",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level="WARNING",
        # The SDK's bearer check (401 with WWW-Authenticate) guards the HTTP endpoint; no OAuth server is
        # involved, so the issuer is only this server's own address.
        token_verifier=StaticBearer(bearer_token) if bearer_token else None,
        auth=AuthSettings(issuer_url=url or "http://127.0.0.1", resource_server_url=None) if bearer_token else None,
    )
    for function, hints in RUN_TOOLS:
        server.add_tool(function, name=function.__name__, annotations=hints)
    add_agent_tools(server)

    for plugin in resources.file_protocols():
        _add_record_resource(server, plugin.name, plugin.folder, resources.template(plugin))

    return server

"""``moot mcp``: serve the agent tools over the Model Context Protocol (stdio by default).

Only typer is imported here; the SDK loads when the command runs, so ``moot --help`` stays fast.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from moot.doors import AllowAgentOption, AllowServerOption
from moot.errors import UserError

DEFAULT_PORT = 8765


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def mcp_command(
    root: Annotated[
        Path | None,
        typer.Option(
            "--root", envvar="MOOT_ROOT", help="The work root (default: $MOOT_ROOT, else the current directory)."
        ),
    ] = None,
    transport: Annotated[
        Transport, typer.Option("--transport", help="stdio (for an agent host) or http (streamable HTTP).")
    ] = Transport.stdio,
    host: Annotated[
        str, typer.Option("--host", help="HTTP only: the address to bind (every request needs the token).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP only: the port to listen on.")] = DEFAULT_PORT,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="MOOT_MCP_TOKEN",
            help="HTTP only: the token every request must carry as 'Authorization: Bearer <token>' "
            "($MOOT_MCP_TOKEN keeps it out of ps; default: a random one, printed at start).",
        ),
    ] = None,
    allow_agent: AllowAgentOption = None,
    allow_server: AllowServerOption = None,
) -> None:
    """Serve moot over MCP: start and follow deliberations, and take part in duels, critiques and roundtables.

    Clients' debates may use the configured models only, unless --allow-agent or --allow-server says more.
    """
    from moot import tools
    from moot.doors import agent_policy, door_token
    from moot.errors import ToolError

    http = transport is Transport.http
    if http and not 0 < port < 65536:
        raise UserError(f"--port {port} is not a TCP port; pass one from 1 to 65535.")
    where = root if root is not None else Path.cwd()
    try:
        tools.open_workspace(where).close()  # a bad root or an unreachable ledger is reported before serving
    except ToolError as problem:
        typer.echo(f"moot: {problem.message}", err=True)
        raise typer.Exit(problem.exit_code) from None

    try:
        from moot.mcp.server import DOOR, build_server
    except ModuleNotFoundError as missing:
        if (missing.name or "").split(".")[0] not in {"mcp", "mcp_types"}:
            raise
        raise UserError("moot mcp needs the MCP SDK; install it with: pip install 'moot[mcp]'.") from None

    policy = agent_policy(DOOR, where.resolve(), agents=allow_agent or (), servers=allow_server or ())
    if not http:
        build_server(where, policy=policy).run("stdio")
        return
    from moot.mcp.http import serve_http, url_of

    required, drawn = door_token(token)
    server = build_server(where, bearer_token=required, url=url_of(host, port), policy=policy)
    serve_http(server, host, port, drawn_token=required if drawn else None)

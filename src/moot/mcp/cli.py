"""``moot mcp``: serve the agent tools over the Model Context Protocol (stdio by default).

Only typer is imported here; the SDK loads when the command runs, so ``moot --help`` stays fast.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

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
        str, typer.Option("--host", help="HTTP only: the address to bind; anything but loopback needs --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP only: the port to listen on.")] = DEFAULT_PORT,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="MOOT_MCP_TOKEN",
            help="HTTP only: require 'Authorization: Bearer <token>' (or $MOOT_MCP_TOKEN, which keeps it out of ps).",
        ),
    ] = None,
) -> None:
    """Serve moot over MCP: start and follow deliberations, and take part in duels, critiques and roundtables."""
    from moot import tools

    http = transport is Transport.http
    if http:
        from moot.mcp.http import require_token_off_loopback

        require_token_off_loopback(host, token)
        if not 0 < port < 65536:
            raise UserError(f"--port {port} is not a TCP port; pass one from 1 to 65535.")
    where = root if root is not None else Path.cwd()
    try:
        tools.open_workspace(where).close()  # a bad root or an unreachable ledger is reported before serving
    except tools.ToolError as problem:
        typer.echo(f"moot: {problem.message}", err=True)
        raise typer.Exit(problem.exit_code) from None

    try:
        from moot.mcp.server import build_server
    except ModuleNotFoundError as missing:
        if (missing.name or "").split(".")[0] not in {"mcp", "mcp_types"}:
            raise
        raise UserError("moot mcp needs the MCP SDK; install it with: pip install 'moot[mcp]'.") from None

    if not http:
        build_server(where).run("stdio")
        return
    from moot.mcp.http import serve_http, url_of

    server = build_server(where, bearer_token=token, url=url_of(host, port))
    serve_http(server, host, port, token=token)

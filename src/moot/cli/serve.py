"""``moot serve`` (the records of a work root in a browser, live) and ``moot export RECORD --html FILE``."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path
from typing import Annotated

import typer

from moot.doors import AllowAgentOption, AllowServerOption, agent_policy, door_token, is_loopback
from moot.errors import UserError

DEFAULT_PORT = 8800
OPENAI_DOOR = "moot serve --openai"
NEEDS_WEB = "{what} needs moot's web extra; install it with: pip install 'moot[web]'."


def _require_web(what: str) -> None:
    try:
        import jinja2  # noqa: F401
        import sse_starlette  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise UserError(NEEDS_WEB.format(what=what)) from exc


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or one sentence saying why there cannot be one."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise UserError(f"cannot bind to {host}: {exc.strerror}; pass --host with an address of this machine.") from exc
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(f"port {port} on {host} is in use; pass --port with a free port (or --port 0).") from exc
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}; pass another --host or --port.") from exc
    return sock


def serve_command(
    root: Annotated[Path, typer.Option("--root", help="The work root whose records to show.")] = Path("."),
    port: Annotated[int, typer.Option("--port", help="The port to listen on (0: any free port).")] = DEFAULT_PORT,
    host: Annotated[str, typer.Option("--host", help="The address to bind (every request needs the token).")] = (
        "127.0.0.1"
    ),
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="MOOT_SERVE_TOKEN",
            help="The token every request must carry, loopback included (default: a random one, in the printed URL).",
        ),
    ] = None,
    openai: Annotated[
        bool,
        typer.Option(
            "--openai",
            help="Also serve an OpenAI-compatible API at /v1: models moot/council, moot/critique, … answer with the "
            "[panel] of moot.toml; the token is the API key.",
        ),
    ] = False,
    allow_agent: AllowAgentOption = None,
    allow_server: AllowServerOption = None,
) -> None:
    """Show the records of a work root in a browser: an index, a page per record with plots, live as turns land.

    With --openai, chat clients ask the panel of moot.toml through the OpenAI chat-completions API.
    """
    _require_web("moot serve")
    import uvicorn

    from moot.web.app import create_app

    if not root.is_dir():
        raise UserError(f"{root} is not a directory; pass --root with the work root that holds the records.")
    if not 0 <= port <= 65535:
        raise UserError(f"--port {port} is not a port; pass a number from 0 to 65535.")
    required, _ = door_token(token)
    policy = None
    if openai:
        from moot.web.chat_api import panel_of

        panel_of(root.resolve())  # refused now, not at the first question
        policy = agent_policy(OPENAI_DOOR, root.resolve(), agents=allow_agent or (), servers=allow_server or ())
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/?token={required}"
    typer.echo(f"moot: serving the records of {root.resolve()} at {url} (Ctrl-C stops)")
    if openai:
        typer.echo(f"moot: OpenAI-compatible API at http://{shown}:{bound}/v1 (API key: {required})")
    app = create_app(root.resolve(), token=required, loopback=host if is_loopback(host) else None, chat=policy)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])


def export_command(
    record: Annotated[Path, typer.Argument(help="A record file, or a roundtable meeting directory.")],
    html: Annotated[Path, typer.Option("--html", help="The HTML file to write: one self-contained page.")],
) -> None:
    """Write a record's page as one self-contained HTML file (no network needed), for a pull request or an email."""
    _require_web("moot export")
    from moot.core.files import atomic_write_text
    from moot.errors import ProtocolViolationError
    from moot.paths import relative_text
    from moot.records import record_root
    from moot.web.page import build, record_html

    page = build(record)
    target = html.resolve()
    if target == page.path.resolve() or page.path.resolve() in target.parents:
        raise UserError(f"{html} is the record itself; pass --html with a file outside the record.")
    if not target.parent.is_dir():
        raise UserError(f"{html.parent} is not a directory; create it or pass another --html path.")
    try:
        # Meant for a pull request or an email: paths under the work root are written relative to it.
        atomic_write_text(target, relative_text(record_html(page), record_root(page.path)))
    except ProtocolViolationError as exc:
        raise UserError(f"cannot write {html}: {exc}") from exc
    except OSError as exc:
        raise UserError(f"cannot write {html}: {exc.strerror or exc}; check the path and its permissions.") from exc
    typer.echo(f"wrote {html} ({os.path.getsize(target)} bytes)")

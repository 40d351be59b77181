"""``moot mcp --transport http``: streamable HTTP, on loopback unless told otherwise, and always with a bearer
token (:mod:`moot.doors`)."""

from __future__ import annotations

import functools
import socket
import sys
from typing import TYPE_CHECKING

from moot.errors import UserError

if TYPE_CHECKING:
    from moot.mcp.server import MootServer

PATH = "/mcp"


def url_of(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}{PATH}"


def serve_http(server: MootServer, host: str, port: int, *, drawn_token: str | None) -> None:
    """Serve ``server`` (built with its bearer token); ``drawn_token``, a token drawn at start, is printed."""
    import anyio
    import uvicorn

    # The SDK turns on DNS-rebinding protection (Host and Origin checks) when host is a loopback name.
    app = server.streamable_http_app(streamable_http_path=PATH, host=host)
    config = uvicorn.Config(app, host=host.strip("[]"), port=port, log_level="warning", lifespan="on")
    listening = _listen(host, port)  # before "serving" is printed: a busy port is the one sentence
    if drawn_token:
        guard = f"every request needs 'Authorization: Bearer {drawn_token}' (--token or $MOOT_MCP_TOKEN sets it)"
    else:
        guard = "every request needs 'Authorization: Bearer <the token you gave>'"
    print(f"moot mcp: serving {url_of(host, port)}; {guard}", file=sys.stderr, flush=True)
    anyio.run(functools.partial(uvicorn.Server(config).serve, sockets=[listening]))


def _listen(host: str, port: int) -> socket.socket:
    """The bound socket uvicorn serves on, or a UserError naming the fix (a busy port, an unknown host)."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((bare, port))
        listening.listen(128)  # a client that connects once "serving" is printed waits for uvicorn, not refused
    except OSError as exc:
        listening.close()
        raise UserError(
            f"moot mcp cannot listen on {url_of(host, port)} ({exc.strerror or exc}); pass another --port, or stop "
            "what is using it."
        ) from None
    return listening

"""``moot serve``: the records of a work root as a local web app (Starlette), live by server-sent events.

A record's URL is its path under the root; only paths that :func:`moot.records.find_records` lists are served,
so no URL reaches another file. Every request needs the token, on loopback too.

Every response carries its security headers as real headers (:class:`SecurityHeaders`): a page its
Content-Security-Policy with ``frame-ancestors 'none'``, anything else a policy that allows nothing, and all
``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``. The live-update streams a server keeps
open at once are capped (:data:`MAX_STREAMS`); one more is answered 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from moot import registry
from moot.agents.policy import AgentPolicy
from moot.doors import same_token
from moot.errors import ChatError, UserError
from moot.records import find_records, last_change, record_row
from moot.web import isolated
from moot.web.chat_api import API_PREFIX, ChatApi, error_response
from moot.web.chat_api import routes as chat_routes
from moot.web.page import build, content_policy, index_body, index_html, new_nonce, record_body, record_html

# How often a watched record is looked at: a new turn shows well within a second of its commit. The index
# looks at every record, so less often.
POLL_SECONDS = 0.2
INDEX_POLL_SECONDS = 1.0
TOKEN_COOKIE = "moot_token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
# Live pages a server updates at once (each stream polls its record): far more than one person opens, far fewer
# than would let a client tie up the server's threads.
MAX_STREAMS = 32
STREAM_RETRY_S = 10
# Only a header can forbid framing (a meta tag's frame-ancestors is ignored).
NO_FRAMING = "frame-ancestors 'none'"
NOTHING_ALLOWED = f"default-src 'none'; base-uri 'none'; form-action 'none'; {NO_FRAMING}"


class SecurityHeaders:
    """Security headers on every response, refusals, redirects and streams included (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if "content-security-policy" not in headers:
                    headers["Content-Security-Policy"] = NOTHING_ALLOWED
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "no-referrer"
                headers["X-Frame-Options"] = "DENY"  # what browsers without frame-ancestors read
            await send(message)

        await self.app(scope, receive, with_headers)


def _html(markup: Callable[[str], str]) -> HTMLResponse:
    """A page rendered with a fresh nonce, sent with the policy that allows that nonce's script only."""
    nonce = new_nonce()
    policy = f"{content_policy(nonce, live=True)}; {NO_FRAMING}"
    return HTMLResponse(markup(nonce), headers={"Content-Security-Policy": policy})


class StreamSlots:
    """How many live-update streams are open; a stream holds its slot until its response is over."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0

    def take(self) -> bool:
        if self.open >= self.limit:
            return False
        self.open += 1
        return True

    def give_back(self) -> None:
        self.open -= 1


class _SlottedStream(EventSourceResponse):
    """A stream that gives its slot back however it ends (the client left, the server stops, an error)."""

    def __init__(self, slots: StreamSlots, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slots = slots

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slots.give_back()


def _records(root: Path) -> dict[str, Path]:
    return {path.relative_to(root).as_posix(): path for path in find_records(root)}


def _record(request: Request) -> Path:
    root: Path = request.app.state.root
    found = _records(root).get(request.path_params["record"])
    if found is None:
        raise LookupError(request.path_params["record"])
    return found


def _link(row: dict[str, Any]) -> str:
    return "/r/" + quote(row["name"])


def _stamps(directory: Path, depth: int = 2) -> list[tuple[str, int]]:
    """Each entry under ``directory`` with its change time, two levels deep (a meeting's files too)."""
    found: list[tuple[str, int]] = []
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):  # removed while looked at
                found.append((entry.path, entry.stat(follow_symlinks=False).st_mtime_ns))
                if depth > 1 and entry.is_dir(follow_symlinks=False):
                    found += _stamps(Path(entry.path), depth - 1)
    return found


class IndexRows:
    """The index's rows, each computed again only when its record changed (a root may hold thousands)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.known: dict[str, tuple[float, dict[str, Any]]] = {}

    def stamps(self) -> frozenset[tuple[str, int]]:
        """What the index depends on: every file in the records' folders and when it changed, in one pass."""
        return frozenset(entry for folder in registry.folders() for entry in _stamps(self.root / folder))

    def rows(self) -> list[dict[str, Any]]:
        fresh = {}
        for name, path in _records(self.root).items():
            stamp = last_change(path)
            known = self.known.get(name)
            fresh[name] = (
                known
                if known is not None and known[0] == stamp
                else (stamp, isolated.run(record_row, path, check_limit=isolated.CHECKED_BYTES))
            )
        self.known = fresh
        return [{**row, "name": name} for name, (_, row) in fresh.items()]


async def index(request: Request) -> Response:
    root: Path = request.app.state.root
    rows = await asyncio.to_thread(request.app.state.index.rows)
    return _html(lambda nonce: index_html(root, rows, _link, events="/events", nonce=nonce))


async def index_events(request: Request) -> Response:
    """A stream of the index's table, sent whenever a record appears, changes or goes."""
    root: Path = request.app.state.root
    index: IndexRows = request.app.state.index
    return _event_stream(request, index.stamps, lambda: index_body(root, index.rows(), _link), INDEX_POLL_SECONDS)


def _event_stream(
    request: Request, state: Callable[[], object], render: Callable[[], str], every: float = POLL_SECONDS
) -> Response:
    """``render()`` as an ``update`` event whenever ``state()`` changes and the markup with it.

    At shutdown the stream ends by itself (``stop``), so that the server stops at once and cleanly. A stream past
    the server's cap is refused (503) in one sentence, with when to retry.
    """
    slots: StreamSlots = request.app.state.streams
    if not slots.take():
        return PlainTextResponse(
            f"this moot server already sends {slots.limit} live updates, its limit; close another page it shows, "
            f"or reload this one in a while.",
            status_code=503,
            headers={"Retry-After": str(STREAM_RETRY_S)},
        )
    stop = anyio.Event()

    async def changes() -> AsyncIterator[dict[str, str]]:
        seen: object = None
        sent = ""
        while not stop.is_set() and not await request.is_disconnected():
            now = await asyncio.to_thread(state)
            if now != seen:
                seen = now
                try:
                    body = await asyncio.to_thread(render)
                except UserError:  # mid-write or removed: the next change says more
                    body = sent
                if body != sent:
                    sent = body
                    yield {"event": "update", "data": body}
            with anyio.move_on_after(every):
                await stop.wait()

    return _SlottedStream(slots, changes(), ping=15, shutdown_event=stop, shutdown_grace_period=0.5)


def _page_number(request: Request) -> int:
    """The transcript page asked for (``?page=N``); the first for anything else."""
    asked = request.query_params.get("page", "")
    return int(asked) if asked.isdigit() and len(asked) < 10 else 1


async def record(request: Request) -> Response:
    try:
        path = _record(request)
    except LookupError as exc:
        return PlainTextResponse(f"no record {exc} in this work root; the index lists them.", status_code=404)
    number = _page_number(request)
    try:
        page = await asyncio.to_thread(isolated.run, build, path, number, check_limit=isolated.CHECKED_BYTES)
    except UserError as exc:  # e.g. removed since the index was drawn
        return PlainTextResponse(str(exc), status_code=404)
    events = f"/events/{quote(request.path_params['record'])}?page={page.window.number}"
    return _html(lambda nonce: record_html(page, events=events, index="/", nonce=nonce))


async def events(request: Request) -> Response:
    """A stream of the page's changing part, sent whenever the record's files change."""
    try:
        path = _record(request)
    except LookupError as exc:
        return PlainTextResponse(f"no record {exc} in this work root.", status_code=404)

    number = _page_number(request)
    return _event_stream(
        request,
        lambda: last_change(path),
        lambda: record_body(isolated.run(build, path, number, check_limit=isolated.CHECKED_BYTES)),
    )


class TokenMiddleware(BaseHTTPMiddleware):
    """Every request carries the token: ``?token=…`` once (kept in a cookie), or the cookie."""

    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request.url.path.startswith(API_PREFIX):  # an API client: its bearer token only, answered in JSON
            scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() == "bearer" and same_token(bearer.strip(), self.token):
                return await call_next(request)
            return error_response(
                ChatError(
                    401,
                    "this moot server needs its token as the API key (Authorization: Bearer TOKEN).",
                    "invalid_api_key",
                )
            )
        given = request.query_params.get("token")
        if given is not None and same_token(given, self.token):
            response = RedirectResponse(request.url.remove_query_params("token"), status_code=303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
            return response
        cookie = request.cookies.get(TOKEN_COOKIE, "")
        if not same_token(cookie, self.token):
            return PlainTextResponse("this moot server needs its token: open the URL it printed (…?token=…).", 401)
        return await call_next(request)


def create_app(
    root: Path,
    *,
    token: str,
    loopback: str | None = "127.0.0.1",
    max_streams: int = MAX_STREAMS,
    chat: AgentPolicy | None = None,
) -> Starlette:
    """The web app over ``root``; ``token`` is required of every request.

    With ``chat`` (the door's agent policy) it also serves the OpenAI-compatible API (:mod:`moot.web.chat_api`).

    ``loopback`` is the loopback address served on, if it is one: then only requests naming a loopback host
    are answered, so that a page of another site cannot reach the records through a rebound DNS name.
    ``max_streams`` caps the live-update streams open at once.
    """
    middleware = [Middleware(SecurityHeaders)]  # outermost: the other middlewares' refusals get the headers too
    if loopback is not None:
        named = f"[{loopback}]" if ":" in loopback else loopback
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=[*LOOPBACK_NAMES, named]))
    middleware.append(Middleware(TokenMiddleware, token=token))
    app = Starlette(
        routes=[
            Route("/", index),
            Route("/events", index_events),
            Route("/r/{record:path}", record),
            Route("/events/{record:path}", events),
            *(chat_routes() if chat is not None else []),
        ],
        middleware=middleware,
    )
    app.state.root = root
    app.state.index = IndexRows(root)
    app.state.streams = StreamSlots(max_streams)
    if chat is not None:
        app.state.chat = ChatApi(root, chat)
    return app

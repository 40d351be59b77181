"""A fault-injecting HTTP proxy on loopback, in front of a real OpenAI-compatible model server.

Each POST to ``…/chat/completions`` asks a schedule whether to misbehave. A fault answers in one of the
ways a real network, gateway or model server fails; every other request is forwarded unchanged. The
proxy counts what it did, so a test can hold moot's records against it. A plain module, not collected.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agents"))
from agents_helpers import chat_completion


class Fault(StrEnum):
    RATE_LIMIT = "429"  # with Retry-After: 1
    SERVER_ERROR = "500"
    HANG = "hang"  # never answers; the agent gives up on the request at its deadline and retries
    TRUNCATED = "truncated"  # the real answer, cut off in the middle of its body
    INVALID_JSON = "invalid_json"  # 200 with a JSON content type and an HTML body
    OFF_SCHEMA = "off_schema"  # a valid completion whose content is JSON that is not a turn


# What the agent retries on its own (agents/base.py RetryPolicy; a hang once the request's deadline has
# passed, agents/_http.py); an off-schema reply is a reply: the engine sends it back for repair.
RETRIED = frozenset({Fault.RATE_LIMIT, Fault.SERVER_ERROR, Fault.TRUNCATED, Fault.INVALID_JSON, Fault.HANG})

OFF_SCHEMA_CONTENT = json.dumps({"unexpected": "field"})
INVALID_JSON_BODY = b"<html><body><h1>502 Bad Gateway</h1></body></html>"

# Request number (1-based, counted per proxy) -> the fault to inject, or None to forward.
Schedule = Callable[[int], Fault | None]


def scripted(faults: Sequence[Fault | None]) -> Schedule:
    """Request n gets ``faults[n - 1]``; every request after the list is forwarded."""
    return lambda number: faults[number - 1] if number <= len(faults) else None


def random_faults(rng: random.Random, rate: float) -> Schedule:
    """Each request misbehaves with probability ``rate``, the kind drawn uniformly."""
    kinds = list(Fault)
    return lambda _number: rng.choice(kinds) if rng.random() < rate else None


class FaultProxy:
    """The proxy's state: where it listens, and what it did with each chat completion request."""

    def __init__(self, upstream: str, schedule: Schedule) -> None:
        self.upstream = upstream.rstrip("/")  # e.g. http://127.0.0.1:PORT/v1
        self.schedule = schedule
        self.answers: list[Fault | None] = []  # per chat completion request: the fault, or None (forwarded)
        self.base_url = ""
        self._server: asyncio.Server | None = None
        self._client: httpx.AsyncClient | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def injected(self) -> list[Fault]:
        return [fault for fault in self.answers if fault is not None]

    async def start(self) -> None:
        self._client = httpx.AsyncClient(timeout=None)
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"

    async def stop(self) -> None:
        if self._server is None or self._client is None:
            return  # it never started
        self._server.close()
        for task in list(self._handlers):
            task.cancel()  # hung answers included
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._client.aclose()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._answer(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client gave up (a turn timeout) or sent garbage: nothing to answer
        except asyncio.CancelledError:
            pass  # the proxy stops; ending quietly keeps asyncio from logging the cancellation (3.11)
        finally:
            writer.close()
            self._handlers.discard(task)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *lines = head.rstrip("\r\n").split("\r\n")
        method, target, _version = request_line.split(" ", 2)
        headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        fault = None
        if method == "POST" and target.endswith("/chat/completions"):
            fault = self.schedule(len(self.answers) + 1)
            self.answers.append(fault)
        if fault is Fault.HANG:
            await reader.read()  # until the client closes the connection (or the proxy stops)
            return
        if fault is Fault.RATE_LIMIT:
            error = {"error": {"message": "injected: slow down", "type": "rate_limit"}}
            await _send(writer, 429, json.dumps(error).encode(), extra={"retry-after": "1"})
        elif fault is Fault.SERVER_ERROR:
            error = {"error": {"message": "injected: the server broke", "type": "server_error"}}
            await _send(writer, 500, json.dumps(error).encode())
        elif fault is Fault.INVALID_JSON:
            await _send(writer, 200, INVALID_JSON_BODY)
        elif fault is Fault.OFF_SCHEMA:
            await _send(writer, 200, json.dumps(chat_completion(OFF_SCHEMA_CONTENT)).encode())
        else:
            status, content = await self._forward(method, target, headers, body)
            cut = len(content) // 2 if fault is Fault.TRUNCATED else None
            await _send(writer, status, content, cut=cut)

    async def _forward(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        assert self._client is not None
        path = target.split("/v1", 1)[-1]
        kept = {name: value for name, value in headers.items() if name in ("content-type", "authorization", "accept")}
        answer = await self._client.request(method, self.upstream + path, headers=kept, content=body)
        return answer.status_code, answer.content


async def _send(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    *,
    extra: dict[str, str] | None = None,
    cut: int | None = None,
) -> None:
    """An HTTP/1.1 answer that closes the connection; ``cut`` sends only that many body bytes."""
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}", "content-type: application/json"]
    lines += [f"content-length: {len(body)}", "connection: close"]
    lines += [f"{name}: {value}" for name, value in (extra or {}).items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body[:cut])
    await writer.drain()


@contextmanager
def fault_proxy(upstream: str, schedule: Schedule) -> Iterator[FaultProxy]:
    """Run a :class:`FaultProxy` on its own event loop thread for the duration of the block."""
    proxy = FaultProxy(upstream, schedule)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fault-proxy", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(timeout=10)
        yield proxy
    finally:
        asyncio.run_coroutine_threadsafe(proxy.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

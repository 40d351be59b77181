"""What the OpenAI and Anthropic backends share: HTTP status codes to the agent error tree, the deadline of
each request inside a turn, and an SDK client for each event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Generic, Protocol, TypeVar

from moot.agents.base import AgentRequest
from moot.errors import AgentError, AgentTimeout, AgentUnavailable


class _Closable(Protocol):
    async def close(self) -> None: ...


Client = TypeVar("Client", bound=_Closable)


class LoopClient(Generic[Client]):
    """An SDK client for the running event loop.

    A client's pooled keep-alive connections belong to the loop that opened them, and one agent may serve
    several loops in turn (``moot run`` checks the server in one ``asyncio.run`` and debates in the next): a
    connection reused from a closed loop fails with "Event loop is closed". So each loop gets its own client;
    the first loop adopts the one made up front, whose settings (base URL) may be read at once. A client the
    caller built its own HTTP client into shares that HTTP client across loops: use it in one loop.
    """

    def __init__(self, make: Callable[[], Client]) -> None:
        self._make = make
        self.first: Client = make()
        self._current: Client | None = self.first
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> Client:
        loop = asyncio.get_running_loop()
        if self._current is None or (self._loop is not None and self._loop is not loop):
            self._current = self._make()  # an earlier loop's connections go with that loop
        self._loop = loop
        return self._current

    async def close(self) -> None:
        """Close this loop's client (the next use opens another); one of an earlier loop only goes with it."""
        if self._current is not None and self._loop in (None, asyncio.get_running_loop()):
            await self._current.close()
        self._current, self._loop = None, None


# A request that hangs is abandoned while the turn still has time for one retry: that reserve (a
# minute, enough for a responsive server to answer) or half the turn, whichever is less. The rest of the
# turn is the request's own, so that a slow server (a local model on a busy machine) can still finish.
RETRY_RESERVE_S = 60.0


def busy_server(exc: BaseException) -> bool:
    """Whether a probe's timeout came after the connection was made: the server is there, only busy.

    The SDKs raise their timeout error from their HTTP library's (httpx or httpx2, whose classes share these
    names); only a connect timeout means nothing answered.
    """
    kinds = {kind.__name__ for kind in type(exc.__cause__).__mro__}
    return "TimeoutException" in kinds and "ConnectTimeout" not in kinds


class RequestDeadline:
    """The turn's deadline (``request.timeout_s`` from the first request) and each request's shorter one.

    A request gets the turn less ``RETRY_RESERVE_S`` (at least half the turn), and never more than the turn
    has left, so a hung request is retried inside the turn instead of using it up. httpx applies a timeout
    to every read, so for a server that sends its answer as it generates it this is an idle timeout, not a
    cap on the whole answer.
    """

    def __init__(self, request: AgentRequest, clock: Callable[[], float] = time.monotonic) -> None:
        self.turn_s = request.timeout_s
        self.request_s = max(request.timeout_s / 2, request.timeout_s - RETRY_RESERVE_S)
        self._clock = clock
        self._end = clock() + request.timeout_s

    def next_timeout(self, where: str) -> float:
        """Seconds the next request may wait; a timeout that is not retried when the turn's time is up."""
        left = self._end - self._clock()
        if left <= 0:
            raise AgentTimeout(f"{where} gave no answer within the turn's {self.turn_s:g} s: raise --turn-timeout")
        return min(self.request_s, left)

    def timed_out(self, where: str, waited_s: float) -> AgentTimeout:
        """The error for a request that got no answer within ``waited_s``: retried while the turn has time."""
        return AgentTimeout(
            f"{where} did not answer within {waited_s:g} s (one request's part of the {self.turn_s:g} s turn): "
            "retry, or raise --turn-timeout for a slow model",
            retryable=self._end - self._clock() > 0,
        )


def one_line(text: str, limit: int = 200) -> str:
    """Collapse whitespace and keep the end short enough for a one-sentence message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from a Retry-After header given in seconds (HTTP dates are ignored)."""
    value = (headers or {}).get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def error_for_status(
    status: int,
    detail: str,
    *,
    where: str,
    model: str,
    key_env: str,
    headers: Mapping[str, str] | None = None,
) -> AgentError:
    """The AgentError for an HTTP error answer; 408, 429 and 5xx are retryable."""
    detail = one_line(detail)
    if status == 401:
        return AgentUnavailable(f"{where} rejected the API key (HTTP 401): set {key_env} to a valid key")
    if status == 403:
        return AgentUnavailable(f"{where} refused access (HTTP 403, {detail}): check the key's permissions for {model}")
    if status == 404:
        return AgentUnavailable(
            f"model '{model}' was not found at {where} (HTTP 404): check the name or pull the model"
        )
    if status == 408:
        return AgentTimeout(f"{where} timed out the request (HTTP 408): retry later or raise timeout_s", retryable=True)
    if status == 429:
        return AgentError(
            f"{where} is rate limiting requests (HTTP 429): wait and retry, or run fewer debates at once",
            retryable=True,
            retry_after_s=retry_after_s(headers),
        )
    if status >= 500:
        return AgentError(
            f"{where} failed with HTTP {status} ({detail}): retry later",
            retryable=True,
            retry_after_s=retry_after_s(headers),
        )
    return AgentError(f"{where} refused the request with HTTP {status} ({detail}): fix the request or the model")

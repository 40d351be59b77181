"""How a reply in the making tells whoever waits for it how far it got: the tokens generated so far.

The engine opens a listener around each request (:func:`listening`); an agent that generates token by token
calls :func:`generated` as it goes, from any thread: the listener is a context variable, which
``asyncio.to_thread`` and new tasks carry along, so every request of a sealed phase has its own. An agent that
does not stream says nothing, and a progress line shows only its clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

TokenListener = Callable[[int], None]  # called with the completion tokens generated so far

_listener: ContextVar[TokenListener | None] = ContextVar("moot_token_listener", default=None)


@contextmanager
def listening(listener: TokenListener) -> Iterator[None]:
    """Hear the token counts of the replies requested inside this block (in this task and the ones it starts)."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def token_listener() -> TokenListener:
    """Who hears this reply's token counts: the listener of the current context, or no one."""
    return _listener.get() or _nobody


def _nobody(tokens: int) -> None:
    return None


class Progress:
    """When a reply in the making last moved (its start, then each token): a deadline can follow it."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def moved(self) -> None:
        self.last = time.monotonic()


async def within(work: Awaitable[T], timeout_s: float, progress: Progress | None = None, idle_s: float = 0.0) -> T:
    """``work``'s result, or TimeoutError once ``timeout_s`` has passed and, with ``progress``, also ``idle_s``
    since it last moved: a reply that keeps writing tokens is slow, not stuck. ``work`` is cancelled on a
    timeout and when the caller is."""
    task = asyncio.ensure_future(work)
    until = time.monotonic() + timeout_s
    try:
        while True:
            deadline = max(until, progress.last + idle_s) if progress is not None else until
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            done, _ = await asyncio.wait({task}, timeout=left)
            if done:
                return task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

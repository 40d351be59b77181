"""How a reply in the making tells whoever waits for it how far it got: the tokens generated so far.

The engine opens a listener around each request (:func:`listening`); an agent that generates token by token
calls :func:`generated` as it goes, from any thread: the listener is a context variable, which
``asyncio.to_thread`` and new tasks carry along, so every request of a sealed phase has its own. An agent that
does not stream says nothing, and a progress line shows only its clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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

"""Ctrl-C during a run: the first stops it at the next token, the second ends the process at once.

The first SIGINT cancels the run's task. The engine records where the run stopped, an agent drops the reply it
was generating (the embedded model at its next token, a command with its process group), and the caller hears
:class:`KeyboardInterrupt` once the agents' threads have ended. A second SIGINT does not wait for anything:
every accepted turn is already durable and each write is crash-safe, so the process exits with code 130 at once,
as a kill would leave it, after printing what ``stop_now`` gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a program Ctrl-C ended


def run_interruptible(
    main: Coroutine[Any, Any, T], *, stopping: Callable[[], None], stop_now: Callable[[], tuple[str, str]]
) -> T:
    """Run ``main`` to its end on a new event loop, stopping as the module docstring says.

    ``stopping`` is called on the loop after the first Ctrl-C (a line that says the run is stopping);
    ``stop_now`` from the signal handler of the second, and returns what to write to stdout and to stderr before
    the process exits.
    Outside the main thread (no signal handler can be set there) this is ``asyncio.run``.
    """
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)
    interrupts = 0
    task: asyncio.Task[T] | None = None

    with asyncio.Runner() as runner:
        loop = runner.get_loop()

        def on_sigint(signum: int, frame: FrameType | None) -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts > 1:
                _exit_now(stop_now)
            # Not from inside the handler: it may have cut into a write to the terminal.
            loop.call_soon_threadsafe(stopping)
            if task is not None:
                loop.call_soon_threadsafe(task.cancel)

        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            task = loop.create_task(main)
            try:
                return loop.run_until_complete(task)
            except asyncio.CancelledError:
                if interrupts:
                    raise KeyboardInterrupt from None
                raise
            finally:
                # Closing the loop waits for the agents' threads; a second Ctrl-C must still end it at once.
                runner.close()
        finally:
            signal.signal(signal.SIGINT, previous)


def _exit_now(stop_now: Callable[[], tuple[str, str]]) -> None:
    """Write what ``stop_now`` gives straight to the file descriptors (no lock a handler could wait on), and exit."""
    try:
        out, err = stop_now()
    except Exception:  # whatever it was, the person asked to stop now
        out, err = "", ""
    if sys.stderr.isatty():
        err = "\r\x1b[2K\x1b[?25h" + err  # clear the live line and show the cursor it hid
    for fd, text in ((1, out), (2, err)):
        with contextlib.suppress(OSError):  # a closed pipe: nothing more to tell
            os.write(fd, text.encode("utf-8", "replace"))
    os._exit(EXIT_INTERRUPTED)

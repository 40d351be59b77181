"""The viewer's work on a large record, done in a child process, one at a time: the server's memory stays
bounded whatever a record holds.

Checking a record holds several copies of its text at once (the text, its lines, its turns, their models), and a
record may be 16 MiB. Up to :data:`IN_PROCESS_BYTES` the server does the work itself; a larger record (with its
attempt log) is checked in a fresh process that ends with the work, so that its memory goes back to the system,
and only the small result (a row of the index, one page) comes back.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from moot.records import record_bytes

IN_PROCESS_BYTES = 1024 * 1024
# The largest record (with its attempt log) the viewer checks: checking holds several copies of a record, and a
# child checking one of 2 MiB peaks near 85 MiB. A larger one is shown a page at a time, unchecked, with the
# command that checks it.
CHECKED_BYTES = 2 * 1024 * 1024

P = ParamSpec("P")
R = TypeVar("R")

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ProcessPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            # One worker, and a fresh one for each task ("spawn": nothing of the server's threads is copied).
            _pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                max_tasks_per_child=1,
                initializer=_end_with_the_server,
            )
        return _pool


def _end_with_the_server() -> None:
    """In the child: end as soon as the server has ended, however it ended. A server stopped by a signal never
    shuts its pool down, and the child, waiting for work that cannot come, would outlive it for good."""
    server = multiprocessing.parent_process()
    if server is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([server.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="moot-server-watch", daemon=True).start()


def run(work: Callable[Concatenate[Path, P], R], record: Path, *args: P.args, **kwargs: P.kwargs) -> R:
    """``work(record, ...)`` here for a small record, else in the child process (waiting for its turn).

    ``work`` is a module-level function and its result picklable. Its exceptions come back as they were raised.
    """
    if record_bytes(record) <= IN_PROCESS_BYTES:
        return work(record, *args, **kwargs)
    return _executor().submit(work, record, *args, **kwargs).result()

"""The viewer's work on a large record, done in a child process, one at a time: the server's memory stays
bounded whatever a record holds.

Checking a record holds several copies of its text at once (the text, its lines, its turns, their models), and a
record may be 16 MiB. Up to :data:`IN_PROCESS_BYTES` the server does the work itself; a larger record (with its
attempt log) is checked in a fresh process that ends with the work, so that its memory goes back to the system,
and only the small result (a row of the index, one page) comes back.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from moot.engine.loop import usage_path

IN_PROCESS_BYTES = 1024 * 1024

P = ParamSpec("P")
R = TypeVar("R")

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def weight(record: Path) -> int:
    """The bytes a look at ``record`` reads: its file and attempt log, or a meeting's files."""
    files = [p for p in record.iterdir() if p.is_file()] if record.is_dir() else [record, usage_path(record)]
    total = 0
    for file in files:
        try:
            total += file.stat().st_size
        except OSError:
            continue  # absent (no attempt log), or removed meanwhile: the work itself says so
    return total


def _executor() -> ProcessPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            # One worker, and a fresh one for each task ("spawn": nothing of the server's threads is copied).
            _pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), max_tasks_per_child=1
            )
        return _pool


def run(work: Callable[Concatenate[Path, P], R], record: Path, *args: P.args, **kwargs: P.kwargs) -> R:
    """``work(record, ...)`` here for a small record, else in the child process (waiting for its turn).

    ``work`` is a module-level function and its result picklable. Its exceptions come back as they were raised.
    """
    if weight(record) <= IN_PROCESS_BYTES:
        return work(record, *args, **kwargs)
    return _executor().submit(work, record, *args, **kwargs).result()

"""``moot eval --workers N``: an eval's (strategy, task, replicate) items dealt to N processes.

One interpreter tops out well below what a fast endpoint serves, so the items of a phase (every strategy but
sc:match, then the sc:match strategies once their K is fitted) are dealt round-robin to fresh processes, each
running ``--concurrency`` of them at once. Each worker loads what results.jsonl already holds (so a resumed eval
asks only for what is missing) and sends every line it would append to this process, the file's one writer,
which appends it (fsynced) and counts finished tasks for the progress bar. The lines and the report are those of
a one-process run; only the order of the lines differs.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue
from collections.abc import Callable, Sequence
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

from moot.errors import UserError
from moot.eval.runner import Runner
from moot.eval.store import Store
from moot.eval.strategies import Strategy

Build = Callable[[Store, Callable[[], None]], Runner]  # picklable: a worker's runner, around its store
Item = tuple[Strategy, str, int]  # strategy, task id, replicate
Missing = dict[tuple[str, str, int], str]
POLL_S = 1.0  # how often the writer looks whether a worker died without saying so


def _worker(build: Build, directory: Path, items: list[Item], messages: Queue[Any]) -> None:
    """One worker process: its share of the items, every line and every finished task sent to the writer."""
    store = Store(directory, sink=lambda record: messages.put(("record", record)))
    missing: Missing = {}
    error = None
    try:
        store.load()
        runner = build(store, lambda: messages.put(("done", None)))
        by_id = {task.id: task for task in runner.tasks}
        asyncio.run(_work(runner, [(strategy, by_id[task], replicate) for strategy, task, replicate in items]))
        missing = runner.missing
    except UserError as exc:  # an agent that cannot be reached: the eval stops, as with one process
        error = str(exc)
    except KeyboardInterrupt:  # the person stopped the eval; every recorded line is already sent
        pass
    finally:
        messages.put(("end", (os.getpid(), missing, error)))


async def _work(runner: Runner, items: Sequence[Any]) -> None:
    try:
        await runner.run_items(items)
    finally:
        await runner.aclose()


def deal(build: Build, store: Store, items: Sequence[Item], workers: int, on_task_done: Callable[[], None]) -> Missing:
    """Run ``items`` in ``workers`` processes, appending their lines to ``store``; the tasks left missing."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited threads or model handles
    messages: Queue[Any] = context.Queue()
    shares = [list(items[index::workers]) for index in range(workers)]
    processes = [
        context.Process(target=_worker, args=(build, store.directory, share, messages)) for share in shares if share
    ]
    for process in processes:
        process.start()
    missing: Missing = {}
    errors: list[str] = []
    ended: set[int | None] = set()
    try:
        while len(ended) < len(processes):
            try:
                kind, value = messages.get(timeout=POLL_S)
            except queue.Empty:
                _check_alive(processes, ended)
                continue
            if kind == "record":
                store.append(value)
            elif kind == "done":
                on_task_done()
            else:
                pid, found, error = value
                ended.add(pid)
                missing.update(found)
                errors.extend([error] if error else [])
    except BaseException:  # stopped or a worker died: the others would wait for a reader that is gone
        for process in processes:
            process.terminate()
        raise
    finally:
        for process in processes:
            process.join()
    if errors:
        raise UserError(errors[0])
    return missing


def _check_alive(processes: Sequence[Any], ended: set[int | None]) -> None:
    """Refuse to wait for a worker that died without ending (killed, out of memory): its lines stay recorded."""
    for process in processes:
        if process.pid not in ended and process.exitcode is not None:
            raise UserError(
                f"an eval worker process stopped (exit code {process.exitcode}); run the same command again to "
                "finish what it left."
            )

"""``moot run --batch FILE.jsonl --concurrency N [--workers W]``: many debates at once, one JSON outcome per line.

Each line of the file is one debate::

    {"protocol": "critique", "topic": "Adopt a monorepo", "template": "planning", "max_rounds": 2,
     "agents": "local", "agent": {"critic": "script:critic.jsonl"}, "root": "runs/1"}

``protocol`` is required; the other keys are the options of ``moot run <protocol>``. Lines that
cannot start (bad JSON, unknown protocol, bad options) are reported as errors and do not stop the
others. The exit code is 0 when every debate reached consensus, 1 otherwise, 2 for an unreadable file.
With ``--workers W`` the debates are dealt to W processes (each running ``--concurrency`` at once), so a batch
uses every core; each process loads its own local model, if a debate uses one. With ``--ledger postgresql://…``
every host that runs the same file shares one batch (:mod:`moot.cli.shared_batch`): each process takes the next
line from the database instead of a share dealt here.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import multiprocessing
from collections.abc import Callable, Iterator
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as BatchBar

from moot.cli.shared_batch import LEASE_S, SharedBatch, open_shared, progress, run_shared, summary
from moot.engine.loop import now_minutes
from moot.engine.runner import prepare
from moot.engine.session import run_driver
from moot.engine.specs import caller_keys
from moot.errors import UserError


async def _run_line(number: int, spec: dict[str, Any], *, gate: asyncio.Semaphore, started: str) -> dict[str, Any]:
    async with gate:
        try:
            root = Path(caller_keys(spec).get("root", "."))
            prepared = await prepare(spec, root, started)  # a start that fails leaves nothing
            result = await run_driver(prepared.driver, prepared.agents, prepared.limits, specs=prepared.specs)
        except UserError as exc:
            return {"line": number, "error": str(exc)}
        return {"line": number, **result.to_json()}


async def _run_all(
    specs: list[tuple[int, dict[str, Any]]], concurrency: int, started: str, emit: Callable[[dict[str, Any]], None]
) -> None:
    """Run ``specs``, at most ``concurrency`` at once, handing each row to ``emit`` as its debate ends."""
    gate = asyncio.Semaphore(concurrency)
    tasks = [asyncio.create_task(_run_line(number, spec, gate=gate, started=started)) for number, spec in specs]
    for task in asyncio.as_completed(tasks):
        emit(await task)


def _worker(source: Any, concurrency: int, started: str, rows: Queue[Any]) -> None:
    """One worker process of ``--workers``: its share of the batch (or the shared batch), each row sent back as it
    ends."""
    try:
        asyncio.run(_run_source(source, concurrency, started, rows.put))
    except KeyboardInterrupt:  # the person stopped the batch; every accepted turn is already on disk
        pass
    finally:
        rows.put(None)


async def _run_source(
    source: list[tuple[int, dict[str, Any]]] | SharedBatch, concurrency: int, started: str, emit: Callable[[Any], None]
) -> None:
    if isinstance(source, SharedBatch):
        run_line = functools.partial(_run_line, gate=asyncio.Semaphore(concurrency), started=started)
        await run_shared(source, concurrency, run_line, emit)
    else:
        await _run_all(source, concurrency, started, emit)


def _rows(
    specs: list[tuple[int, dict[str, Any]]], shared: SharedBatch | None, concurrency: int, started: str, workers: int
) -> Iterator[Any]:
    """Every debate's row as it ends, the debates dealt round-robin to ``workers`` processes (or taken by each from
    the shared batch), each running ``concurrency`` of them at once: one interpreter tops out at a few hundred turns
    a second."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited threads or model handles
    rows: Queue[Any] = context.Queue()
    shares: list[Any] = (
        [shared] * workers if shared is not None else [specs[index::workers] for index in range(workers)]
    )
    processes = [context.Process(target=_worker, args=(share, concurrency, started, rows)) for share in shares if share]
    for process in processes:
        process.start()
    try:
        running = len(processes)
        while running:
            row = rows.get()
            if row is None:
                running -= 1
            else:
                yield row
    finally:
        for process in processes:
            process.join()


def read_batch(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
    """The debates of a batch file, and one error row per line that is not a JSON object."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(
            f"cannot read the batch file {path}: {getattr(exc, 'strerror', None) or exc}; check the path."
        ) from exc
    specs: list[tuple[int, dict[str, Any]]] = []
    errors: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            errors.append({"line": number, "error": 'not a JSON object; write one debate per line as {"protocol": …}.'})
            continue
        specs.append((number, value))
    return specs, errors


def run_batch(
    path: Path, concurrency: int, workers: int = 1, ledger: str | None = None, lease_s: float | None = None
) -> int:
    specs, errors = read_batch(path)
    shared = None
    if ledger is not None:
        batch_id = hashlib.sha256(path.read_bytes()).hexdigest()
        shared = open_shared(ledger, batch_id, path.name, dict(specs), lease_s or LEASE_S)
    for row in errors:
        typer.echo(json.dumps(row, ensure_ascii=False))
    results: list[dict[str, Any]] = []
    # A bar on a terminal's stderr; stdout keeps one JSON line per debate, printed as each ends.
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with BatchBar(*columns, console=console, disable=not console.is_terminal) as bar:
        done = bar.add_task("debates", total=None if shared else len(specs))  # shared: hosts take what they can

        def shown(row: dict[str, Any]) -> None:
            typer.echo(json.dumps(row, ensure_ascii=False))
            results.append(row)
            bar.advance(done)

        if workers == 1 and specs:
            asyncio.run(_run_source(shared or specs, concurrency, now_minutes(), shown))
        elif specs:
            for row in _rows(specs, shared, concurrency, now_minutes(), workers):
                shown(row)
    if shared is not None:
        typer.echo(summary([row["line"] for row in results], progress(shared)), err=True)
    everyone_agreed = not errors and all(row.get("consensus") for row in results)
    return 0 if everyone_agreed else 1

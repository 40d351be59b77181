"""``moot run --batch FILE.jsonl --concurrency N``: many debates at once, one JSON outcome per line.

Each line of the file is one debate::

    {"protocol": "critique", "topic": "Adopt a monorepo", "template": "planning", "max_rounds": 2,
     "agents": "local", "agent": {"critic": "script:critic.jsonl"}, "root": "runs/1"}

``protocol`` is required; the other keys are the options of ``moot run <protocol>``. Lines that
cannot start (bad JSON, unknown protocol, bad options) are reported as errors and do not stop the
others. The exit code is 0 when every debate reached consensus, 1 otherwise, 2 for an unreadable file.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as BatchBar

from moot.engine.runner import prepare
from moot.engine.session import run_driver
from moot.engine.specs import caller_keys
from moot.errors import UserError


async def _run_line(number: int, spec: dict[str, Any], gate: asyncio.Semaphore, started: str) -> dict[str, Any]:
    async with gate:
        try:
            root = Path(caller_keys(spec).get("root", "."))
            prepared = await prepare(spec, root, started)  # a start that fails leaves nothing
            result = await run_driver(prepared.driver, prepared.agents, prepared.limits, specs=prepared.specs)
        except UserError as exc:
            return {"line": number, "error": str(exc)}
        return {"line": number, **result.to_json()}


async def _run_all(specs: list[tuple[int, dict[str, Any]]], concurrency: int, started: str) -> list[dict[str, Any]]:
    gate = asyncio.Semaphore(concurrency)
    tasks = [asyncio.create_task(_run_line(number, spec, gate, started)) for number, spec in specs]
    results = []
    # A bar on a terminal's stderr; stdout keeps one JSON line per debate.
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with BatchBar(*columns, console=console, disable=not console.is_terminal) as bar:
        done = bar.add_task("debates", total=len(tasks))
        for task in asyncio.as_completed(tasks):
            row = await task
            typer.echo(json.dumps(row, ensure_ascii=False))
            results.append(row)
            bar.advance(done)
    return results


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


def run_batch(path: Path, concurrency: int) -> int:
    from moot.cli.run import now_minutes

    specs, errors = read_batch(path)
    for row in errors:
        typer.echo(json.dumps(row, ensure_ascii=False))
    results = asyncio.run(_run_all(specs, concurrency, now_minutes())) if specs else []
    everyone_agreed = not errors and all(row.get("consensus") for row in results)
    return 0 if everyone_agreed else 1

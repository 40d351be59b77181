"""``moot ls [ROOT]``: the records of a work root, one line each, with their state and what they spent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from moot import registry
from moot.errors import UserError
from moot.records import find_records, record_row

__all__ = ["find_records", "ls_command", "record_row"]


def ls_command(
    root: Annotated[Path, typer.Argument(help="The work root (default: the current directory).")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
) -> None:
    """List the records of a work root: protocol, status, outcome, turns and tokens."""
    if not root.is_dir():
        raise UserError(f"{root} is not a directory; give the work root that holds .dialogues/, debates/ and so on.")
    skipped: list[str] = []
    rows = [record_row(path) for path in find_records(root, skipped)]
    for note in skipped:
        typer.echo(f"moot: skipped: {note}", err=True)
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        typer.echo(f"no records under {root} (looked in {', '.join(sorted(registry.folders()))}).")
        return
    lines = []
    for row in rows:
        outcome = row["outcome"] or (f"halted: {row['run_halted']}" if row["run_halted"] else "—")
        if row["verdict"] != "valid":
            outcome = f"{outcome} ({row['verdict']})"
        lines.append(
            [
                row["path"],
                row["protocol"] or "?",
                row["status"] or "?",
                outcome,
                str(row["turns"] or 0),
                str(row["tokens"]),
            ]
        )
    console = Console(highlight=False)
    if not console.is_terminal:  # piped: whole tab-separated lines, never cut to a guessed width
        for line in lines:
            typer.echo("\t".join(line))
        return
    table = Table(box=None, pad_edge=False)
    for column in ("record", "protocol", "status", "outcome", "turns", "tokens"):
        table.add_column(column, justify="right" if column in {"turns", "tokens"} else "left", overflow="fold")
    for line in lines:
        table.add_row(*line)
    console.print(table)

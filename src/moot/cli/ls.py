"""``moot ls [ROOT]``: the records of a work root, one line each, with their state and what they spent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from moot import registry
from moot.errors import UserError
from moot.records import find_records, record_row

__all__ = ["find_records", "ls_command", "record_row"]

COLUMNS = ("record", "protocol", "topic", "state", "turns", "tokens")
TOPIC_CHARS = 60  # a topic is a line of the table, not the question in full (moot show has it)


def ls_command(
    root: Annotated[Path, typer.Argument(help="The work root (default: the current directory).")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
) -> None:
    """List the records of a work root: protocol, topic, state (its outcome once it has one), turns and tokens."""
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
    lines = [_line(row) for row in rows]
    console = Console(highlight=False)
    if not console.is_terminal:  # piped: a header, then whole tab-separated lines, never cut to a guessed width
        for line in [list(COLUMNS), *lines]:
            typer.echo("\t".join(line))
        return
    table = Table(box=None, pad_edge=False)
    for column in COLUMNS:
        table.add_column(column, justify="right" if column in {"turns", "tokens"} else "left", overflow="fold")
    for line in lines:
        table.add_row(*line)
    console.print(table)


def _line(row: dict[str, Any]) -> list[str]:
    """One record's cells. ``state`` is the outcome once there is one, else where the record stands (whose turn,
    or a halt); a record that breaks a rule says so."""
    state = row["outcome"] or (f"halted: {row['run_halted']}" if row["run_halted"] else None) or row["status"] or "?"
    if row["verdict"] != "valid":
        state = f"{state} ({row['verdict']})"
    topic = " ".join(str(row["topic"] or "").split())
    topic = topic if len(topic) <= TOPIC_CHARS else topic[: TOPIC_CHARS - 1] + "…"
    return [row["path"], row["protocol"] or "?", topic, state, str(row["turns"] or 0), str(row["tokens"])]

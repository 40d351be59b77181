"""``moot ls [ROOT]``: the records of a work root, one line each, with their state and what they spent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from moot import registry
from moot.artifacts import check_path
from moot.cli.log import read_attempts
from moot.errors import UserError


def find_records(root: Path) -> list[Path]:
    """Every record in ``root``'s protocol folders (files, or directories for a protocol with a marker)."""
    found: list[Path] = []
    for plugin in registry.protocols().values():
        directory = root / plugin.folder
        if not directory.is_dir():
            continue
        for path in sorted(directory.iterdir()):
            if path.name.startswith("."):
                continue
            folder_record = plugin.marker is not None and path.is_dir() and (path / plugin.marker).exists()
            file_record = plugin.title is not None and path.is_file() and path.suffix == ".md"
            if folder_record or file_record:
                found.append(path)
    return found


def record_row(path: Path) -> dict[str, Any]:
    report = check_path(path)
    summary = report.summary
    outcome = summary.outcome if summary is not None else None
    halted = summary.detail.get("run_halted") if summary is not None else None
    tokens = sum(int(r.get("prompt_tokens") or 0) + int(r.get("completion_tokens") or 0) for r in read_attempts(path))
    return {
        "path": str(path),
        "protocol": report.protocol,
        "verdict": report.verdict,
        "status": summary.status if summary is not None else None,
        "outcome": outcome.name if outcome is not None else None,
        "run_halted": halted.get("cause") if isinstance(halted, dict) else None,
        "turns": summary.turns if summary is not None else None,
        "tokens": tokens,
    }


def ls_command(
    root: Annotated[Path, typer.Argument(help="The work root (default: the current directory).")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
) -> None:
    """List the records of a work root: protocol, status, outcome, turns and tokens."""
    if not root.is_dir():
        raise UserError(f"{root} is not a directory; give the work root that holds .dialogues/, debates/ and so on.")
    rows = [record_row(path) for path in find_records(root)]
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

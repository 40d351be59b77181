"""``moot agents``: the participant backends moot knows and whether each is ready here."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table


def agents_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List agent backends (spec forms, ready or not, and why)."""
    from moot.agents import list_backends

    backends = list_backends()
    if as_json:
        rows = [
            {
                "name": b.name,
                "forms": b.forms,
                "ready": b.ready,
                "detail": b.detail,
                "plugin": b.plugin,
                "install": b.install,
            }
            for b in backends
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("backend", "spec", "ready", "detail")
    for backend in backends:
        table.add_row(backend.name, backend.forms, "yes" if backend.ready else "no", backend.detail)
    Console().print(table)
    # A table cell cuts a word longer than its column (a package name at 80 columns); a command belongs on a
    # line of its own, whole, to be copied.
    installs = [(backend.name, backend.install) for backend in backends if backend.install]
    if installs:
        typer.echo("\nTo install what is missing:")
        for name, command in installs:
            typer.echo(f"  {command}    # {name}")

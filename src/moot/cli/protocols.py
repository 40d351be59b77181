"""``moot protocols [--check]``: the installed protocols — name, version, package, capabilities — and, with
``--check``, whether every part each one names can be imported.

Listing reads only the plugin objects (plain data); ``--check`` imports every reference, so a plugin with a
typo in a module path is named here in one sentence while the other protocols keep working.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from moot import registry
from moot.errors import PluginError


def _broken(name: str) -> list[str]:
    """One sentence per reference of the protocol ``name`` that cannot be loaded."""
    found = []
    for ref in registry.get(name).references():
        try:
            ref.load()
        except PluginError as exc:
            found.append(registry.broken_part(name, exc))
    return found


def _rows(check: bool) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    problems = list(registry.problems())
    for name, plugin in registry.protocols().items():
        row: dict[str, Any] = {
            "name": name,
            "version": registry.version(name),
            "distribution": registry.distribution(name),
            "summary": plugin.summary,
            "capabilities": plugin.capability_names(),
        }
        if check:
            broken = _broken(name)
            row["loads"] = not broken
            problems += broken
        rows.append(row)
    return rows, problems


def protocols_command(
    check: Annotated[
        bool, typer.Option("--check", help="Import every part of every protocol; exit 1 naming any that fails.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List the installed protocols: name, version, the package that provides it, what it offers."""
    rows, problems = _rows(check)
    if as_json:
        typer.echo(json.dumps({"protocols": rows, "problems": problems}, indent=2, ensure_ascii=False))
    else:
        for row in rows:
            capabilities = ", ".join(row["capabilities"]) or "-"
            typer.echo(f"{row['name']}\t{row['distribution']} {row['version']}\t{capabilities}\t{row['summary']}")
        for problem in problems:
            typer.echo(f"moot: {problem}", err=True)
    if problems and (check or not rows):
        raise typer.Exit(1)

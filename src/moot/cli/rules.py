"""``moot rules [PROTOCOL]``: every rule moot enforces, with its id, severity and what it asks."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from moot import registry
from moot.core.machine import RuleBook
from moot.errors import PluginError


def rule_books(protocol: str | None) -> list[tuple[str, RuleBook]]:
    """Each protocol's rule books (all protocols, or the one named), then the rules every record shares."""
    plugins = [registry.get(protocol)] if protocol is not None else list(registry.protocols().values())
    books: list[tuple[str, RuleBook]] = []
    for plugin in plugins:
        for ref in plugin.rules:
            try:
                books.append((plugin.name, ref.load()))
            except PluginError as exc:  # one broken plugin leaves the others' rules listed
                typer.echo(f"moot: {registry.broken_part(plugin.name, exc)}", err=True)
    from moot.core.files import FILE_RULES
    from moot.core.grounding import RULES as GROUNDING_RULES
    from moot.engine.driver import ENGINE_RULES
    from moot.tools.errors import TOOL_RULES

    books.extend([("any record", FILE_RULES), ("moot run", ENGINE_RULES), ("agent tools", TOOL_RULES)])
    books.append(("cited evidence", GROUNDING_RULES))
    return books


def rules_command(
    protocol: Annotated[str | None, typer.Argument(help=f"{registry.names_sentence()} (default: all).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rules as JSON.")] = False,
) -> None:
    """List the rules moot enforces: the ids that `moot check` and refused turns report."""
    rows = [
        {"protocol": name, "id": rule.id, "severity": rule.severity.value, "summary": rule.summary}
        for name, book in rule_books(protocol)
        for rule in book
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    console = Console()
    if not console.is_terminal:  # piped: one whole line per rule, never cut to a guessed width
        for row in rows:
            typer.echo(f"{row['protocol']}\t{row['id']}\t{row['severity']}\t{row['summary']}")
        return
    table = Table("protocol", "rule", "severity", "what it asks")
    table.columns[1].no_wrap = True
    for row in rows:
        table.add_row(row["protocol"], row["id"], row["severity"], row["summary"])
    console.print(table)

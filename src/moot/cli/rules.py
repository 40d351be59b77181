"""``moot rules [PROTOCOL]``: every rule moot enforces, with its id, severity and what it asks."""

from __future__ import annotations

import importlib
import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from moot.errors import UserError
from moot.protocols import PROTOCOL_NAMES, protocol_module
from moot.protocols.base import RuleBook

# Rule books that live beside a protocol's own (its record format's), and the shared file rules.
EXTRA_BOOKS = {"duel": ("moot.artifacts.duel", "FORMAT_RULES")}


def rule_books(protocol: str | None) -> list[tuple[str, RuleBook]]:
    if protocol is not None and protocol not in PROTOCOL_NAMES:
        raise UserError(f"protocol {protocol!r} is unknown; use one of {', '.join(PROTOCOL_NAMES)}.")
    books: list[tuple[str, RuleBook]] = []
    for name in [protocol] if protocol else list(PROTOCOL_NAMES):
        books.append((name, protocol_module(name).RULES))
        if name in EXTRA_BOOKS:
            module, attribute = EXTRA_BOOKS[name]
            books.append((name, getattr(importlib.import_module(module), attribute)))
    from moot.artifacts.base import FILE_RULES
    from moot.engine.driver import ENGINE_RULES
    from moot.protocols.grounding import RULES as GROUNDING_RULES
    from moot.tools.errors import TOOL_RULES

    books.extend([("any record", FILE_RULES), ("moot run", ENGINE_RULES), ("agent tools", TOOL_RULES)])
    books.append(("cited evidence", GROUNDING_RULES))
    return books


def rules_command(
    protocol: Annotated[str | None, typer.Argument(help="critique, duel, agora or roundtable (default: all).")] = None,
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
    table = Table("protocol", "rule", "severity", "what it asks")
    for row in rows:
        table.add_row(row["protocol"], row["id"], row["severity"], row["summary"])
    Console().print(table)

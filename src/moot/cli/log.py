"""``moot log RECORD``: every attempt of every turn a run asked for, accepted or not, with why.

The attempt log is the JSONL file beside the record (:func:`moot.engine.loop.usage_path`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from moot.agents.pricing import attempt_tokens, logged_cache_text
from moot.detect import detect
from moot.errors import UserError
from moot.records import read_attempts


def attempt_text(row: dict[str, Any]) -> str:
    """One attempt as a person reads it: a header line, then the reason or the reply."""
    verdict = "accepted" if row.get("accepted") else "rejected"
    who = f"{row.get('role', '?')} ({row.get('agent') or row.get('model') or 'unknown agent'})"
    tokens = attempt_tokens(row)
    lines = [
        f"turn {row.get('turn', '?')} · attempt {row.get('attempt', '?')} · {who} · {verdict} · "
        f"{tokens} tokens · {float(row.get('latency_s') or 0):.1f} s"
    ]
    cache = logged_cache_text([row])
    if cache:
        lines.append(f"  cache: {cache}")
    if row.get("error"):
        lines.append(f"  error: {row['error']}")
    for violation in row.get("violations") or []:
        lines.append(f"  {violation.get('rule')}: {violation.get('message')}")
    if "reply" in row:
        reply = str(row["reply"])
        lines.extend("  | " + line for line in (reply.splitlines() or [""]))
    return "\n".join(lines)


def log_command(
    path: Annotated[Path, typer.Argument(help="A record file, or a roundtable meeting directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the attempts as one JSON array.")] = False,
) -> None:
    """Show every attempt a run made: raw reply, violations or error, tokens (and those from the provider's cache),
    latency, model and agent."""
    protocol, target, report = detect(path)
    if protocol is None:
        problem = report.violations[0].message if report is not None and report.violations else "unknown format"
        raise UserError(f"cannot read the log of {path}: {problem}")
    rows = read_attempts(target)
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        typer.echo(f"{target}: no attempts logged (moot run writes them; records written with the tools have none).")
        return
    typer.echo("\n\n".join(attempt_text(row) for row in rows))

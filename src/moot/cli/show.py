"""``moot show PATH``: any record, rendered readably in the terminal, with its decision first and its state from
``check``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.rule import Rule

from moot import registry
from moot.agents.family import one_family_warning
from moot.agents.pricing import attempt_tokens, logged_cache_text, logged_cost, usd_text
from moot.cli.check import report_json, report_text
from moot.conformity import record_analyses
from moot.core.files import ExitCode, read_text
from moot.core.run_state import stored_agents
from moot.decision import decision_lines, record_decision
from moot.detect import check_path, detect, documents
from moot.engine.loop import usage_path
from moot.errors import UserError
from moot.followup import followups
from moot.metrics import describe
from moot.paths import relative_text
from moot.records import record_root


def usage_line(path: Path) -> str | None:
    """What the runs of a record spent, from its usage log: attempts, tokens and price (unknown if any is), and
    what the provider's cache read and saved."""
    text, _ = read_text(path)
    rows = []
    for line in (text or "").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # a line cut by a crash
    if not rows:
        return None
    tokens = sum(attempt_tokens(row) for row in rows)
    line = f"usage: {len(rows)} attempt(s), {tokens} tokens, cost {usd_text(logged_cost(rows))}"
    cache = logged_cache_text(rows)
    return f"{line}\ncache: {cache}" if cache else line


def panel_warning(protocol: str, target: Path) -> str | None:
    """The one-family warning for a record's panel: the agent specs its runs used, and those the record names."""
    analysis = registry.get(protocol).analysis
    hook = analysis.load().specs if analysis is not None else None
    named = hook(target) if hook is not None else None
    return one_family_warning({**stored_agents(target), **(named or {})})


_FENCE = re.compile(r"^\s*(```|~~~)")


def lines_kept(text: str) -> str:
    """``text`` with each line break kept when rendered: Markdown joins a paragraph's lines, but a record's lines
    (a header's fields, a turn's labelled fields) are meant one per line, as in the file."""
    lines = text.split("\n")
    fenced = False
    for index, line in enumerate(lines[:-1]):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.strip() and lines[index + 1].strip() and not line.lstrip().startswith("|"):
            lines[index] = line + "  "  # a hard line break
    return "\n".join(lines)


def show_command(
    path: Annotated[Path, typer.Argument(help="A record file, or a roundtable meeting directory.")],
    plain: Annotated[bool, typer.Option("--plain", help="Print the raw text instead of rendered Markdown.")] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print one JSON object: the check report, the decision, the documents' text and conformity."
        ),
    ] = False,
) -> None:
    """Show a record's decision, the record readably, then its state (whose turn, round, outcome, violations) and
    conformity."""
    protocol, target, report = detect(path)
    if report is not None and report.exit_code is ExitCode.UNREADABLE:
        raise UserError(report.violations[0].message if report.violations else f"cannot show {path}.")
    assert protocol is not None
    # Paths under the work root are shown relative to it, a duel's absolute source path too: what is shown is
    # often pasted elsewhere, and the reader's root is not this machine's.
    root = record_root(target)
    shown_documents = [(title, relative_text(text, root)) for title, text in documents(protocol, target)]
    analyses = record_analyses(protocol, target)
    decision = record_decision(protocol, target)
    later = followups(target)
    warning = panel_warning(protocol, target)
    if as_json:
        shown = {
            **report_json(check_path(target)),
            "decision": decision.to_json() if decision is not None else None,
            "followups": later,
            "panel_warning": warning,
            "documents": [{"name": title, "text": text} for title, text in shown_documents],
            "conformity": {k: a.to_json() for k, a in analyses.items()},
        }
        typer.echo(json.dumps(shown, ensure_ascii=False, indent=2))
        return
    console = Console()
    if decision is not None:
        console.print(Rule("decision"))
        console.print(relative_text("\n".join(decision_lines(decision)), root), markup=False, highlight=False)
    for title, text in shown_documents:
        console.print(Rule(title))
        if plain:
            console.print(text, markup=False, highlight=False)
        else:
            console.print(Markdown(lines_kept(text)))
    console.print(Rule("state"))
    console.print(relative_text(report_text(check_path(target)), root), markup=False, highlight=False)
    if warning is not None:
        console.print(f"panel: {warning}", markup=False, highlight=False, soft_wrap=True)
    usage = usage_line(usage_path(target))
    if usage:
        console.print(usage, markup=False, highlight=False)
    for row in later:
        line = f"follow-up: {row['record']} — {row.get('question', '')}"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    for what, analysis in analyses.items():
        console.print(Rule(f"conformity: {what}"))
        console.print("\n".join(describe(analysis)), markup=False, highlight=False)

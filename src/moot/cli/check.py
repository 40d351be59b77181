"""``moot check PATH``: replay a record through its protocol and report every violation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from moot.core.files import CheckReport
from moot.core.run_state import halt_text, resume_text, with_record
from moot.detect import check_path


def report_json(report: CheckReport) -> dict[str, object]:
    summary = report.summary
    return {
        "path": report.path,
        "protocol": report.protocol,
        "verdict": report.verdict,
        "exit_code": int(report.exit_code),
        "repairable": report.repairable,
        "errors": len(report.errors),
        "warnings": len(report.warnings),
        "violations": [v.model_dump(mode="json") for v in report.violations],
        "state": None
        if summary is None
        else {
            "status": summary.status,
            "next_speaker": summary.next_speaker,
            "round": summary.round,
            "turns": summary.turns,
            "outcome": None if summary.outcome is None else summary.outcome.model_dump(mode="json"),
            "detail": summary.detail,
        },
    }


def report_text(report: CheckReport) -> str:
    counts = f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)"
    lines = [f"{report.path}: {report.protocol or 'unknown format'} — {report.verdict} ({counts})"]
    lines.extend(f"  {violation}" for violation in report.violations)
    summary = report.summary
    if summary is not None:
        state = [f"status {summary.status}", f"{summary.turns} turn(s)"]
        if summary.round is not None:
            state.append(f"round {summary.round}")
        if summary.next_speaker is not None:
            state.append(f"next: {summary.next_speaker}")
        if summary.outcome is not None:
            state.append(f"reason: {with_record(summary.outcome.reason, report.path)}")
            if summary.outcome.degraded:
                state.append(f"degraded: {summary.outcome.degraded}")
        lines.append("  state: " + " · ".join(state))
        grounding = summary.detail.get("grounding")
        if grounding:
            shares = [
                f"{role} {g['verified']}/{g['cited']} verified ({g['share']:.0%})" for role, g in grounding.items()
            ]
            lines.append("  grounding: " + ", ".join(shares))
        halted = summary.detail.get("run_halted")
        if isinstance(halted, dict):
            lines.append(f"  run: {halt_text(halted)}; `{resume_text(report.path)}` continues it.")
    if report.repairable:
        lines.append(
            "  repairable: a crash cut a write short (a turn, its state or its chain row is not all on disk); "
            f"`{resume_text(report.path)}` finishes it (moot check never writes)."
        )
    return "\n".join(lines)


def check_command(
    path: Annotated[Path, typer.Argument(help="A record file, or a roundtable meeting directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON report.")] = False,
) -> None:
    """Check a record: exit 0 valid (warnings allowed), 1 rule violations, 2 unreadable or not a moot record."""
    report = check_path(path)
    if as_json:
        typer.echo(json.dumps(report_json(report), ensure_ascii=False, indent=2))
    else:
        typer.echo(report_text(report))
    raise typer.Exit(int(report.exit_code))

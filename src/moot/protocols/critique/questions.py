"""The Critique Loop orchestrator's questions to the person at the terminal (interactive runs only):
add .dialogues/ to .gitignore, continue past the round limit, answer a STUCK escalation.
"""

from __future__ import annotations

from pathlib import Path

import typer

from moot.engine.driver import Driver
from moot.engine.loop import RunResult
from moot.protocols.critique.driver import CritiqueDriver
from moot.protocols.critique.machine import EXTENSION_ROUNDS

IGNORE_LINE = ".dialogues/"


def offer_gitignore(root: Path) -> None:
    """The seed's set-up question: keep dialogues out of version control?"""
    gitignore = root / ".gitignore"
    if not (root / ".git").exists():
        return
    existing = gitignore.read_text(encoding="utf-8") if gitignore.is_file() else ""
    if IGNORE_LINE in existing.splitlines():
        return
    if typer.confirm(f"Add {IGNORE_LINE} to {gitignore}?", default=True, err=True):
        separator = "" if not existing or existing.endswith("\n") else "\n"
        gitignore.write_text(f"{existing}{separator}{IGNORE_LINE}\n", encoding="utf-8")


def after_critique(driver: Driver, result: RunResult) -> bool:
    """Ask the person what the seed's orchestrator asks; True to run the dialogue further."""
    assert isinstance(driver, CritiqueDriver)
    outcome = result.outcome
    if outcome is None or outcome.name not in ("MAX_ROUNDS", "STUCK"):
        return False
    last = driver.state.last
    if last is not None:  # the person decides having read the latest turn, not before
        typer.echo(f"\n── the latest turn: {last.role}, round {last.round} ──\n{last.message}\n", err=True)
    if outcome.name == "MAX_ROUNDS":
        if typer.confirm(f"The round limit is reached. Continue for another {EXTENSION_ROUNDS} rounds?", err=True):
            driver.extend(EXTENSION_ROUNDS)
            return True
        return False
    if outcome.name == "STUCK":
        note = typer.prompt(
            "The participants are stuck (see the last turn). Your answer for them (empty to stop)",
            default="",
            show_default=False,
            err=True,
        )
        if note.strip():
            driver.answer_stuck(note.strip())
            return True
    return False

"""``moot continue RECORD --question …``: a follow-up, a new deliberation of the same protocol and panel that
starts from a finished one's answer (:mod:`moot.followup`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from moot.cli.run import RunFlags, _work_root, detected, execute, run_options, start_root
from moot.engine.loop import now_minutes
from moot.engine.session import parse_agent_options
from moot.engine.specs import build_driver
from moot.errors import RecordExists, UserError
from moot.followup import follow_up, note_followup


@run_options(without=("root", "force"))  # the follow-up goes beside the record it follows
def continue_command(
    path: Annotated[Path, typer.Argument(help="The record of a finished deliberation (council, critique, agora).")],
    question: Annotated[str, typer.Option("--question", help="The follow-up question.")],
    *,
    flags: RunFlags,
) -> None:
    """Ask a follow-up: a new deliberation of the same protocol and panel that starts from this one's answer."""
    protocol, target = detected(path, "continue")
    root = _work_root(target)
    given = parse_agent_options(flags.agent or [])
    followed = follow_up(root, protocol, target, question, lambda role: given.get(role) or flags.agents)
    started = now_minutes()
    chosen = {**followed.agents, **followed.panel}
    try:
        driver = build_driver(
            followed.spec, start_root(root, flags.dry_run), started, lambda role: chosen.get(role, "")
        )
    except RecordExists as exists:
        raise UserError(f"{exists} Ask the follow-up in other words, or move that record away.") from None
    if not flags.dry_run:
        later = driver.record_path.resolve().relative_to(root.resolve()).as_posix()
        note_followup(target, later, question.strip(), started)
        typer.echo(f"moot: following up {followed.follows} in {later}", err=True)
    # Every role of the earlier run keeps its agent unless the command line says otherwise.
    kept = [f"{role}={spec}" for role, spec in chosen.items() if role in driver.roles()]
    execute(driver, dataclasses.replace(flags, root=root, agent=[*kept, *(flags.agent or [])]))

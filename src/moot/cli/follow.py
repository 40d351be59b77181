"""``moot continue RECORD --question …``: a follow-up, a new deliberation of the same protocol and panel that
starts from a finished one's answer (:mod:`moot.followup`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from moot import registry
from moot.cli.run import RunFlags, _work_root, detected, execute, now_minutes, run_options, start_root
from moot.config import load_settings
from moot.core.run_state import stored_agents
from moot.detect import check_path
from moot.engine.session import parse_agent_options
from moot.engine.specs import build_driver
from moot.errors import RecordExists, UserError
from moot.followup import follow_up_question, note_followup
from moot.limits import require_subject
from moot.plugin import Analysis
from moot.records import record_topic


def _analysis(protocol: str, path: Path) -> Analysis:
    plugin = registry.get(protocol)
    analysis = plugin.analysis.load() if plugin.analysis is not None else None
    if analysis is None or analysis.pose is None or analysis.answer is None or analysis.panel is None:
        raise UserError(
            f"{path} is a {protocol} record, which takes no follow-up question (its protocol cannot pose one); "
            f"start a new {protocol} debate instead."
        )
    return analysis


@run_options(without=("root", "force"))  # the follow-up goes beside the record it follows
def continue_command(
    path: Annotated[Path, typer.Argument(help="The record of a finished deliberation (council, critique, agora).")],
    question: Annotated[str, typer.Option("--question", help="The follow-up question.")],
    *,
    flags: RunFlags,
) -> None:
    """Ask a follow-up: a new deliberation of the same protocol and panel that starts from this one's answer."""
    protocol, target = detected(path, "continue")
    analysis = _analysis(protocol, target)
    require_subject("question", question)
    if not question.strip():
        raise UserError("the follow-up question is empty; pass --question with what to ask next.")
    assert analysis.pose is not None and analysis.answer is not None and analysis.panel is not None
    answer = analysis.answer(target)
    if not answer:
        summary = check_path(target).summary
        outcome = summary.outcome if summary is not None else None
        ended = f"it ended {outcome.name}" if outcome is not None else "it has not ended"
        raise UserError(f"{target} has no answer to follow up ({ended}); resume it or start a new debate instead.")
    root = _work_root(target)
    settings = load_settings(root)
    given = parse_agent_options(flags.agent or [])
    earlier = stored_agents(target)

    def spec_of(name: str) -> str:
        return given.get(name) or flags.agents or earlier.get(name) or settings.agent_for(name, {}, None)

    panel = [(name, spec_of(name)) for name in analysis.panel(target) or []]
    follows = target.resolve().relative_to(root.resolve()).as_posix()
    asked = follow_up_question(question, follows, record_topic(protocol, target) or "", answer)
    spec = {"protocol": protocol, **analysis.pose(asked, panel), "panel": dict(panel)}
    started = now_minutes()
    try:
        driver = build_driver(
            spec, start_root(root, flags.dry_run), started, lambda role: dict(panel).get(role) or spec_of(role)
        )
    except RecordExists as exists:
        raise UserError(f"{exists} Ask the follow-up in other words, or move that record away.") from None
    if not flags.dry_run:
        later = driver.record_path.resolve().relative_to(root.resolve()).as_posix()
        note_followup(target, later, question.strip(), started)
        typer.echo(f"moot: following up {follows} in {later}", err=True)
    # Every role the earlier run named keeps its agent unless the command line says otherwise.
    kept = [f"{role}={spec_of(role)}" for role in driver.roles() if role in earlier or role in dict(panel)]
    execute(driver, dataclasses.replace(flags, root=root, agent=[*kept, *(flags.agent or [])]))

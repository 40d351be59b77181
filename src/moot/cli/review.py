"""``moot review [RANGE] [--council]``: a review deliberation over a git diff whose verdict is the exit code.

Exit codes: 0 approve; 1 changes requested (a degraded council's approval too); 2 an error (bad range, no change, a participant that
gave no valid turn). The comment (Markdown) and the JSON are also written beside the dialogue record,
as ``.NAME.review.md`` and ``.NAME.review.json``. The records go under ``moot/`` in the repository's git
directory (moot.review.records_root), or under ``--records``: a review leaves the reviewed tree as it was.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from moot.cli.progress import Progress
from moot.cli.run import (
    AgentOpt,
    AgentsOpt,
    JsonOpt,
    MaxTokensOpt,
    RepairsOpt,
    TurnTimeoutOpt,
    now_minutes,
)
from moot.config import load_settings
from moot.core.files import atomic_write_text
from moot.engine.session import AgentChoice, limits_from, parse_agent_options, resolve_agents, run_driver
from moot.errors import UserError

EXIT_FOR = {"approve": 0, "changes_requested": 1, None: 2}


def review_command(
    range_: Annotated[
        str | None,
        typer.Argument(
            metavar="[RANGE]",
            help="BASE..HEAD, BASE...HEAD or one commit (default: uncommitted changes, else the last commit).",
        ),
    ] = None,
    max_rounds: Annotated[int | None, typer.Option("--max-rounds", min=1, help="Round limit (default 5).")] = None,
    council: Annotated[
        bool, typer.Option("--council", help="A council of reviewers (default three) instead of author and reviewer.")
    ] = False,
    member: Annotated[
        list[str] | None,
        typer.Option("--member", help="NAME=SPEC per council member (repeatable; implies --council)."),
    ] = None,
    chairman: Annotated[
        str | None, typer.Option("--chairman", help="The council's separate chairman SPEC (default: the first member).")
    ] = None,
    root: Annotated[Path, typer.Option("--root", help="The repository (default: the current directory).")] = Path("."),
    records: Annotated[
        Path | None,
        typer.Option(
            "--records",
            help="The work root the review's records go under (default: moot/ in the repository's git dir).",
        ),
    ] = None,
    agent: AgentOpt = None,
    agents: AgentsOpt = None,
    as_json: JsonOpt = False,
    repairs: RepairsOpt = None,
    turn_timeout: TurnTimeoutOpt = None,
    max_tokens: MaxTokensOpt = None,
) -> None:
    """Review a git change as author and reviewer, or as a council; exit 0 approve, 1 changes requested, 2 error."""
    from moot.engine.driver import Driver
    from moot.protocols.council.driver import CouncilDriver, parse_member
    from moot.protocols.critique.driver import CritiqueDriver
    from moot.review import (
        COUNCIL_REVIEWERS,
        DIFF_MAX_CHARS,
        LOCAL_DIFF_MAX_CHARS,
        collect_change,
        comment_markdown,
        council_comment,
        council_verdict,
        gated_verdict,
        records_root,
        review_json,
        review_path,
        start_council_review,
        start_review,
        verdict_of,
    )

    council = council or bool(member) or chairman is not None
    if council and max_rounds is not None:
        raise UserError("--max-rounds limits the author and reviewer's dialogue; a council has no rounds: drop it.")
    change = collect_change(root, range_)
    if not change.diff.strip():
        raise UserError(f"there is nothing to review in {change.label}: give a range with changes, like HEAD~3..HEAD.")
    settings = load_settings(root)
    choice = AgentChoice(parse_agent_options(agent or []), agents)
    if council:
        members = [parse_member(value) for value in member or []]
        members = members or [(name, choice.spec_for(name, settings)) for name in COUNCIL_REVIEWERS]
        if len(members) < 2:
            raise UserError("a council of reviewers needs at least two members; give --member NAME=SPEC twice or more.")
        choice = AgentChoice(dict(members) | ({"chairman": chairman} if chairman else {}), None)
        roles = [name for name, _ in members] + (["chairman"] if chairman else [])
    else:
        roles = ["author", "reviewer"]
    specs = [choice.spec_for(role, settings) for role in roles]
    local = any(spec.split(":", 1)[0].strip() == "local" for spec in specs)
    diff_limit = LOCAL_DIFF_MAX_CHARS if local else DIFF_MAX_CHARS
    chosen = resolve_agents(roles, choice, settings)  # before the record exists: a bad spec leaves nothing behind
    place = records if records is not None else records_root(root)
    place.mkdir(parents=True, exist_ok=True)
    if council:
        driver: Driver = start_council_review(
            place, change, members, chairman=chairman, diff_limit=diff_limit, started=now_minutes()
        )
    else:
        driver = start_review(place, change, diff_limit=diff_limit, max_rounds=max_rounds, started=now_minutes())
    limits = limits_from(settings, repairs=repairs, turn_timeout_s=turn_timeout, max_tokens=max_tokens)
    progress = Progress(driver, follow=False, quiet=as_json)
    with progress:
        result = asyncio.run(run_driver(driver, chosen, limits, (progress.on_event,)))
    held_back = None
    if isinstance(driver, CouncilDriver):
        verdict, held_back = gated_verdict(driver, council_verdict(driver))
        comment = council_comment(driver, result, change, verdict, held_back)
    else:
        assert isinstance(driver, CritiqueDriver)
        verdict = verdict_of(driver, result)
        comment = comment_markdown(driver, result, change, verdict)
    report = review_json(driver, result, change, verdict, comment, held_back)
    atomic_write_text(review_path(driver.record_path, "md"), comment)
    atomic_write_text(review_path(driver.record_path, "json"), json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False))
    else:
        typer.echo(comment)
    if verdict is None:
        typer.echo(f"moot: the review failed: {report['reason']}", err=True)
    elif held_back is not None:
        typer.echo(f"moot: {held_back}", err=True)
    raise typer.Exit(EXIT_FOR[verdict])

"""``moot review [RANGE] [--council | --protocol NAME]``: a review deliberation over a git diff whose verdict is the
exit code. Any protocol whose plugin declares the ``review`` hook (moot.plugin.Review) can review.

Exit codes: 0 approve; 1 changes requested (a degraded council's approval too); 2 an error (bad range, no change, a participant that
gave no valid turn). The comment (Markdown) and the JSON are also written beside the dialogue record,
as ``.NAME.review.md`` and ``.NAME.review.json``. The records go under ``moot/`` in the repository's git
directory (moot.review.records_root), or under ``--records``: a review leaves the reviewed tree as it was.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from moot.cli.progress import Progress
from moot.cli.run import (
    AgentOpt,
    AgentsOpt,
    JsonOpt,
    MaxTokensOpt,
    RepairsOpt,
    TurnTimeoutOpt,
)
from moot.config import Settings, load_settings
from moot.core.files import atomic_write_text
from moot.engine.loop import now_minutes
from moot.engine.session import (
    AgentChoice,
    limits_from,
    parse_agent_options,
    parse_member,
    resolve_agents,
    run_driver,
)
from moot.errors import PluginError, UserError

if TYPE_CHECKING:
    from moot.plugin import Review

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
    protocol: Annotated[
        str | None,
        typer.Option(
            "--protocol",
            help="The protocol that reviews (default critique: author and reviewer); one with a review hook.",
        ),
    ] = None,
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
    from moot.plugin import Reviewing
    from moot.review import (
        DIFF_MAX_CHARS,
        LOCAL_DIFF_MAX_CHARS,
        collect_change,
        records_root,
        review_json,
        review_path,
    )

    panel = council or bool(member) or chairman is not None
    if council and protocol not in (None, "council"):
        raise UserError(f"--council is --protocol council; give one of --council and --protocol {protocol}.")
    name = protocol or ("council" if panel else "critique")
    hook = reviewer_hook(name)
    if max_rounds is not None and not hook.rounds:
        raise UserError(f"--max-rounds limits a dialogue's rounds; a {name} has no rounds: drop it.")
    if hook.roles and (member or council):
        raise UserError(
            f"{name} reviews with its roles {', '.join(hook.roles)}, not members: drop --member and --council."
        )
    if chairman is not None and hook.chairman is None:
        raise UserError(f"a {name} review has no chairman: drop --chairman.")
    change = collect_change(root, range_)
    if not change.diff.strip():
        raise UserError(f"there is nothing to review in {change.label}: give a range with changes, like HEAD~3..HEAD.")
    settings = load_settings(root)
    choice = AgentChoice(parse_agent_options(agent or []), agents)
    members: list[tuple[str, str]] = []
    if hook.roles:
        roles = list(hook.roles)
    else:
        members, choice = panel_of(name, hook, member or [], chairman, choice, settings)
        roles = list(choice.per_role)
    specs = [choice.spec_for(role, settings) for role in roles]
    local = any(spec.split(":", 1)[0].strip() == "local" for spec in specs)
    diff_limit = LOCAL_DIFF_MAX_CHARS if local else DIFF_MAX_CHARS
    chosen = resolve_agents(roles, choice, settings)  # before the record exists: a bad spec leaves nothing behind
    place = records if records is not None else records_root(root)
    place.mkdir(parents=True, exist_ok=True)
    reviewing = Reviewing(change, diff_limit, now_minutes(), tuple(members), chairman, max_rounds)
    driver = hook.start(place, reviewing)
    limits = limits_from(settings, repairs=repairs, turn_timeout_s=turn_timeout, max_tokens=max_tokens)
    progress = Progress(driver, follow=False, quiet=as_json)
    with progress:
        result = asyncio.run(run_driver(driver, chosen, limits, (progress.on_event,)))
    reviewed = hook.read(driver, result, reviewing)
    report = review_json(driver, result, change, reviewed)
    atomic_write_text(review_path(driver.record_path, "md"), reviewed.comment)
    atomic_write_text(review_path(driver.record_path, "json"), json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False))
    else:
        typer.echo(reviewed.comment)
    if reviewed.verdict is None:
        typer.echo(f"moot: the review failed: {report['reason']}", err=True)
    elif reviewed.held_back is not None:
        typer.echo(f"moot: {reviewed.held_back}", err=True)
    raise typer.Exit(EXIT_FOR[reviewed.verdict])


def panel_of(
    name: str, hook: Review, member: list[str], chairman: str | None, choice: AgentChoice, settings: Settings
) -> tuple[list[tuple[str, str]], AgentChoice]:
    """A panel protocol's members (``--member``, or three reviewers with the ``--agents`` spec) and the agent of
    each seat, its separate chairman's included."""
    from moot.review import COUNCIL_REVIEWERS

    members = [parse_member(value) for value in member]
    members = members or [(reviewer, choice.spec_for(reviewer, settings)) for reviewer in COUNCIL_REVIEWERS]
    if len(members) < 2:
        raise UserError(f"a {name} of reviewers needs at least two members; give --member NAME=SPEC twice or more.")
    seats = dict(members) | ({hook.chairman: chairman} if hook.chairman and chairman else {})
    return members, AgentChoice(seats, None)


def reviewer_hook(name: str) -> Review:
    """The review hook of the protocol ``name``; a protocol without one is refused in a sentence."""
    from moot import registry

    plugin = registry.get(name)
    if plugin.review is None:
        able = [p.name for p in registry.protocols().values() if p.review is not None]
        raise UserError(
            f"the protocol {name} cannot review a change (it has no review hook); use --protocol {' or '.join(able)}."
        )
    try:
        return plugin.review.load()
    except PluginError as exc:
        raise UserError(registry.broken_part(name, exc)) from exc

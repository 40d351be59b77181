"""``moot run council``: the Council's command; the options every protocol shares come from :mod:`moot.cli.run`."""

from __future__ import annotations

from typing import Annotated

import typer

from moot.cli.run import (
    RunFlags,
    SourceOpt,
    execute,
    run_options,
    start_record,
    with_passages,
)
from moot.errors import UserError
from moot.protocols.council.driver import CouncilDriver, CouncilOptions, parse_member
from moot.protocols.council.machine import BORDA, QUORUM

# Shared with ``moot run auto``, whose escalation is a council.
AggregateOpt = Annotated[
    str,
    typer.Option(
        "--aggregate",
        help="How the reviews' rankings are aggregated: borda (each review counts the same) or confidence "
        "(each review's Borda points times its reviewer's stated confidence).",
    ),
]


@run_options(without=("agent", "agents"))  # each member's agent is named with --member
def run_council(
    question: Annotated[str, typer.Option("--question", help="What the council answers.")],
    member: Annotated[
        list[str],
        typer.Option("--member", help="NAME=SPEC per member (repeatable, at least two), e.g. alice=openai:gpt-4o."),
    ],
    chairman: Annotated[
        str | None, typer.Option("--chairman", help="A separate chairman's agent SPEC (default: the first member).")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="The seed of the review shuffles.")] = None,
    quorum: Annotated[
        int,
        typer.Option(
            "--quorum", help="The fewest valid answers that let the council go on; fewer end it in NO_QUORUM."
        ),
    ] = QUORUM,
    aggregate: AggregateOpt = BORDA,
    source: SourceOpt = None,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """A Council: members answer sealed, rank each other's answers anonymously, and a chairman synthesizes."""
    members = tuple(parse_member(value) for value in member)
    if len(members) < 2:
        raise UserError("a council needs at least two members; give --member NAME=SPEC twice or more.")
    # The passages become part of the question: every member, reviewer and the chairman reads them, and a
    # resumed council reads them from its record.
    asked = with_passages(question, source, flags.root, question) or question
    options = CouncilOptions(
        question=asked, members=members, chairman=chairman, seed=seed, quorum=quorum, aggregate=aggregate.strip()
    )
    driver = start_record(CouncilDriver, options, flags, force=force)
    execute(driver, flags)

"""``moot run auto``: the council's options plus the vote's threshold and quorum; the options every protocol
shares come from :mod:`moot.cli.run`."""

from __future__ import annotations

from typing import Annotated

import typer

from moot.cli.run import RunFlags, SourceOpt, execute, run_options, start_record, with_passages
from moot.errors import UserError
from moot.protocols.auto.driver import AutoDriver, AutoOptions
from moot.protocols.auto.machine import DEFAULT_QUORUM, DEFAULT_THRESHOLD, threshold_value
from moot.protocols.council.command import AggregateOpt
from moot.protocols.council.driver import parse_member
from moot.protocols.council.machine import BORDA


@run_options(without=("agent", "agents"))  # each member's agent is named with --member
def run_auto(
    question: Annotated[str, typer.Option("--question", help="What the panel answers.")],
    member: Annotated[
        list[str],
        typer.Option("--member", help="NAME=SPEC per member (repeatable, at least two), e.g. alice=openai:gpt-4o."),
    ],
    agree: Annotated[
        str,
        typer.Option(
            "--agree",
            help="The share of valid answers that must agree for a vote to decide, e.g. 1 (unanimous), 0.6 or 2/3.",
        ),
    ] = DEFAULT_THRESHOLD,
    quorum: Annotated[
        int, typer.Option("--quorum", min=DEFAULT_QUORUM, help="Fewer valid answers than this end the run NO_QUORUM.")
    ] = DEFAULT_QUORUM,
    chairman: Annotated[
        str | None,
        typer.Option(
            "--chairman", help="A separate chairman's agent SPEC if the vote escalates (default: the first member)."
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="The seed of the review shuffles.")] = None,
    aggregate: AggregateOpt = BORDA,
    source: SourceOpt = None,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """Vote first: members answer sealed; a split escalates to a council's anonymous reviews and synthesis."""
    members = tuple(parse_member(value) for value in member)
    if len(members) < 2:
        raise UserError("a panel needs at least two members; give --member NAME=SPEC twice or more.")
    if threshold_value(agree) is None:
        raise UserError(f"--agree {agree!r} is not a share above 0 and at most 1; write it like --agree 0.6 or 2/3.")
    if quorum > len(members):
        raise UserError(f"--quorum {quorum} is more than the {len(members)} members; give a smaller --quorum.")
    asked = with_passages(question, source, flags.root, question) or question
    options = AutoOptions(
        question=asked,
        members=members,
        chairman=chairman,
        seed=seed,
        agree=agree.strip(),
        quorum=quorum,
        aggregate=aggregate.strip(),
    )
    driver = start_record(AutoDriver, options, flags, force=force)
    execute(driver, flags)

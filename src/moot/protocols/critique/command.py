"""``moot run critique``: the Critique Loop's command; the options every protocol shares come from :mod:`moot.cli.run`."""

from __future__ import annotations

from typing import Annotated

import typer

from moot.cli.run import (
    RunFlags,
    SourceOpt,
    execute,
    interactive,
    read_context,
    run_options,
    start_record,
    two_roles,
    with_passages,
)
from moot.errors import UserError


@run_options()
def run_critique(
    topic: Annotated[str, typer.Option("--topic", help="What the dialogue is about.")],
    template: Annotated[
        str | None,
        typer.Option("--template", help="planning (proposer/critic), review (author/reviewer), pair (lead/partner)."),
    ] = None,
    roles: Annotated[str | None, typer.Option("--roles", help="Two custom roles, A,B (A is your side).")] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="A file (or - for stdin) given to the first role only.")
    ] = None,
    max_rounds: Annotated[int | None, typer.Option("--max-rounds", min=1, help="Round limit.")] = None,
    source: SourceOpt = None,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """A Critique Loop: two roles alternate until one proposes done and the other confirms."""
    from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions
    from moot.protocols.critique.questions import after_critique, offer_gitignore

    if template is not None and roles is not None:
        raise UserError("give either --template or --roles, not both.")
    options = CritiqueOptions(
        topic=topic,
        roles=two_roles(roles) if roles is not None else None,
        template=template,
        max_rounds=max_rounds,
        context=with_passages(read_context(context, flags.root), source, flags.root, topic),
    )
    driver = start_record(CritiqueDriver, options, flags, force=force)
    if not flags.as_json and not flags.dry_run and interactive():
        offer_gitignore(flags.root)
    execute(
        driver,
        flags,
        after=after_critique if interactive() else None,
    )

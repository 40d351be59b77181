"""``moot run duel``: the Socratic Duel's command; the options every protocol shares come from :mod:`moot.cli.run`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from moot.cli.run import RunFlags, SourceOpt, announce_sources, execute, run_options, spec_for, start_record, two_roles


@run_options()
def run_duel(
    source: Annotated[Path, typer.Argument(help="The Markdown document to debate (read-only).")],
    topic: Annotated[
        str | None, typer.Option("--topic", help="Default: the first heading, else the file stem.")
    ] = None,
    roles: Annotated[str, typer.Option("--roles", help="The two participants, A,B.")] = "advocate,skeptic",
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", help="Turn limit (default and most: the seed's cap).")
    ] = None,
    supporting: SourceOpt = None,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """A Socratic Duel: two participants debate a source document in at most six turns."""
    from moot.protocols.duel.driver import DuelDriver, DuelOptions

    announce_sources(supporting, flags.root)
    options = DuelOptions(
        source=source,
        topic=topic,
        roles=two_roles(roles),
        supporting=tuple(supporting or ()),
    ).with_models(spec_for(flags))
    if max_turns is not None:  # the cap and its check live with the protocol (DuelConfig)
        options = dataclasses.replace(options, max_turns=max_turns)
    driver = start_record(DuelDriver, options, flags, force=force)
    execute(driver, flags)

"""``moot run duel``: the Socratic Duel's command; the options every protocol shares come from :mod:`moot.cli.run`."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Annotated

import typer

from moot.cli.run import RunFlags, SourceOpt, announce_sources, execute, run_options, spec_for, start_record, two_roles
from moot.errors import UserError


@run_options()
def run_duel(
    # Optional here only so that a missing document is explained in moot's words (the usual slip: --source).
    source: Annotated[Path | None, typer.Argument(help="The Markdown document to debate (read-only).")] = None,
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

    if source is None:
        given = f" {shlex.quote(str(supporting[0]))}" if supporting else " DOCUMENT.md"
        raise UserError(
            "a duel debates the document given as its argument (--source only names files the evidence may come "
            f"from); run moot run duel{given}."
        )
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

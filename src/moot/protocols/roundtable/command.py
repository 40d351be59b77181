"""``moot run roundtable``: the Roundtable's command; the options every protocol shares come from :mod:`moot.cli.run`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from moot.cli.run import RunFlags, SourceOpt, execute, run_options, start_record, with_passages
from moot.errors import UserError


@run_options()
def run_roundtable(
    topic: Annotated[str | None, typer.Option("--topic", help="What the meeting discusses.")] = None,
    agenda: Annotated[Path | None, typer.Option("--agenda", help="A file with the background (AGENDA.md).")] = None,
    speakers: Annotated[str, typer.Option("--speakers", help="The speakers in order, A,B,C.")] = "architect,reviewer",
    max_rounds: Annotated[int, typer.Option("--max-rounds", min=1, help="Round limit.")] = 3,
    name: Annotated[str | None, typer.Option("--name", help="The meeting's directory name.")] = None,
    source: SourceOpt = None,
    sealed: Annotated[
        bool, typer.Option("--sealed", help="Ask every speaker's round-1 position at once, none seeing another's.")
    ] = False,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """A Roundtable: speakers in order, then the moderator writes MINUTES.md and closes."""
    from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions

    if topic is None and agenda is None:
        raise UserError("give --topic or --agenda so the meeting has something to discuss.")
    order = tuple(part.strip() for part in speakers.split(",") if part.strip())
    background = with_passages(None, source, flags.root, topic or (agenda.stem if agenda else ""))
    options = RoundtableOptions(
        speakers=order,
        topic=topic,
        agenda=agenda,
        name=name,
        max_rounds=max_rounds,
        background=background,
        sealed=sealed,
    )
    driver = start_record(RoundtableDriver, options, flags, force=force)
    execute(driver, flags)

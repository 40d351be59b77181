"""``moot run agora``: the Agora's command; the options every protocol shares come from :mod:`moot.cli.run`."""

from __future__ import annotations

from typing import Annotated

import typer

from moot.cli.run import RunFlags, SourceOpt, announce_sources, execute, run_options, spec_for, start_record


@run_options()
def run_agora(
    topic: Annotated[str, typer.Option("--topic", help="What the drones debate.")],
    position: Annotated[
        list[str] | None, typer.Option("--position", help="ROLE=TEXT per participant (default: for and against).")
    ] = None,
    methodology: Annotated[str, typer.Option("--methodology", help="opinion, fact-based or mixed.")] = "opinion",
    max_turns: Annotated[int, typer.Option("--max-turns", min=2, help="Turn limit (the seed: 20).")] = 20,
    research: Annotated[int, typer.Option("--research", min=0, help="Research drones that gather evidence first.")] = 0,
    source: SourceOpt = None,
    sealed: Annotated[
        bool, typer.Option("--sealed", help="Ask every drone's opening proposal at once, none seeing another's.")
    ] = False,
    require_reasons: Annotated[
        bool,
        typer.Option(
            "--require-reasons", help="A drone that changes its stance must cite evidence no earlier turn cites."
        ),
    ] = False,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """An Agora debate: drones exchange signals until Nash consensus, or time out."""
    from moot.protocols.agora.driver import AgoraDriver, AgoraOptions, parse_position

    positions = tuple(parse_position(value) for value in position or [])
    announce_sources(source, flags.root)
    options = AgoraOptions(
        topic=topic,
        positions=positions,
        methodology=methodology,
        max_turns=max_turns,
        research=research,
        sources=tuple(source or ()),
        sealed=sealed,
        require_reasons=require_reasons,
    ).with_models(spec_for(flags))
    driver = start_record(AgoraDriver, options, flags, force=force)
    execute(driver, flags)

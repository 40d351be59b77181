"""The root of every ``moot`` app, and the small app that runs one agent-tool command.

An outside agent calls ``moot duel status``, ``moot critique append``, ``moot emit`` and the like on every
turn. :func:`for_tool_command` builds an app holding only that command's group, with the same root options,
so such a call imports typer and the group's tools but not the rest of the CLI (the engine, the agents,
rich help). Help, usage errors and output are the group's own, so they are the same as through the whole app.
"""

from __future__ import annotations

from typing import Annotated

import typer

from moot import __version__
from moot.builtin_protocols import BUILTIN_PROTOCOLS

# Commands every protocol shares, registered together by moot.cli.tools.register.
SHARED_TOOL_COMMANDS = frozenset({"emit", "events"})


def _version(value: bool) -> None:
    if value:
        typer.echo(f"moot {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """moot — structured second opinions with enforced protocols."""
    if debug:
        from moot.cli import run

        run.debug_everything = True


def new_app() -> typer.Typer:
    """The ``moot`` root: its help, its root options (--version, --debug), no commands yet."""
    app = typer.Typer(
        name="moot",
        help="Structured deliberations between LLMs, coding agents and people, with the protocol rules enforced.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, PowerShell
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    return app


def _tool_groups() -> dict[str, str]:
    """moot's own protocols' agent-tool groups: name -> the typer app that holds them."""
    return {plugin.name: plugin.tool_commands for plugin in BUILTIN_PROTOCOLS if plugin.tool_commands is not None}


def for_tool_command(args: list[str]) -> typer.Typer | None:
    """The small app for ``args`` when they call an agent-tool command of moot's own; else ``None``."""
    if not args or args[0] in ("--help", "--version", "--debug"):
        return None
    name = args[0]
    groups = _tool_groups()
    if name not in groups and name not in SHARED_TOOL_COMMANDS:
        return None
    app = new_app()
    if name in SHARED_TOOL_COMMANDS:
        from moot.cli.tools import register

        register(app)
    else:
        from moot.registry import load

        app.add_typer(load(groups[name]), name=name)
    return app

"""The root of every typer ``moot`` app: its help and its root options (--version, --debug)."""

from __future__ import annotations

from typing import Annotated

import typer

from moot import __version__
from moot.cli.help_text import use_plain_help


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
    use_plain_help()
    app = typer.Typer(
        name="moot",
        help="Structured deliberations between LLMs, coding agents and people, with the protocol rules enforced.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, PowerShell
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    return app

"""The agent-tool commands, run without the rest of the CLI.

An outside agent calls ``moot duel status``, ``moot critique append``, ``moot emit`` and the like on every
turn. :func:`for_tool_command` answers such a call with the command alone: moot's own tool commands read
their options without typer (:mod:`moot.cli.tool_options`), and anything else of the group (help, a usage
error, a third-party protocol's tools) gets a typer app holding only that group, with the same root options.
Help, usage errors and output are thus the same as through the whole app, without its imports (the engine,
the agents, rich help) on the way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_OWN_TOOLS = "moot.cli.tools:"
# moot's own protocols' agent-tool groups: name -> the typer app that holds them.
TOOL_GROUPS = {
    "critique": "moot.cli.tools:critique_app",
    "duel": "moot.cli.tools:duel_app",
    "roundtable": "moot.cli.tools:roundtable_app",
}


def _tool_groups() -> dict[str, str]:
    return TOOL_GROUPS


def _group_app(name: str, groups: dict[str, str]) -> Any:
    """A typer app of the root and ``name``'s commands alone."""
    from moot.cli.root import new_app

    app = new_app()
    if name in groups:
        from moot.plugin import Ref

        app.add_typer(Ref[Any](groups[name]).load(), name=name)
    else:
        from moot.cli.tools import register

        register(app)
    return app


def _own_command(args: list[str], groups: dict[str, str]) -> tuple[Callable[..., None], list[str]] | None:
    """moot's own tool command that ``args`` call, and the arguments left for it."""
    from moot.cli import tools

    if args[0] in tools.SHARED_COMMANDS:
        return tools.SHARED_COMMANDS[args[0]], args[1:]
    reference = groups[args[0]]
    if not reference.startswith(_OWN_TOOLS) or len(args) < 2:
        return None
    group = tools.GROUPS[reference.removeprefix(_OWN_TOOLS)]
    command = group.commands.get(args[1])
    return None if command is None else (command, args[2:])


def for_tool_command(args: list[str]) -> Callable[..., None] | None:
    """What runs ``args`` (called as ``app(args=…, prog_name=…)``) when they call an agent-tool command of
    moot's own; else ``None``."""
    if not args or args[0] in ("--help", "--version", "--debug"):
        return None
    from moot.cli.tools import SHARED_COMMANDS

    name = args[0]
    groups = _tool_groups()
    if name not in groups and name not in SHARED_COMMANDS:
        return None

    def run(args: list[str], prog_name: str) -> None:
        own = _own_command(args, groups)
        if own is not None:
            from moot.cli.tool_options import parse

            command, rest = own
            options = parse(command, rest)
            if options is not None:
                command(**options)
                return
        _group_app(name, groups)(args=args, prog_name=prog_name)

    return run

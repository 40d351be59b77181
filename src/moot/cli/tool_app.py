"""The agent-tool commands, run without the rest of the CLI.

An outside agent calls ``moot duel status``, ``moot critique append``, ``moot emit`` and the like on every
turn. :func:`for_tool_command` answers such a call with the command alone: the protocol's tool declarations
give its options, read without typer (:mod:`moot.cli.tool_options`), and anything else of the group (help, a
usage error) gets a typer app holding only that group, with the same root options. Help, usage errors and
output are thus the same as through the whole app, without its imports (the engine, the agents, rich help) on
the way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moot.plugin import Protocol, Tool

# The commands every protocol shares: ``moot emit`` (moot.tools.events:TOOLS) and ``moot events``. Named here so
# that deciding whether a command is an agent tool imports nothing.
SHARED_COMMANDS = ("emit", "events")


def _protocol(name: str) -> Protocol | None:
    """The protocol ``name`` if it has agent tools. moot's own entry points are read first (one distribution,
    not all of them: the every-turn call stays fast); they win over another package's of the same name, as in
    the registry."""
    from importlib.metadata import EntryPoints, PackageNotFoundError, distribution

    from moot import registry

    try:
        own = distribution(registry.OWN_DISTRIBUTION).entry_points.select(group=registry.ENTRY_POINT_GROUP, name=name)
    except PackageNotFoundError:
        own = EntryPoints(())
    plugin: Any = None
    for point in own:
        try:
            plugin = point.load()
        except Exception:
            return None  # the whole app says why it cannot be loaded
    if plugin is None:
        plugin = registry.protocols().get(name)
    return plugin if plugin is not None and plugin.tools is not None else None


def _group_app(plugin: Protocol | None) -> Any:
    """A typer app of the root and ``plugin``'s commands alone (the shared commands' without one)."""
    from moot.cli.root import new_app
    from moot.cli.tools import group_app, register

    app = new_app()
    if plugin is not None:
        app.add_typer(group_app(plugin), name=plugin.name)
    else:
        register(app)
    return app


def _command(plugin: Protocol | None, args: list[str]) -> tuple[Tool | None, list[str]]:
    """The tool that ``args`` call (``None`` for ``moot events``), and the arguments left for it."""
    from moot.cli.tools import shared_tools

    if plugin is None:
        tools, name, rest = shared_tools(), args[0], args[1:]
    else:
        tools, name, rest = plugin.tools.load() if plugin.tools else (), (args[1:2] or [""])[0], args[2:]
    return next((tool for tool in tools if tool.name == name), None), rest


def for_tool_command(args: list[str]) -> Callable[..., None] | None:
    """What runs ``args`` (called as ``app(args=…, prog_name=…)``) when they call an agent-tool command; else
    ``None``."""
    if not args or args[0].startswith("-"):
        return None
    plugin = None if args[0] in SHARED_COMMANDS else _protocol(args[0])
    if plugin is None and args[0] not in SHARED_COMMANDS:
        return None

    def run(args: list[str], prog_name: str) -> None:
        from moot.cli import tools
        from moot.cli.tool_options import parse

        tool, rest = _command(plugin, args)
        if tool is not None:
            given = parse(tools.tool_options(plugin, tool), rest)
            if given is not None:
                tools.run_tool(plugin.folder if plugin else None, tool, given)
        elif plugin is None:  # moot events
            given = parse(tools.EVENTS_OPTIONS, rest)
            if given is not None:
                tools.events(given)
                return
        _group_app(plugin)(args=args, prog_name=prog_name)

    return run

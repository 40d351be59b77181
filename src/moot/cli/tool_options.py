"""The options of an agent-tool command, generated from its declaration and served two ways.

Each argument of a :class:`moot.plugin.Tool` is an option (``--kebab-name``, its description the help; see
:mod:`moot.tools.declare` for what :class:`~moot.tools.declare.Cli` changes), and every command adds
``--root``. :func:`typer_command` turns them into a typer command (for help, usage errors and the whole app),
and :func:`parse` reads a well-formed call without typer, which is the call an agent makes every turn.
Whatever :func:`parse` is not sure of (``--help``, a missing or unknown option, a value that does not
convert) it leaves to typer, so messages and exit codes are typer's own either way.
"""

from __future__ import annotations

import inspect
import os
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot.tools.declare import arguments_of, exports

if TYPE_CHECKING:
    from moot.plugin import Tool

ROOT = "root"
FOLDER = "folder"  # the keyword of a tool's folder option (see Tool.folder_option)
EXPORT = "export"  # the keyword of --export, offered by a tool whose answer later calls read from the environment
_REQUIRED = object()
_CONVERTERS: dict[type, Callable[[str], Any]] = {str: str, int: int, float: float, Path: Path}


@dataclass(frozen=True)
class Option:
    """One ``--flag`` of an agent-tool command, filling the keyword ``name``."""

    name: str
    flag: str
    kind: type  # what the text converts to: str, int, float, bool or Path
    help: str
    envvar: str | None = None
    default: Any = _REQUIRED  # _REQUIRED when the option must be given


ROOT_OPTION = Option(
    ROOT, "--root", Path, "The work root (default: $MOOT_ROOT, else the current directory).", "MOOT_ROOT", None
)


def _kind(annotation: Any) -> type:
    """What the command line converts an argument to; a list or an object is passed on as text."""
    plain = [arg for arg in typing.get_args(annotation) if arg is not type(None)] or [annotation]
    return plain[0] if len(plain) == 1 and plain[0] in (bool, int, float) else str


def options(tool: Tool, folder: str | None = None) -> list[Option]:
    """The command's options: the tool's arguments, ``--root``, and its folder option if it has one."""
    found = []
    for arg in arguments_of(tool.function):
        help = arg.description
        if arg.cli.file:
            help = f"A file holding it ('-' for stdin): {help}"
        if typing.get_origin(arg.annotation) is list:
            help += " Comma-separated."
        # An argument that may be None may be left out here: the tool then refuses with its own sentence.
        default = None if arg.optional and arg.required else arg.default
        if default is inspect.Parameter.empty:
            default = _REQUIRED
        found.append(Option(arg.name, arg.flag, _kind(arg.annotation), help, arg.cli.envvar, default))
    if tool.folder_option:
        found.append(
            Option(
                FOLDER,
                tool.folder_option,
                Path,
                f"<work root>/{folder}; sets the work root if --root is not given.",
                default=None,
            )
        )
    variables = exports(tool)
    if variables:
        names = " and ".join(sorted(variables.values()))
        found.append(
            Option(
                EXPORT,
                "--export",
                bool,
                f"Print only shell assignments of {names} (eval them); nothing on stdout if refused.",
                default=False,
            )
        )
    found.append(ROOT_OPTION)
    return found


def parse(found: list[Option], args: list[str]) -> dict[str, Any] | None:
    """The options' values from ``args``, or ``None`` when typer should read them: help, an unknown or
    repeated option, a missing one, or a value that does not convert."""
    by_flag = {option.flag: option for option in found}
    given: dict[str, Any] = {}
    index = 0
    while index < len(args):
        flag, has_value, value = args[index].partition("=")
        option = by_flag.get(flag)
        if option is None or option.name in given:
            return None
        if option.kind is bool:
            if has_value:
                return None
            given[option.name] = True
            index += 1
            continue
        if not has_value:
            if index + 1 >= len(args) or args[index + 1].startswith("--"):
                return None
            value = args[index + 1]
            index += 1
        index += 1
        try:
            given[option.name] = _CONVERTERS[option.kind](value)
        except (KeyError, ValueError):
            return None
    for option in found:
        if option.name in given:
            continue
        from_env = os.environ.get(option.envvar) if option.envvar else None
        if from_env:  # an empty variable counts as unset, as typer has it
            if option.kind is bool:
                return None
            try:
                given[option.name] = _CONVERTERS[option.kind](from_env)
            except (KeyError, ValueError):
                return None
        elif option.default is _REQUIRED:
            return None
        else:
            given[option.name] = option.default
    return given


def typer_command(found: list[Option], run: Callable[[dict[str, Any]], None], doc: str) -> Callable[..., None]:
    """A typer command with ``found`` as its options, which calls ``run`` with their values."""
    import typer

    params = []
    for option in found:
        kind: Any = option.kind if option.default is _REQUIRED or option.default is not None else option.kind | None
        hint = typing.Annotated[kind, typer.Option(option.flag, help=option.help, envvar=option.envvar)]
        default = inspect.Parameter.empty if option.default is _REQUIRED else option.default
        params.append(inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))

    def command(**values: Any) -> None:
        run(values)

    command.__doc__ = doc
    command.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    command.__annotations__ = {param.name: param.annotation for param in params}
    return command

"""The agent-tool commands' options, declared once and served two ways.

A command is a plain function whose parameters are ``Annotated[type, Opt("--flag", help=…, envvar=…)]``.
:func:`typer_command` turns it into a typer command (for help, usage errors and the whole app), and
:func:`parse` reads a well-formed call without typer, which is the call an agent makes every turn. Whatever
:func:`parse` is not sure of (``--help``, a missing or unknown option, a value that does not convert) it
leaves to typer, so messages and exit codes are typer's own either way.
"""

from __future__ import annotations

import functools
import os
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Opt:
    """One ``--flag`` of an agent-tool command."""

    flag: str
    help: str | None = None
    envvar: str | None = None


@dataclass(frozen=True)
class ToolGroup:
    """``moot NAME …``: a help text and its commands, by name."""

    help: str
    commands: dict[str, Callable[..., None]] = field(default_factory=dict)

    def command(self, name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
        def add(function: Callable[..., None]) -> Callable[..., None]:
            self.commands[name] = function
            return function

        return add


@dataclass(frozen=True)
class _Param:
    name: str
    kind: type
    opt: Opt
    default: Any  # _REQUIRED when the option must be given


_REQUIRED = object()
_CONVERTERS: dict[type, Callable[[str], Any]] = {str: str, int: int, float: float, Path: Path}


def _params(function: Callable[..., None]) -> list[_Param]:
    """The options of ``function``, from its signature and its ``Annotated`` hints."""
    import inspect

    hints = typing.get_type_hints(function, include_extras=True)
    found = []
    for param in inspect.signature(function).parameters.values():
        hint = hints[param.name]
        base, opt = typing.get_args(hint)  # Annotated[T, Opt(...)]
        if isinstance(base, types.UnionType):  # T | None
            base = next(arg for arg in typing.get_args(base) if arg is not type(None))
        default = _REQUIRED if param.default is inspect.Parameter.empty else param.default
        found.append(_Param(param.name, base, opt, default))
    return found


def parse(function: Callable[..., None], args: list[str]) -> dict[str, Any] | None:
    """``function``'s keyword arguments from ``args`` (its options only), or ``None`` when typer should read
    them: help, an unknown or repeated option, a missing one, or a value that does not convert."""
    params = _params(function)
    by_flag = {param.opt.flag: param for param in params}
    given: dict[str, Any] = {}
    index = 0
    while index < len(args):
        flag, has_value, value = args[index].partition("=")
        param = by_flag.get(flag)
        if param is None or param.name in given:
            return None
        if param.kind is bool:
            if has_value:
                return None
            given[param.name] = True
            index += 1
            continue
        if not has_value:
            if index + 1 >= len(args) or args[index + 1].startswith("--"):
                return None
            value = args[index + 1]
            index += 1
        index += 1
        try:
            given[param.name] = _CONVERTERS[param.kind](value)
        except (KeyError, ValueError):
            return None
    for param in params:
        if param.name in given:
            continue
        from_env = os.environ.get(param.opt.envvar) if param.opt.envvar else None
        if from_env:  # an empty variable counts as unset, as typer has it
            if param.kind is bool:
                return None
            try:
                given[param.name] = _CONVERTERS[param.kind](from_env)
            except (KeyError, ValueError):
                return None
        elif param.default is _REQUIRED:
            return None
        else:
            given[param.name] = param.default
    return given


def typer_command(function: Callable[..., None]) -> Callable[..., None]:
    """``function`` as typer reads a command: each ``Opt`` becomes a ``typer.Option``."""
    import inspect

    import typer

    hints = typing.get_type_hints(function, include_extras=True)
    params = []
    for param in inspect.signature(function).parameters.values():
        base, opt = typing.get_args(hints[param.name])
        option = typer.Option(opt.flag, help=opt.help, envvar=opt.envvar)
        params.append(param.replace(annotation=typing.Annotated[base, option]))

    @functools.wraps(function)
    def command(**kwargs: Any) -> None:
        function(**kwargs)

    command.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    command.__annotations__ = {param.name: param.annotation for param in params}
    return command


def typer_app(group: ToolGroup) -> Any:
    """``group`` as a typer app (``moot NAME``'s sub-app)."""
    import typer

    app = typer.Typer(help=group.help, no_args_is_help=True)
    for name, function in group.commands.items():
        app.command(name)(typer_command(function))
    return app

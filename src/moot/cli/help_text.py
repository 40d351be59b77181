"""Help text in the shell's words, not Python's.

typer (0.29) labels each option with its Python type (``--json <bool>``, ``--source <list[Path]>``,
``--max-rounds <int range>``) and a required argument as ``{path}`` in the usage line. A person reads that as
something to type (``--json true`` fails), so moot's help shows no value after a flag, a plain name after an
option that takes one (TEXT, INTEGER, NUMBER, PATH), and arguments in capitals, as most command lines do.
The few typer methods involved are replaced only where they exist, so another typer shows its own help
rather than failing.
"""

from __future__ import annotations

import re
from typing import Any

import typer.core

_PLAIN = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "Path": "PATH"}
_TYPE = re.compile(r"^<(?:list\[)?(?P<name>\w+)(?: range)?\]?>$")


def plain_type(shown: str | None) -> str | None:
    """``<list[Path]>`` -> ``PATH``, ``<int range>`` -> ``INTEGER``, ``<a|b>`` (choices) kept as ``a|b``."""
    if not shown:
        return shown
    found = _TYPE.match(shown)
    if found is None:
        return shown.strip("<>")
    return _PLAIN.get(found.group("name"), found.group("name").upper())


def _option_type(self: Any, ctx: Any) -> str | None:
    if self.metavar is not None:
        return str(self.metavar)
    if self.is_flag or self.count:
        return None  # a flag takes no value
    return plain_type(self.display_type(ctx))


def _argument_type(self: Any, ctx: Any) -> str | None:
    return None  # the argument's name already says what it is, in capitals


def _argument_name(self: Any) -> str:
    return str(self.metavar or self.name).upper()


def _argument_usage(self: Any) -> str:
    name = _argument_name(self)
    name = name if self.required else f"[{name}]"
    return name + ("..." if self.nargs != 1 else "")


def use_plain_help() -> None:
    """Make every typer command of this process print help as the module says."""
    option, argument = typer.core.TyperOption, typer.core.TyperArgument
    if hasattr(option, "display_type_rich") and hasattr(option, "display_type"):
        option.display_type_rich = _option_type  # type: ignore[method-assign]
    if hasattr(argument, "display_type_rich"):
        argument.display_type_rich = _argument_type  # type: ignore[method-assign]
    if hasattr(argument, "_usage_display_name"):
        argument._usage_display_name = _argument_usage  # type: ignore[method-assign]
    if hasattr(argument, "_rich_display_name"):
        argument._rich_display_name = _argument_name  # type: ignore[method-assign]

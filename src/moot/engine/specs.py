"""A debate described as plain data (a batch line, a benchmark case) -> a started driver.

``{"protocol": "critique", "topic": "…", "max_rounds": 2}``: ``protocol`` picks the driver, and the
other keys that name fields of that driver's options become those options. Keys for the agents
(``agent``, ``agents``), the work root and the budgets are read by the caller.

An option typed ``Path`` (or ``Path | None``, or a tuple or sequence of them) names a file or directory the
person gives: before any driver starts, each is checked to lie inside the work root (:mod:`moot.paths`), and
so is the protocol's record folder. A protocol's options need nothing else to be confined.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only from Python 3.12

from moot import registry
from moot.engine.driver import Driver, first_error
from moot.errors import UserError
from moot.paths import CLI_FIX, inside_root, record_place

T = TypeVar("T")


class CallerKeys(TypedDict, total=False):
    """The keys of a spec that are not the driver's options; the caller reads them."""

    protocol: str
    agent: dict[str, str]  # role -> agent spec
    agents: str  # one agent spec for every role
    panel: dict[str, str]  # member -> agent spec, for the roles named after a member (a posed question's)
    root: str
    repairs: int
    require_diverse: bool  # refuse a panel whose every member is of one model family (--require-diverse)


NOT_OPTIONS = set(CallerKeys.__annotations__)
_CALLER_KEYS = TypeAdapter(CallerKeys)


def _frozen(value: Any) -> Any:
    """JSON lists become tuples, as the options' fields expect (e.g. roles, positions)."""
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


@functools.cache
def _options_adapter(options_type: type) -> TypeAdapter[Any]:
    return TypeAdapter(options_type)


def _spec_error(exc: ValidationError, what: str) -> UserError:
    fix = "add it to the debate" if exc.errors()[0]["type"] == "missing" else "fix that key of the debate"
    return UserError(f"{what}{first_error(exc)}; {fix}.")


def caller_keys(spec: Mapping[str, Any]) -> CallerKeys:
    """The spec's caller keys, type-checked: a batch line is user input, so a wrong type is a clean error."""
    try:
        keys: CallerKeys = _CALLER_KEYS.validate_python(
            {key: value for key, value in spec.items() if key in NOT_OPTIONS}, strict=True
        )
    except ValidationError as exc:
        raise _spec_error(exc, "") from None
    return keys


def named_specs(spec: Mapping[str, Any]) -> list[str]:
    """Every agent spec ``spec`` names itself — ``agents``, ``agent`` and the options' own (options whose fields
    name agents, such as a council's members, say which with ``agent_specs()``) — found without writing anything,
    so that a door can check them all before a record exists."""
    keys = caller_keys(spec)
    named = [keys["agents"]] if "agents" in keys else []
    named += keys.get("agent", {}).values()
    named += keys.get("panel", {}).values()
    options = _options(spec)[1]
    named += getattr(options, "agent_specs", dict)().values()
    return named


@functools.cache
def path_options(options_type: type) -> dict[str, bool]:
    """The options of ``options_type`` that name files or directories: name -> whether it holds several."""
    hints = typing.get_type_hints(options_type)
    found: dict[str, bool] = {}
    for field in dataclasses.fields(options_type):
        hint = hints[field.name]
        args = typing.get_args(hint)
        if hint is Path or (Path in args and type(None) in args and len(args) == 2):
            found[field.name] = False
        elif typing.get_origin(hint) in (tuple, collections.abc.Sequence) and args and args[0] is Path:
            found[field.name] = True
    return found


def _paths_of(value: Any, many: bool) -> list[Any]:
    """The paths an option's value holds (text for one is not taken as a list of characters)."""
    if not many:
        return [value]
    return list(value) if isinstance(value, list | tuple) else []


def confine(options: T, root: Path, folder: str, *, base: Path | None = None, fix: str = CLI_FIX) -> T:
    """``options`` with each path option replaced by its real path, once it and the protocol's record folder
    ``folder`` are known to lie inside ``root`` (a relative path starts at ``base``, default the current
    directory); refused (``PathRefused``, nothing read or written) otherwise."""
    record_place(root, folder)
    changes: dict[str, Any] = {}
    options_type: type = type(options)
    for name, many in path_options(options_type).items():
        value = getattr(options, name)
        if value is None:
            continue
        found = [inside_root(root, v, what=f"the {name} option", base=base, fix=fix) for v in _paths_of(value, many)]
        changes[name] = tuple(found) if many else found[0]
    return dataclasses.replace(options, **changes) if changes else options  # type: ignore[type-var]


def rooted_paths(spec: Mapping[str, Any], root: Path, fix: str) -> dict[str, Any]:
    """``spec`` with each path option that is text (or a list of text) taken from ``root`` rather than the
    current directory and checked to lie inside it: a client names files relative to the work root."""
    options_type = registry.get(caller_keys(spec).get("protocol")).driver.load().options_type
    found = dict(spec)
    for name, many in path_options(options_type).items():
        values = _paths_of(spec[name], many) if name in spec else []
        if values and all(isinstance(v, str) for v in values):
            rooted = [str(inside_root(root, v, what=f"the {name} option", base=root, fix=fix)) for v in values]
            found[name] = rooted if many else rooted[0]
    return found


def build_driver(
    spec: Mapping[str, Any], root: Path, started: str, spec_for: Callable[[str], str] | None = None
) -> Driver:
    """Start the record ``spec`` describes; ``spec_for(role)`` names each role's agent where the record keeps it."""
    cls, options = _options(spec)
    # Options whose record names each participant's model (the duel's, the Agora's) take the chosen specs.
    if spec_for is not None and "models" not in spec and hasattr(options, "with_models"):
        options = options.with_models(spec_for)
    return cls.start(root, confine(options, root, registry.get(caller_keys(spec).get("protocol")).folder), started)


def _options(spec: Mapping[str, Any]) -> tuple[type[Driver], Any]:
    """The driver class of ``spec``'s protocol and its options, validated; nothing is written."""
    protocol = caller_keys(spec).get("protocol")
    cls = registry.get(protocol).driver.load()
    options_type = cls.options_type
    names = {field.name for field in dataclasses.fields(options_type)}
    unknown = sorted(set(spec) - names - NOT_OPTIONS)
    if unknown:
        raise UserError(
            f"{protocol} has no option(s) {', '.join(unknown)}; its options are {', '.join(sorted(names))}."
        )
    given = {key: _frozen(value) for key, value in spec.items() if key in names}
    try:
        options = _options_adapter(options_type).validate_python(given)
    except ValidationError as exc:
        raise _spec_error(exc, f"the {protocol} option ") from None
    return cls, options

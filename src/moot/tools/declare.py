"""Agent tools declared once: what a :class:`moot.plugin.Tool`'s arguments are, read from its function.

An argument is a keyword parameter of the tool's function annotated ``Annotated[T, Field(description=...)]``;
a parameter without a described ``Field`` is the function's own (filled by a door, or left at its default).
The argument model is built once from those parameters, as pydantic-ai builds a tool's schema from its
signature, and both doors are generated from it: the command ``moot PROTOCOL TOOL`` (:mod:`moot.cli.tool_app`)
and the MCP tool (:mod:`moot.mcp.agent_tools`). Two markers in the ``Annotated`` say what differs between the
doors: :class:`Cli` (how the argument reads on the command line) and :data:`SECRET` (the seat's secret, which an
MCP connection keeps for the seats it took).

This module imports only pydantic, so that an agent's every-turn command stays fast.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo

if TYPE_CHECKING:
    from moot.plugin import Tool

# The agent tools every protocol shares (``moot emit``, ``moot events``; the MCP tool ``emit``).
SHARED = "moot.tools.events:TOOLS"
RESOURCE_SCHEME = "moot"


@dataclass(frozen=True)
class Cli:
    """How an argument reads on the command line beyond ``--its-name``.

    - ``flag``: the option's name when it is not ``--`` and the argument's name in kebab-case.
    - ``envvar``: the environment variable read when the option is not given (an empty one counts as unset).
    - ``file``: the option names a file (``-`` for stdin) whose text is the argument; this says what the file
      is in a refusal ("turn file").
    - ``file_name``: with ``file``, the function's parameter that gets the file's name (to locate violations).
    - ``here``: a path, taken relative to the current directory (the command line's, not the work root's).
    """

    flag: str | None = None
    envvar: str | None = None
    file: str | None = None
    file_name: str | None = None
    here: bool = False


class _Secret:
    def __repr__(self) -> str:
        return "SECRET"


# Marks the seat's secret: an MCP tool that requires a seat the connection took does not take it (the
# connection keeps its seats' secrets); the command line reads it from the option or its variable.
SECRET = _Secret()


@dataclass(frozen=True)
class Argument:
    """One argument of a tool, as both doors read it."""

    name: str
    annotation: Any  # the type, without Annotated
    field: FieldInfo  # its description and constraints
    metadata: tuple[Any, ...]  # everything else in its Annotated (WithJsonSchema, constraints, markers)
    default: Any  # inspect.Parameter.empty when the argument must be given
    cli: Cli

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty

    @property
    def optional(self) -> bool:
        """Whether None is a value it takes (the command line may then leave it out)."""
        return type(None) in typing.get_args(self.annotation)

    @property
    def secret(self) -> bool:
        return any(item is SECRET for item in self.metadata)

    @property
    def flag(self) -> str:
        return self.cli.flag or "--" + self.name.replace("_", "-")

    @property
    def description(self) -> str:
        return self.field.description or ""


@functools.cache
def arguments_of(function: Callable[..., Any]) -> tuple[Argument, ...]:
    """The arguments of a tool's function, in the order of its parameters."""
    namespace = inspect.unwrap(function).__globals__
    found = []
    for param in inspect.signature(function).parameters.values():
        if param.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue  # the workspace: its type (and the result's) may be imported for type checking only
        hint = eval(param.annotation, namespace) if isinstance(param.annotation, str) else param.annotation
        if typing.get_origin(hint) is not Annotated:
            continue
        base, *metadata = typing.get_args(hint)
        described = [m for m in metadata if isinstance(m, FieldInfo) and m.description]
        if not described:
            continue
        cli = next((m for m in metadata if isinstance(m, Cli)), Cli())
        rest = tuple(m for m in metadata if m is not described[0] and not isinstance(m, Cli))
        found.append(Argument(param.name, base, described[0], rest, param.default, cli))
    return tuple(found)


@functools.cache
def argument_model(function: Callable[..., Any]) -> type[BaseModel]:
    """The pydantic model of a tool's arguments (its JSON schema is the MCP tool's input schema)."""
    fields: dict[str, Any] = {}
    for arg in arguments_of(function):
        hint = typing.Annotated.__class_getitem__((arg.annotation, *arg.metadata, arg.field))  # type: ignore[attr-defined]
        fields[arg.name] = (hint, ... if arg.required else arg.default)
    name = "".join(part.title() for part in function.__name__.split("_")) + "Arguments"
    return create_model(name, **fields)


def call_values(tool: Tool, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` checked against the tool's argument model (a :class:`pydantic.ValidationError` if they do not
    fit), as the keyword arguments of its function. An empty text for an argument that may be None means it
    was not given, as a model or a shell passes it."""
    given = {name: None if value == "" and _optional(tool, name) else value for name, value in values.items()}
    if not any(_checked(arg, given) for arg in arguments_of(tool.function)):
        return given  # plain values of their plain types: building the model would check nothing more
    model = argument_model(tool.function).model_validate(given)
    return {name: getattr(model, name) for name in type(model).model_fields}


_PLAIN = (str, int, float, bool)


def _checked(arg: Argument, given: dict[str, Any]) -> bool:
    """Whether the model checks more of the argument than its plain type: a missing argument, a constraint, a
    choice, a list, an object, or a value of another type than the one declared."""
    if arg.name not in given:
        return arg.required
    value = given[arg.name]
    if value is None:
        return not arg.optional
    kinds = [t for t in typing.get_args(arg.annotation) if t is not type(None)] or [arg.annotation]
    return bool(arg.field.metadata or arg.metadata) or not any(k in _PLAIN and type(value) is k for k in kinds)


def _optional(tool: Tool, name: str) -> bool:
    return any(arg.name == name and arg.optional for arg in arguments_of(tool.function))


def exports(tool: Tool) -> dict[str, str]:
    """The fields of ``tool``'s answer that later calls read from an environment variable: field -> variable. Of
    its result's fields (none when its result type cannot be read without importing more), and the seat's secret
    a tool adds when it takes a seat moot keeps (:func:`moot_keeps_seat`)."""
    found = dict(_result_exports(tool.function))
    if takes_kept_seat(tool):
        found[SECRET_FIELD] = SECRET_ENV
    return found


@functools.cache
def _result_exports(function: Callable[..., Any]) -> dict[str, str]:
    hint = inspect.signature(function).return_annotation
    try:
        result = eval(hint, inspect.unwrap(function).__globals__) if isinstance(hint, str) else hint
    except NameError:
        return {}
    fields = getattr(result, "model_fields", {})
    found = {}
    for name, alias in _EXPORTED.items():
        cli = next(m for m in typing.get_args(alias) if isinstance(m, Cli))
        if name in fields and cli.envvar:
            found[name] = cli.envvar
    return found


def moot_keeps_seat(tool: Tool) -> bool:
    """Whether moot keeps the seat ``tool`` acts in (:func:`moot.tools.seats.kept_seat`): a seat its declaration
    names whose secrets the tools do not keep themselves (a plugin's)."""
    return tool.seat is not None and tool.seat.of is not None and not tool.seat.own_secrets


def takes_kept_seat(tool: Tool) -> bool:
    """Whether ``tool`` takes a seat moot keeps, and so answers with the seat's secret once."""
    return moot_keeps_seat(tool) and tool.seat is not None and tool.seat.takes


def declares_secret(tool: Tool) -> bool:
    """Whether ``tool``'s function takes a ``participant_secret`` argument of its own."""
    return any(arg.name == SECRET_FIELD for arg in arguments_of(tool.function))


def mcp_name(protocol: str | None, tool: Tool) -> str:
    """The MCP tool's name: ``PROTOCOL_NAME`` (the shared tools: ``NAME``), unless the tool names its own."""
    if tool.mcp_name:
        return tool.mcp_name
    snake = tool.name.replace("-", "_")
    return f"{protocol}_{snake}" if protocol else snake


def description(tool: Tool) -> str:
    """The tool's description: its function's docstring."""
    return inspect.cleandoc(tool.function.__doc__ or "")


def resource_uri(folder: str, name: str) -> str:
    """How the MCP server names the record ``name`` in ``folder`` as a resource."""
    return f"{RESOURCE_SCHEME}://{folder}/{name}"


# --- arguments several protocols share ------------------------------------------------------------

LeaseToken = Annotated[
    str | None,
    Field(description="The lease_token your claim returned (it is the write credential)."),
    Cli(envvar="MOOT_LEASE_TOKEN"),
]
Fencing = Annotated[
    int | None,
    Field(description="Optional: the fencing_token your claim returned; checked with the lease."),
]
Ttl = Annotated[
    float,
    Field(description="How long the lease lasts, in seconds (default 900).", gt=0),
    Cli(envvar="MOOT_LEASE_SECONDS"),
]
SECRET_FIELD = "participant_secret"  # in an answer that returns a seat's secret, and the argument that gives it back
SECRET_ENV = "MOOT_PARTICIPANT_SECRET"  # where the command line reads it
ParticipantSecret = Annotated[
    str | None,
    Field(
        description="Your seat's secret, which your first join or claim returned once; only to take back your "
        "seat elsewhere (another connection, another OS user): moot keeps it for whoever took the seat."
    ),
    Cli(envvar=SECRET_ENV),
    SECRET,
]
Harness = Annotated[str, Field(description="Your agent host: claude-code, codex, …")]

# The answers later calls read from the environment: a field of a tool's result named like one of these
# arguments is what the command line's ``--export`` prints as a shell assignment of the argument's variable.
_EXPORTED = {"lease_token": LeaseToken, SECRET_FIELD: ParticipantSecret}
ModelId = Annotated[str, Field(description="Your model, recorded with what you write.")]
RunId = Annotated[str, Field(description="Your workflow run id (any stable id for this session of work).")]

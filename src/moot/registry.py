"""The protocol registry: every protocol, moot's own included, is one :class:`ProtocolPlugin` registered under
the entry-point group ``moot.protocols``. The commands, ``moot check`` detection, ``moot rules``, ``moot show``,
the workspace folders and the MCP tools all read it; nothing else lists the protocols.

A package adds a protocol with one entry point (see README, "Writing a protocol")::

    [project.entry-points."moot.protocols"]
    pingpong = "pingpong:PLUGIN"

The entry point loads only the plugin, which is plain data; each part it names as ``"module:attribute"`` is
imported when it is first used, so ``moot --help`` imports no protocol.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from moot.core.files import CheckReport
    from moot.core.machine import RuleBook
    from moot.engine.driver import Driver

ENTRY_POINT_GROUP = "moot.protocols"
OWN_DISTRIBUTION = "moot"
# Files a record directory holds (a roundtable meeting's speeches and turn.json); others are not checked.
DIRECTORY_RECORD_SUFFIXES = frozenset({".md", ".json"})


def load(ref: str) -> Any:
    """The object ``"package.module:attribute"`` names, importing its module now."""
    module, _, attribute = ref.partition(":")
    found: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        found = getattr(found, part)
    return found


@dataclass(frozen=True)
class ProtocolPlugin:
    """One protocol. The parts that name code (``rules`` to ``mcp_tools``) are ``"module:attribute"`` references.

    - ``name``: the protocol's name (``moot run NAME``, ``moot rules NAME``, the records' ``protocol``).
    - ``folder``: where its records live under the work root (``debates``, ``.dialogues``, …).
    - ``title`` / ``marker``: detection. A file record starts with the line ``title``; a directory record
      holds the file ``marker``. Give one of the two.
    - ``rules``: its rule books (``RuleBook``), the protocol's own first, then e.g. its record format's.
    - ``config``: its configuration model; ``machine``: its pure state machine (``DeliberationProtocol``).
    - ``record``: its record format module, which provides ``check(path) -> CheckReport`` (parse, render and
      the crash-safe write are the driver's to call).
    - ``driver``: its engine driver class (``moot.engine.driver.Driver``), with ``options_type``.
    - ``command``: the ``moot run NAME`` typer command (``moot.cli.run`` has the options every protocol shares).
    - ``documents``: what ``moot show`` prints, ``(path) -> [(title, markdown)]``; default: the record file.
    - ``tool_commands``: a typer app of agent-tool commands, served as ``moot NAME …``; ``mcp_tools``: its MCP
      tools as ``(function, ToolAnnotations)`` pairs.
    - ``view``: the panels ``moot serve`` and ``moot export`` show beside a record's state (its plots),
      ``(path, text) -> [moot.web.views.Panel]``; ``turn_heading``: the start of the line that opens a turn in
      a file record, where the viewer marks turns and places violations located by turn.
    """

    name: str
    folder: str
    rules: tuple[str, ...]
    config: str
    machine: str
    record: str
    driver: str
    command: str
    title: str | None = None
    marker: str | None = None
    documents: str | None = None
    tool_commands: str | None = None
    mcp_tools: str | None = None
    view: str | None = None
    turn_heading: str | None = None

    def __post_init__(self) -> None:
        if (self.title is None) == (self.marker is None):
            raise ValueError(f"protocol {self.name!r} needs exactly one of title (file records) or marker (folders)")

    def rule_books(self) -> list[RuleBook]:
        return [load(ref) for ref in self.rules]

    def driver_class(self) -> type[Driver]:
        cls: type[Driver] = load(self.driver)
        return cls

    def check(self, path: Path) -> CheckReport:
        report: CheckReport = load(self.record).check(path)
        return report

    def shown(self, path: Path) -> list[tuple[str, str]] | None:
        """``moot show``'s documents, or None when the record is its one file."""
        if self.documents is None:
            return None
        show: Callable[[Path], list[tuple[str, str]]] = load(self.documents)
        return show(path)

    def record_directory(self, path: Path) -> Path | None:
        """The directory record ``path`` names (the directory itself, or a file inside it), if this is one."""
        if self.marker is None:
            return None
        directory = path if path.is_dir() else path.parent
        if not (directory / self.marker).exists():
            return None
        return directory if path.is_dir() or path.suffix in DIRECTORY_RECORD_SUFFIXES else None

    def holds_file(self, first_line: str) -> bool:
        """Whether a file whose first non-blank line is ``first_line`` is one of this protocol's records."""
        return self.title is not None and first_line.startswith(self.title)


def _ordered(points: Iterable[EntryPoint]) -> list[EntryPoint]:
    """moot's own protocols first, then the others, each by name; of two with one name the first wins."""
    return sorted(points, key=lambda p: (p.dist is None or p.dist.name != OWN_DISTRIBUTION, p.name))


NOT_INSTALLED = "no protocol is registered: moot's entry points are missing; reinstall moot (pip install -e .)."


def unloadable(name: str, ref: str, exc: BaseException) -> str:
    """The sentence for a protocol whose part ``ref`` cannot be imported; moot runs on without it."""
    return f"the protocol {name} ({ref}) cannot be loaded ({exc!r}); fix or uninstall the package that provides it."


@functools.cache
def _registry() -> tuple[dict[str, ProtocolPlugin], tuple[str, ...]]:
    from importlib.metadata import entry_points  # read only when a protocol is first looked up

    found: dict[str, ProtocolPlugin] = {}
    problems: list[str] = []
    for point in _ordered(entry_points(group=ENTRY_POINT_GROUP)):
        if point.name in found:
            continue
        try:
            plugin = point.load()
        except Exception as exc:
            problems.append(unloadable(point.name, point.value, exc))
            continue
        if not isinstance(plugin, ProtocolPlugin) or plugin.name != point.name:
            problems.append(
                f"the entry point {point.name} = {point.value} is not a ProtocolPlugin named {point.name!r}; fix or "
                "uninstall the package that provides it."
            )
            continue
        found[point.name] = plugin
    if not found:
        problems.append(NOT_INSTALLED)
    return found, tuple(problems)


def protocols() -> dict[str, ProtocolPlugin]:
    """Every registered protocol that loads, by name, moot's own first."""
    return _registry()[0]


def problems() -> tuple[str, ...]:
    """Why registered protocols were left out, one sentence each (empty when all loaded)."""
    return _registry()[1]


def names_sentence() -> str:
    """The protocols' names as a phrase for help texts: ``critique, duel, agora or roundtable``."""
    *rest, last = protocols() or [""]
    return f"{', '.join(rest)} or {last}" if rest else last


def get(name: object) -> ProtocolPlugin:
    """The protocol called ``name``; an unknown name is a user error that lists the known ones."""
    from moot.errors import UserError

    if not protocols():
        raise UserError(NOT_INSTALLED)
    plugin = protocols().get(name) if isinstance(name, str) else None
    if plugin is None:
        raise UserError(f"protocol {name!r} is unknown; use one of {', '.join(protocols())}.")
    return plugin


def folders() -> frozenset[str]:
    """The folders under a work root that hold records."""
    return frozenset(plugin.folder for plugin in protocols().values())

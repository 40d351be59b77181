"""The protocol registry: every protocol, moot's own included, is one :class:`moot.plugin.Protocol` registered
under the entry-point group ``moot.protocols``. Nothing else in moot lists the protocols.

Loading an entry point imports only the package that holds the plugin object (plain data); a plugin that
cannot be loaded is left out with one sentence saying why (:func:`problems`), and the others work on.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING

from moot.errors import UserError

if TYPE_CHECKING:
    from moot.plugin import Protocol

ENTRY_POINT_GROUP = "moot.protocols"
OWN_DISTRIBUTION = "moot"

NOT_INSTALLED = "no protocol is registered: moot's entry points are missing; reinstall moot (pip install -e .)."


def unloadable(name: str, ref: str, exc: BaseException) -> str:
    """The sentence for a protocol whose part ``ref`` cannot be imported; moot runs on without it."""
    return f"the protocol {name} ({ref}) cannot be loaded ({exc!r}); fix or uninstall the package that provides it."


def broken_part(name: str, exc: Exception) -> str:
    """The sentence for a part of the installed protocol ``name`` that cannot be loaded (a ``PluginError``)."""
    return f"the protocol {name}: {exc}; fix or uninstall {distribution(name)}."


def _ordered(points: list[EntryPoint]) -> list[EntryPoint]:
    """moot's own protocols first, then the others, each by name; of two with one name the first wins."""
    return sorted(points, key=lambda p: (p.dist is None or p.dist.name != OWN_DISTRIBUTION, p.name))


def entry_points() -> list[EntryPoint]:
    """The registered entry points, in the order moot lists them (their names need no import)."""
    from importlib.metadata import entry_points as found

    return _ordered(list(found(group=ENTRY_POINT_GROUP)))


@functools.cache
def _registry() -> tuple[dict[str, Protocol], dict[str, tuple[str, str]], tuple[str, ...]]:
    from moot.plugin import Protocol

    protocols: dict[str, Protocol] = {}
    sources: dict[str, tuple[str, str]] = {}  # name -> (distribution, version)
    problems: list[str] = []
    for point in entry_points():
        if point.name in protocols:
            continue
        try:
            plugin = point.load()
        except Exception as exc:
            problems.append(unloadable(point.name, point.value, exc))
            continue
        if not isinstance(plugin, Protocol) or plugin.name != point.name:
            problems.append(
                f"the entry point {point.name} = {point.value} is not a moot.plugin.Protocol named {point.name!r}; "
                "fix or uninstall the package that provides it."
            )
            continue
        protocols[point.name] = plugin
        sources[point.name] = (
            (point.dist.name, point.dist.version) if point.dist is not None else ("unknown", "unknown")
        )
    if not protocols:
        problems.append(NOT_INSTALLED)
    return protocols, sources, tuple(problems)


def protocols() -> dict[str, Protocol]:
    """Every registered protocol that loads, by name, moot's own first."""
    return _registry()[0]


def version(name: str) -> str:
    """The version of the distribution that provides the protocol ``name``."""
    return _registry()[1].get(name, ("unknown", "unknown"))[1]


def distribution(name: str) -> str:
    """The name of the distribution (the installed package) that provides the protocol ``name``."""
    return _registry()[1].get(name, ("unknown", "unknown"))[0]


def problems() -> tuple[str, ...]:
    """Why registered protocols were left out, one sentence each (empty when all loaded)."""
    return _registry()[2]


def names_sentence() -> str:
    """The protocols' names as a phrase for help texts: ``critique, duel, agora or roundtable``."""
    *rest, last = protocols() or [""]
    return f"{', '.join(rest)} or {last}" if rest else last


def get(name: object) -> Protocol:
    """The protocol called ``name``; an unknown name is a user error that lists the known ones."""
    if not protocols():
        raise UserError(NOT_INSTALLED)
    plugin = protocols().get(name) if isinstance(name, str) else None
    if plugin is None:
        raise UserError(f"protocol {name!r} is unknown; use one of {', '.join(protocols())}.")
    return plugin


def folders() -> frozenset[str]:
    """The folders under a work root that hold records."""
    return frozenset(plugin.folder for plugin in protocols().values())

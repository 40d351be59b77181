"""moot: structured deliberations between LLMs, coding agents and people, with enforced rules.

The supported Python surface is what ``__all__`` names: check a record, look up the installed protocols, the
contract a protocol package implements, and the errors to catch. Each name is imported on first use, so
``import moot`` (and ``moot --help``) stays cheap. A protocol author imports from :mod:`moot.plugin`.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> where it is defined ("module:attribute")
_PUBLIC = {
    "check_path": "moot.detect:check_path",  # check_path(path) -> CheckReport: detect the protocol, replay the record
    "CheckReport": "moot.core.files:CheckReport",
    "installed_protocols": "moot.registry:protocols",  # installed_protocols() -> {name: Protocol}, moot's own first
    "Protocol": "moot.plugin:Protocol",
    "MootError": "moot.errors:MootError",
    "UserError": "moot.errors:UserError",
    "PluginError": "moot.errors:PluginError",
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        module, _, attribute = _PUBLIC[name].partition(":")
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CheckReport",
    "MootError",
    "PluginError",
    "Protocol",
    "UserError",
    "__version__",
    "check_path",
    "installed_protocols",
]

"""The four seed protocols and the Council as pure state machines. Nothing here does I/O or reads a clock."""

from __future__ import annotations

import importlib
from types import ModuleType

PROTOCOL_NAMES = ("critique", "duel", "agora", "roundtable", "council")


def protocol_module(name: str) -> ModuleType:
    """The module of a protocol by name (imported only when asked for)."""
    if name not in PROTOCOL_NAMES:
        raise KeyError(f"unknown protocol {name!r}; choose one of {', '.join(PROTOCOL_NAMES)}")
    return importlib.import_module(f"moot.protocols.{name}")

"""The engine: one async loop (``loop.Engine``) that drives any protocol's ``Driver`` with any agents."""

from __future__ import annotations

import importlib

from moot.engine.driver import Driver

# protocol name -> (module, driver class); imported only when a protocol is run.
DRIVERS = {
    "critique": ("moot.engine.critique", "CritiqueDriver"),
    "duel": ("moot.engine.duel", "DuelDriver"),
    "agora": ("moot.engine.agora", "AgoraDriver"),
    "roundtable": ("moot.engine.roundtable", "RoundtableDriver"),
    "council": ("moot.engine.council", "CouncilDriver"),
}


def driver_class(protocol: str) -> type[Driver]:
    module, name = DRIVERS[protocol]
    cls: type[Driver] = getattr(importlib.import_module(module), name)
    return cls

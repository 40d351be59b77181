"""The engine: one async loop (``loop.Engine``) that drives any protocol's ``Driver`` with any agents.

Each protocol names its driver in the registry (:mod:`moot.registry`); it is imported only when run.
"""

from __future__ import annotations

from moot.engine.driver import Driver

__all__ = ["Driver"]

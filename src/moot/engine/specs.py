"""A debate described as plain data (a batch line, a benchmark case) -> a started driver.

``{"protocol": "critique", "topic": "…", "max_rounds": 2}``: ``protocol`` picks the driver, and the
other keys that name fields of that driver's options become those options. Keys for the agents
(``agent``, ``agents``), the work root and the budgets are read by the caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from moot.engine import DRIVERS, driver_class
from moot.engine.driver import Driver
from moot.errors import UserError

NOT_OPTIONS = {"protocol", "agent", "agents", "root", "repairs"}


def _frozen(value: Any) -> Any:
    """JSON lists become tuples, as the options' fields expect (e.g. roles, positions)."""
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


def build_driver(spec: Mapping[str, Any], root: Path, started: str) -> Driver:
    protocol = spec.get("protocol")
    if protocol not in DRIVERS:
        raise UserError(f"protocol {protocol!r} is unknown; use one of {', '.join(DRIVERS)}.")
    cls = driver_class(str(protocol))
    options_type = cls.options_type
    names = {field.name for field in dataclasses.fields(options_type)}
    unknown = sorted(set(spec) - names - NOT_OPTIONS)
    if unknown:
        raise UserError(
            f"{protocol} has no option(s) {', '.join(unknown)}; its options are {', '.join(sorted(names))}."
        )
    try:
        options = options_type(**{key: _frozen(value) for key, value in spec.items() if key in names})
    except TypeError as exc:
        raise UserError(f"the {protocol} options are incomplete ({exc}); add the missing keys.") from exc
    return cls.start(root, options, started)

"""Where the ledger is, told without opening it (and without importing it: ``moot resume`` asks on every run).

The ledger is ``$MOOT_DATABASE_URL`` when set, else the SQLite file ``<work root>/.moot/moot.db``.
"""

from __future__ import annotations

import os
from pathlib import Path

DATABASE_ENV = "MOOT_DATABASE_URL"

DEFAULT_DB = Path(".moot") / "moot.db"
"""The SQLite ledger's place under a work root."""


def configured(root: Path) -> bool:
    """True when a ledger is set for ``root``: the shared database, or its SQLite file already exists."""
    return bool(os.environ.get(DATABASE_ENV)) or (root / DEFAULT_DB).is_file()

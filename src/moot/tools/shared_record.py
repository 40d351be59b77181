"""Whether a record on this host is a debate the ledger shares across hosts, for ``moot resume``.

A duel, meeting or dialogue that the agent tools share through the ledger takes its turns there; an engine
appending to the local file would leave the other hosts behind. So before resuming, the local record is
brought up to date from the ledger and the way to continue it is named. A work root without a ledger
(no ``$MOOT_DATABASE_URL``, no ``.moot/moot.db``) opens and creates nothing.
"""

from __future__ import annotations

from pathlib import Path

from moot import registry
from moot.core import ledger_place
from moot.tools.workspace import open_workspace


def shared_turns(protocol: str, path: Path, root: Path) -> str | None:
    """How to continue the record at ``path`` (work root ``root``) if the ledger shares it, after syncing it;
    ``None`` for a record the ledger does not hold (or when no ledger is configured)."""
    reference = registry.get(protocol).sharing
    if reference is None or not ledger_place.configured(root.resolve()):
        return None
    sharing = reference.load()
    with open_workspace(root) as ws:
        if not sharing.held(ws, path.resolve()):
            return None
    return sharing.continue_with

"""Whether a record on this host is a debate the ledger shares across hosts, for ``moot resume``.

A duel, meeting or dialogue that the agent tools share through the ledger takes its turns there; an engine
appending to the local file would leave the other hosts behind. So before resuming, the local record is
brought up to date from the ledger and the way to continue it is named. A work root without a ledger
(no ``$MOOT_DATABASE_URL``, no ``.moot/moot.db``) opens and creates nothing.
"""

from __future__ import annotations

from pathlib import Path

from moot.core import ledger_place
from moot.core.files import read_text
from moot.ledger import NotFoundError
from moot.protocols.critique import PLUGIN as CRITIQUE
from moot.protocols.critique import tools as critique
from moot.protocols.duel import PLUGIN as DUEL
from moot.protocols.duel import record
from moot.protocols.duel import tools as duel
from moot.protocols.roundtable import PLUGIN as ROUNDTABLE
from moot.protocols.roundtable import tools as roundtable
from moot.tools.errors import ToolError
from moot.tools.workspace import Workspace, open_workspace

# How the participants of each shared protocol continue: through the agent tools, which take turns in the ledger.
CONTINUE_WITH = {
    DUEL.name: "moot duel claim-lock, append and release-lock",
    ROUNDTABLE.name: "moot roundtable take-floor, speak and release",
    CRITIQUE.name: "moot critique claim, append and release",
}


def _duel_known(ws: Workspace, path: Path) -> bool:
    text, _ = read_text(path)
    document = record.parse_document(text, str(path))[0] if text is not None else None
    if document is None or not document.record.config.duel_id:
        return False
    try:
        debate = ws.ledger.get_debate(document.record.config.duel_id)
    except NotFoundError:
        return False
    try:
        if duel._artifact_path(ws, debate).resolve() != path.resolve():
            return False  # the same id in another file: not this record
    except ToolError:
        return False
    duel._sync(ws, debate)
    return True


def _known(ws: Workspace, protocol: str, path: Path) -> bool:
    """True when the ledger holds the record at ``path``; it is then brought up to date from the ledger."""
    if protocol == DUEL.name:
        return _duel_known(ws, path)
    if protocol == ROUNDTABLE.name:
        if roundtable._debate(ws, path) is None:
            return False
        roundtable._sync(ws, path)
        return True
    if protocol == CRITIQUE.name:
        if critique._debate(ws, path, closed=True) is None:
            return False
        critique._sync(ws, path)
        return True
    return False


def shared_turns(protocol: str, path: Path, root: Path) -> str | None:
    """How to continue the record at ``path`` (work root ``root``) if the ledger shares it, after syncing it;
    ``None`` for a record the ledger does not hold (or when no ledger is configured)."""
    if protocol not in CONTINUE_WITH:
        return None
    if not ledger_place.configured(root.resolve()):
        return None
    with open_workspace(root) as ws:
        if not _known(ws, protocol, path.resolve()):
            return None
    return CONTINUE_WITH[protocol]

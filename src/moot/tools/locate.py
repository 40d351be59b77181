"""Which work root a debate id belongs to, for commands that name only the id.

The seed's agents run ``status --duel-id X`` (and claim-lock, refresh-lock, release-lock) without any root,
from wherever they happen to be. Without ``--root`` or ``$MOOT_ROOT``, moot looks in this order:

1. the current directory and each of its parents, like git: the first whose ``.moot/moot.db`` knows the id;
2. the per-user index of the debates this user joined: ``$XDG_STATE_HOME/moot/debates.jsonl`` (default
   ``~/.local/state/moot/``), one JSON line ``{"id": …, "root": …}`` appended by each join that created a
   debate, so that an agent anywhere else on the machine still finds its work root.

With ``$MOOT_DATABASE_URL`` (one shared ledger) the id is always known there; the index still names its work
root, else the current directory is the root. A lookup that finds nothing opens no ledger and creates
nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from moot.core.files import append_log_line
from moot.core.ledger_place import DATABASE_ENV
from moot.core.user_state import state_dir
from moot.errors import BadInput, NotFoundError
from moot.ledger import Clock
from moot.ledger.factory import ledger_path
from moot.tools.errors import shown
from moot.tools.workspace import Workspace, open_workspace

INDEX_NAME = "debates.jsonl"


def index_path() -> Path:
    """``$XDG_STATE_HOME/moot/debates.jsonl``, else ``~/.local/state/moot/debates.jsonl``."""
    return state_dir() / INDEX_NAME


def remember(debate_id: str, root: Path) -> None:
    """Add a created debate to the per-user index (best effort: an unwritable home loses only the shortcut)."""
    with contextlib.suppress(OSError):
        append_log_line(index_path(), json.dumps({"id": debate_id, "root": str(root)}))


def indexed_root(debate_id: str) -> Path | None:
    """The work root the index names for ``debate_id`` (the latest line wins), if it still exists."""
    try:
        lines = index_path().read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line a crash cut short
        if isinstance(row, dict) and row.get("id") == debate_id and isinstance(row.get("root"), str):
            root = Path(row["root"])
            return root if root.is_dir() else None
    return None


def _knows(root: Path, debate_id: str, clock: Clock | None) -> Workspace | None:
    """The workspace at ``root`` if its own ledger exists and holds ``debate_id`` (never creates one)."""
    if not ledger_path(root).is_file():
        return None
    workspace = open_workspace(root, clock=clock)
    try:
        workspace.ledger.get_debate(debate_id)
    except NotFoundError:
        workspace.close()
        return None
    return workspace


def open_for_debate(
    debate_id: str, root: str | os.PathLike[str] | None = None, *, clock: Clock | None = None
) -> Workspace:
    """The workspace that holds ``debate_id``: ``root`` if given, else found as the module says."""
    if root is not None:
        where = Path(root)
        if not os.environ.get(DATABASE_ENV) and where.is_dir() and not ledger_path(where.resolve()).is_file():
            raise BadInput(
                f"{where} has no moot ledger (.moot/moot.db), so it holds no debate {shown(debate_id)!r}; pass "
                "--root with the work root that join used.",
                rule="TOOLS_BAD_INPUT",
            )
        return open_workspace(where, clock=clock)
    if os.environ.get(DATABASE_ENV):
        return open_workspace(indexed_root(debate_id) or Path.cwd(), clock=clock)
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        found = _knows(folder, debate_id, clock)
        if found is not None:
            return found
    indexed = indexed_root(debate_id)
    found = _knows(indexed, debate_id, clock) if indexed is not None else None
    if found is not None:
        return found
    raise BadInput(
        f"No debate with id {shown(debate_id)!r} is in a moot ledger in {here}, its parents or the debates "
        f"you joined ({index_path()}); use the duel id join printed, or pass --root with its work root.",
        rule="TOOLS_BAD_INPUT",
    )

"""The debate artifacts as MCP resources (``moot://debates/{name}``) and the ``read_debate`` answer.

Only regular Markdown files directly under ``<root>/debates/`` are listed or read; names go through
:meth:`Workspace.inside`, which refuses ``..``, absolute paths and symbolic links (:mod:`moot.paths`).
"""

from __future__ import annotations

from pathlib import Path

from mcp_types import Resource
from pydantic import BaseModel, ConfigDict

from moot.core.files import read_text
from moot.paths import PathRefused, record_place
from moot.protocols.duel import PLUGIN as DUEL
from moot.protocols.duel import tools as duel
from moot.protocols.duel.tools import ArtifactView
from moot.tools import BadInput, Workspace
from moot.tools.errors import refused_by

SCHEME = "moot"
DEBATE_TEMPLATE = f"{SCHEME}://{DUEL.folder}/{{name}}"
MARKDOWN = "text/markdown"


def debate_uri(path: Path) -> str:
    return f"{SCHEME}://{DUEL.folder}/{path.name}"


def debate_files(root: Path) -> list[Path]:
    """The artifacts under ``<root>/debates/``, by name; links and directories are left out, and so is all of
    ``debates/`` when it is a link (:mod:`moot.paths`)."""
    try:
        folder = record_place(root, DUEL.folder)
    except PathRefused:
        return []
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.md") if p.is_file() and not p.is_symlink())


def listed(root: Path) -> list[Resource]:
    return [
        Resource(uri=debate_uri(path), name=path.name, title=path.stem, mime_type=MARKDOWN)
        for path in debate_files(root)
    ]


def read_artifact(ws: Workspace, name: str) -> str:
    """The text of ``debates/<name>``; refused (a ``ToolError``) when unsafe, missing or not UTF-8."""
    path = ws.inside(DUEL.folder, f"{DUEL.folder}/{name}")
    if path.parent != ws.root / DUEL.folder or not path.is_file():
        raise BadInput(
            f"There is no debate artifact {name!r} under {ws.root / DUEL.folder}; list the resources for the names.",
            rule="TOOLS_BAD_INPUT",
        )
    text, problems = read_text(path)
    if text is None:
        raise refused_by(problems)
    return text


class DebateText(BaseModel):
    """``read_debate``: the artifact's text and what moot's check says about it."""

    model_config = ConfigDict(frozen=True)

    duel_id: str
    debate_path: str
    resource_uri: str
    exists: bool
    text: str
    artifact: ArtifactView


def read_debate(ws: Workspace, duel_id: str) -> DebateText:
    found = duel.status(ws, duel_id=duel_id)
    path = Path(found.debate_path)
    exists = found.artifact.exists
    return DebateText(
        duel_id=found.duel_id,
        debate_path=str(path),
        resource_uri=debate_uri(path),
        exists=exists,
        text=read_artifact(ws, path.name) if exists else "",
        artifact=found.artifact,
    )

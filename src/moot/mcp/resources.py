"""The debate artifacts as MCP resources (``moot://debates/{name}``).

Only regular Markdown files directly under ``<root>/debates/`` are listed or read; names go through
:meth:`Workspace.inside`, which refuses ``..``, absolute paths and symbolic links (:mod:`moot.paths`).
"""

from __future__ import annotations

from pathlib import Path

from mcp_types import Resource

from moot.core.files import read_text
from moot.paths import PathRefused, record_place
from moot.protocols.duel import PLUGIN as DUEL
from moot.tools import BadInput, Workspace
from moot.tools.declare import resource_uri
from moot.tools.errors import refused_by

DEBATE_TEMPLATE = resource_uri(DUEL.folder, "{name}")
MARKDOWN = "text/markdown"


def debate_uri(path: Path) -> str:
    return resource_uri(DUEL.folder, path.name)


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

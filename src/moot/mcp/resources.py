"""The records of every protocol whose records are files, as MCP resources (``moot://<folder>/{name}``: the
duel's under ``moot://debates/``, a critique's under ``moot://.dialogues/``, …).

Only regular Markdown files directly under a protocol's record folder are listed or read; names go through
:meth:`Workspace.inside`, which refuses ``..``, absolute paths and symbolic links (:mod:`moot.paths`). A protocol
whose records are folders (a roundtable's meetings) has none.
"""

from __future__ import annotations

from pathlib import Path

from mcp_types import Resource

from moot import registry
from moot.core.files import read_text
from moot.errors import BadInput, PathRefused
from moot.paths import record_place
from moot.plugin import Protocol
from moot.tools import Workspace
from moot.tools.declare import resource_uri
from moot.tools.errors import refused_by

MARKDOWN = "text/markdown"


def file_protocols() -> list[Protocol]:
    """The registered protocols whose records are Markdown files, in registry order."""
    return [plugin for plugin in registry.protocols().values() if plugin.title is not None]


def template(plugin: Protocol) -> str:
    return resource_uri(plugin.folder, "{name}")


def record_files(root: Path, folder: str) -> list[Path]:
    """The records under ``<root>/<folder>/``, by name; links and directories are left out, and so is all of the
    folder when it is a link (:mod:`moot.paths`)."""
    try:
        place = record_place(root, folder)
    except PathRefused:
        return []
    if not place.is_dir():
        return []
    return sorted(p for p in place.glob("*.md") if p.is_file() and not p.is_symlink())


def listed(root: Path) -> list[Resource]:
    return [
        Resource(uri=resource_uri(plugin.folder, path.name), name=path.name, title=path.stem, mime_type=MARKDOWN)
        for plugin in file_protocols()
        for path in record_files(root, plugin.folder)
    ]


def read_record(ws: Workspace, folder: str, name: str) -> str:
    """The text of ``<folder>/<name>``; refused (a ``ToolError``) when unsafe, missing or not UTF-8."""
    path = ws.inside(folder, f"{folder}/{name}")
    if path.parent != ws.root / folder or not path.is_file():
        raise BadInput(
            f"There is no record {name!r} under {ws.root / folder}; list the resources for the names.",
            rule="TOOLS_BAD_INPUT",
        )
    text, problems = read_text(path)
    if text is None:
        raise refused_by(problems)
    return text

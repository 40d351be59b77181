"""Every record that is a file is an MCP resource under its protocol's folder, read back byte for byte through
the official SDK client; names that leave the folder and linked files are refused or left out."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_helpers import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testing"))
from test_conformance_kit import scenario

from moot.testing import play


def test_records_of_every_file_protocol_are_listed_and_read_and_unsafe_names_are_refused(root: Path) -> None:
    records = [play(scenario(name), root).record for name in ("critique", "agora", "council")]
    outside = root.parent / "secret.md"
    outside.write_text("# not a record\n", encoding="utf-8")
    os.symlink(outside, records[0].parent / "linked.md")  # a link in a record folder is never listed or read

    async def check() -> None:
        async with connect(root) as session:
            listed = {str(r.uri): r for r in (await session.list_resources()).resources}
            expected = {f"moot://{path.parent.name}/{path.name}" for path in records}
            assert set(listed) == expected
            for path in records:
                read = await session.read_resource(f"moot://{path.parent.name}/{path.name}")
                assert read.contents[0].text == path.read_text(encoding="utf-8")  # type: ignore[union-attr]
            for bad in ("linked.md", "..%2Fsecret.md", "missing.md"):
                with pytest.raises(MCPError):
                    await session.read_resource(f"moot://{records[0].parent.name}/{bad}")

    anyio.run(check)

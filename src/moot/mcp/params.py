"""The MCP tool annotations every tool of the server uses: read-only, or writing within the work root."""

from __future__ import annotations

from mcp_types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

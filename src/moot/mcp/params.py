"""What the MCP tools of several protocols share: argument types as an agent reads them, and tool annotations."""

from __future__ import annotations

from typing import Annotated

from mcp_types import ToolAnnotations
from pydantic import Field, WithJsonSchema

LeaseToken = Annotated[str, Field(description="The lease_token your claim returned (it is the write credential).")]
ParticipantSecret = Annotated[
    str,
    Field(
        description="Only to take back your seat from a new connection (after a restart): the participant_secret "
        "your first join returned. Leave empty otherwise; this connection keeps its own seats' secrets."
    ),
]
Ttl = Annotated[float, Field(description="How long the lease lasts, in seconds.", gt=0)]
# Optional arguments are published as their plain type (no anyOf with null): simpler for a model to fill.
Fencing = Annotated[
    int | None,
    WithJsonSchema({"type": "integer"}),
    Field(description="Optional: the fencing_token your claim returned; checked with the lease."),
]

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

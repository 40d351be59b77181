"""Workflow events: rp1's ``agent-tools emit`` (status_change, artifact_registered, btw_update), stored in
the ledger and read back in order. A malformed event is refused whole (``TOOLS_EVENT``); nothing is stored.

:data:`TOOLS` declares ``emit`` for every protocol (``moot emit`` and the MCP tool ``emit``); ``moot events``,
which prints and follows what was stored, is the command line's own.
"""

from __future__ import annotations

import json
import unicodedata
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, WithJsonSchema

from moot.plugin import Tool, ToolSet

if TYPE_CHECKING:
    from moot.tools.models import EventList, EventView
    from moot.tools.workspace import Workspace

DEFAULT_STEP = "unspecified"
# What an agent may emit (rp1's agent-tools emit); the ledger's other event types are the engine's own.
AGENT_EVENT_TYPES = ("status_change", "artifact_registered", "btw_update")


def parse_data(data: str | dict[str, Any] | None) -> dict[str, Any]:
    """``--data`` as given on a command line (JSON text) or by MCP (an object); ``None`` is ``{}``."""
    from moot.errors import BadInput

    if data is None:
        return {}
    if isinstance(data, dict):
        return data
    try:
        decoded = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BadInput(
            f'--data is not valid JSON ({exc}); pass one JSON object, e.g. \'{{"status":"running"}}\'.',
            rule="TOOLS_EVENT",
        ) from exc
    if not isinstance(decoded, dict):
        raise BadInput(
            f"--data must be a JSON object, not {type(decoded).__name__}; wrap the values in {{...}}.",
            rule="TOOLS_EVENT",
        )
    return decoded


def emit(
    ws: Workspace,
    *,
    workflow: Annotated[str, Field(description="The workflow the event belongs to, e.g. socratic-duel.")],
    type: Annotated[str, Field(description=f"The event type: {', '.join(AGENT_EVENT_TYPES)}.")],
    run_id: Annotated[str, Field(description="Your workflow run id.")],
    step: Annotated[str, Field(description="The workflow state, e.g. debating.")] = DEFAULT_STEP,
    data: Annotated[
        dict[str, Any] | str | None,
        WithJsonSchema({"type": "object"}),
        Field(description='The event\'s JSON object, e.g. {"status": "running"}.'),
    ] = None,
    unit: Annotated[str | None, Field(description="e.g. participant:<id> or turn:3.")] = None,
    harness: Annotated[str | None, Field(description="Your agent host.")] = None,
    close_run: Annotated[
        bool, Field(description="End the run (only with a completed or failed status_change).")
    ] = False,
) -> EventView:
    """Record one workflow event (status_change, artifact_registered, btw_update); a malformed event is refused
    whole (TOOLS_EVENT) and nothing is stored. close_run ends the run: no later event is accepted for it."""
    # The ledger loads here, not with the module: `moot --help` reads this declaration and needs none.
    from moot.errors import BadInput, ConflictError, InvalidInputError, Refused
    from moot.tools.errors import shown, translated
    from moot.tools.models import EventView

    if type not in AGENT_EVENT_TYPES:
        raise BadInput(
            f"Event type {shown(type)!r} is not one an agent emits; pass --type {', '.join(AGENT_EVENT_TYPES)}.",
            rule="TOOLS_EVENT",
        )
    for option, value in (("--workflow", workflow), ("--run-id", run_id), ("--step", step), ("--unit", unit),
                          ("--harness", harness)):  # fmt: skip
        if value is not None and any(unicodedata.category(ch) in {"Cc", "Zl", "Zp"} for ch in value):
            raise BadInput(
                f"{option} {shown(value)!r} holds a line break or control character; pass it on one line.",
                rule="TOOLS_EVENT",
            )
    payload = parse_data(data)
    with translated():
        try:
            event = ws.ledger.append_event(
                workflow=workflow,
                type=type,
                run_id=run_id,
                step=step,
                data=payload,
                unit=unit or None,
                harness=harness or None,
                close_run=close_run,
            )
        except InvalidInputError as exc:
            raise BadInput(str(exc), rule="TOOLS_EVENT") from exc
        except ConflictError as exc:
            raise Refused(str(exc), rule="TOOLS_EVENT") from exc
        return EventView.of(event)


def read_events(
    ws: Workspace, *, run_id: str | None = None, after_id: int | None = None, limit: int | None = None
) -> EventList:
    """Events in the order they were stored; ``after_id`` continues from the last one seen."""
    from moot.tools.errors import translated
    from moot.tools.models import EventList, EventView

    with translated():
        events = [EventView.of(e) for e in ws.ledger.read_events(run_id=run_id, after_id=after_id, limit=limit)]
    return EventList(events=events, last_id=events[-1].id if events else after_id)


TOOLS: ToolSet = (Tool("emit", emit),)

"""The Roundtable's MCP tools: thin typed wrappers over :mod:`moot.protocols.roundtable.tools`, which does all the work.

``roundtable_start`` seats its connection as the meeting's moderator and ``roundtable_take_floor`` seats it as the
role it speaks for (:mod:`moot.mcp.identity`); ``roundtable_speak``, ``roundtable_minutes`` and
``roundtable_release_floor`` then act only in that seat, under the floor's lease. A seat's secret stays with the
connection that took it; another connection takes that role only with ``participant_secret``.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from moot.core.participant_defaults import UNKNOWN_MODEL
from moot.ledger import DEFAULT_TTL_SECONDS
from moot.mcp.params import READ_ONLY, WRITES, Fencing, LeaseToken, ParticipantSecret, Ttl
from moot.mcp.state import answer, answer_seated, answer_seating, state_of
from moot.protocols.roundtable import tools as roundtable
from moot.protocols.roundtable.machine import MODERATOR

Meeting = Annotated[str, Field(description="The meeting's name (its directory under .roundtable/).")]
Role = Annotated[str, Field(description="Your role in the speaker order.")]
Harness = Annotated[str, Field(description="Your agent host: claude-code, codex, …")]
ModelId = Annotated[str, Field(description="Your model, recorded with your seat.")]
RunId = Annotated[str, Field(description="Your workflow run id.")]


def _seat(name: str) -> tuple[str, str]:
    """The key a seat in meeting ``name`` is bound to, and how a message names the meeting."""
    normal = unicodedata.normalize("NFC", name)
    return f"roundtable:{normal}", f"the meeting {normal!r}"


def roundtable_start(
    name: Meeting,
    speakers: Annotated[list[str], Field(description='The speaking order, e.g. ["architect", "reviewer"].')],
    max_rounds: Annotated[int, Field(description="The round limit.", ge=1)],
    agenda: Annotated[str, Field(description="AGENDA.md: the background, the topic and the roles (Markdown).")],
    ctx: Context,
    prompt: Annotated[str, Field(description="The first speaker's instruction.")] = "",
    harness: Harness = "unknown",
    model_id: ModelId = UNKNOWN_MODEL,
    run_id: RunId = "",
) -> CallToolResult:
    """Create the meeting (AGENDA.md, turn.json) and seat this connection as its moderator, who writes the
    minutes once the meeting concludes; returns, once, the moderator seat's participant_secret (kept by this
    connection)."""
    return answer_seating(
        ctx,
        lambda _: _seat(name),
        MODERATOR,
        lambda ws: roundtable.start(
            ws,
            name=name,
            speakers=speakers,
            max_rounds=max_rounds,
            agenda=agenda,
            prompt=prompt,
            harness=harness,
            model_id=model_id,
            run_id=run_id,
        ),
    )


def roundtable_status(name: Meeting, ctx: Context) -> CallToolResult:
    """turn.json (status, round, current_speaker, prompt_for_speaker), the speeches so far, who holds the floor
    (never a token) and what moot's check says."""
    ws = state_of(ctx).workspace
    return answer(lambda: roundtable.status(ws, name=name))


def roundtable_take_floor(
    name: Meeting,
    role: Role,
    ctx: Context,
    harness: Harness = "unknown",
    model_id: ModelId = UNKNOWN_MODEL,
    run_id: RunId = "",
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    participant_secret: ParticipantSecret = "",
) -> CallToolResult:
    """Take the floor when turn.json says it is your turn (the moderator's once the meeting concludes): returns
    lease_token, prompt_for_speaker and, on the role's first take, its participant_secret (kept by this
    connection). Refused (TOOLS_NOT_YOUR_TURN) otherwise. This connection then speaks only as that role in this
    meeting."""
    return answer_seating(
        ctx,
        lambda _: _seat(name),
        unicodedata.normalize("NFC", role),
        lambda ws: roundtable.take_floor(
            ws,
            name=name,
            role=role,
            harness=harness,
            model_id=model_id,
            run_id=run_id,
            ttl_seconds=ttl_seconds,
            participant_secret=participant_secret or None,
        ),
    )


def roundtable_speak(
    name: Meeting,
    role: Role,
    lease_token: LeaseToken,
    speech: Annotated[str, Field(description="Your speech (Markdown).")],
    ctx: Context,
    prompt_next: Annotated[str, Field(description="Your instruction or question for the next speaker.")] = "",
    consensus: Annotated[bool, Field(description="Declare that every participant now agrees.")] = False,
    fencing_token: Fencing = None,
) -> CallToolResult:
    """Commit your speech and the next turn.json together, then give the floor back: returns sequence,
    next_speaker and status (concluding once the rounds are used or consensus is declared)."""
    return answer_seated(
        ctx,
        lambda _: _seat(name),
        unicodedata.normalize("NFC", role),
        "roundtable_take_floor",
        lambda ws: roundtable.speak(
            ws,
            name=name,
            role=role,
            lease_token=lease_token,
            speech=speech,
            prompt_next=prompt_next,
            consensus=consensus,
            fencing_token=fencing_token,
        ),
    )


def roundtable_minutes(
    name: Meeting,
    lease_token: LeaseToken,
    minutes_markdown: Annotated[
        str, Field(description="MINUTES.md with its four parts (consensus, disagreements, decisions, actions).")
    ],
    ctx: Context,
    language: Annotated[Literal["en", "zh"], Field(description="The headings' language.")] = "en",
    fencing_token: Fencing = None,
) -> CallToolResult:
    """The moderator's minutes: write MINUTES.md and close the meeting (turn.json closed) under the floor's lease."""
    return answer_seated(
        ctx,
        lambda _: _seat(name),
        MODERATOR,
        "roundtable_start",
        lambda ws: roundtable.minutes(
            ws,
            name=name,
            lease_token=lease_token,
            minutes_markdown=minutes_markdown,
            language=language,
            fencing_token=fencing_token,
        ),
    )


def roundtable_release_floor(name: Meeting, role: Role, lease_token: LeaseToken, ctx: Context) -> CallToolResult:
    """Give the floor back without speaking."""
    return answer_seated(
        ctx,
        lambda _: _seat(name),
        unicodedata.normalize("NFC", role),
        "roundtable_take_floor",
        lambda ws: roundtable.release_floor(ws, name=name, role=role, lease_token=lease_token),
    )


ROUNDTABLE_TOOLS = (
    (roundtable_status, READ_ONLY),
    (roundtable_start, WRITES),
    (roundtable_take_floor, WRITES),
    (roundtable_speak, WRITES),
    (roundtable_minutes, WRITES),
    (roundtable_release_floor, WRITES),
)

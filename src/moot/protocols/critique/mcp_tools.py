"""The Critique Loop's MCP tools: thin typed wrappers over :mod:`moot.protocols.critique.tools`, which does all the work.

Over MCP a participant claims its role first (``critique_claim``), which binds the role to the connection
(:mod:`moot.mcp.identity`) and makes the dialogue a leased ledger debate; ``critique_append`` and
``critique_release`` then act only as that role, under its lease. The role's seat secret stays with the
connection that first claimed it; another connection claims that role only with ``participant_secret``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from moot.core.participant_defaults import UNKNOWN_MODEL
from moot.ledger import DEFAULT_TTL_SECONDS
from moot.mcp.params import READ_ONLY, WRITES, Fencing, LeaseToken, ParticipantSecret, Ttl
from moot.mcp.state import answer, answer_seated, answer_seating, state_of
from moot.protocols.critique import tools as critique
from moot.tools.workspace import Workspace

File = Annotated[
    str, Field(description="The dialogue record under .dialogues/ (relative to the work root, or absolute).")
]
Role = Annotated[str, Field(description="Your role in the dialogue, as its Participants list names it.")]


def _record(ws: Workspace, file: str) -> tuple[str, str]:
    """The key a seat is bound to (the record's absolute path) and how a message names it."""
    path = (ws.root / file).resolve()
    return str(path), f"the dialogue {path.name}"


def critique_claim(
    file: File,
    role: Role,
    ctx: Context,
    harness: Annotated[str, Field(description="Your agent host: claude-code, codex, …")] = "unknown",
    model_id: Annotated[str, Field(description="Your model, recorded with the lease.")] = UNKNOWN_MODEL,
    run_id: Annotated[str, Field(description="Your workflow run id.")] = "",
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    participant_secret: ParticipantSecret = "",
) -> CallToolResult:
    """Take the dialogue's lease for your role: returns lease_token, fencing_token and, on the role's first claim,
    its participant_secret (kept by this connection). This connection then acts only as that role in this
    dialogue. Refused (TOOLS_LOCK_HELD) with retry_after_seconds while the other role holds it."""
    return answer_seating(
        ctx,
        lambda ws: _record(ws, file),
        role,
        lambda ws: critique.claim(
            ws,
            file=file,
            role=role,
            harness=harness,
            model_id=model_id,
            run_id=run_id,
            ttl_seconds=ttl_seconds,
            participant_secret=participant_secret or None,
        ),
    )


def critique_append(
    file: File,
    role: Role,
    lease_token: LeaseToken,
    turn_markdown: Annotated[
        str,
        Field(
            description="Exactly one turn in the Rule 2 form: '## [<role>] Round N — YYYY-MM-DD HH:MM', the "
            "message, then 'Status: …' last."
        ),
    ],
    ctx: Context,
    fencing_token: Fencing = None,
) -> CallToolResult:
    """Validate one turn (format, status, alternation, rounds, timestamps) and append it under your lease.

    Returns turn_number, round, status, next_speaker and outcome (DONE, STUCK, MAX_ROUNDS once reached). A turn
    that breaks a rule is refused with the rule ids; nothing is written.
    """
    return answer_seated(
        ctx,
        lambda ws: _record(ws, file),
        role,
        "critique_claim",
        lambda ws: critique.append(
            ws, file=file, role=role, turn_markdown=turn_markdown, lease_token=lease_token, fencing_token=fencing_token
        ),
    )


def critique_release(
    file: File,
    role: Role,
    lease_token: LeaseToken,
    ctx: Context,
    close: Annotated[
        bool, Field(description="Store the outcome the record reached (DONE, STUCK or MAX_ROUNDS).")
    ] = False,
) -> CallToolResult:
    """Give the lease back after your turn so the other role can claim it; with close, store the outcome."""
    return answer_seated(
        ctx,
        lambda ws: _record(ws, file),
        role,
        "critique_claim",
        lambda ws: critique.release(ws, file=file, role=role, lease_token=lease_token, close=close),
    )


def critique_status(file: File, ctx: Context) -> CallToolResult:
    """What the dialogue says (turns, round, next_speaker, outcome, violations) and who holds its lease."""
    ws = state_of(ctx).workspace
    return answer(lambda: critique.status(ws, file=file))


CRITIQUE_TOOLS = (
    (critique_status, READ_ONLY),
    (critique_claim, WRITES),
    (critique_append, WRITES),
    (critique_release, WRITES),
)

"""The Socratic duel's MCP tools: thin typed wrappers over :mod:`moot.protocols.duel.tools` and
:mod:`moot.tools.events`, which do all the work. Each answers the tools' JSON payload (``ok: true`` …) or,
when refused, a tool error with the one-sentence fix and the rule ids. The docstrings are the tool
descriptions an agent reads.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field, WithJsonSchema

from moot.core.participant_defaults import UNKNOWN_MODEL
from moot.ledger import DEFAULT_RETRY_AFTER_SECONDS, DEFAULT_TTL_SECONDS, EVENT_TYPES
from moot.mcp import resources
from moot.mcp.params import READ_ONLY, WRITES, Fencing, LeaseToken, ParticipantSecret, Ttl
from moot.mcp.state import answer, connection_of, state_of
from moot.protocols.duel import tools as duel
from moot.protocols.duel.machine import OutcomeName
from moot.tools import events
from moot.tools.models import LockGranted, Released

DuelId = Annotated[str, Field(description="The duel_id that join returned.")]
ParticipantId = Annotated[
    str, Field(description="Your participant_id from join; only the one this connection joined as is accepted.")
]
Outcome = Annotated[
    OutcomeName | None,
    WithJsonSchema({"type": "string", "enum": [o.value for o in OutcomeName]}),
    Field(description="With close: the outcome; it must agree with the turns."),
]


def join(
    participant_name: Annotated[str, Field(description="Your unique display name in this duel.")],
    harness: Annotated[str, Field(description="Your agent host: claude-code, codex, …")],
    run_id: Annotated[str, Field(description="Your workflow run id (any stable id for this session of work).")],
    ctx: Context,
    target: Annotated[
        str,
        Field(
            description="The Markdown source to debate (absolute, or relative to the work root); may be empty "
            "when joining by duel_id, else it is compared with the duel's source."
        ),
    ] = "",
    topic: Annotated[str, Field(description="The topic; empty means the source's first heading.")] = "",
    model_id: Annotated[str, Field(description="Your model, recorded with every turn you write.")] = UNKNOWN_MODEL,
    duel_id: Annotated[
        str, Field(description="Join this duel by its id (a peer on another host shares it) instead of by source.")
    ] = "",
    participant_secret: ParticipantSecret = "",
) -> CallToolResult:
    """Join the active duel on this source and topic (created if none; at most two participants), or the duel
    whose duel_id a peer shared (no copy of the source needed).

    Returns duel_id, participant_id, participant_count, debate_path, topic, next_step and, once, the seat's
    participant_secret, which this connection keeps and uses for you. Joining again on this connection returns
    the same participant_id; from another connection only with participant_secret (TOOLS_SEAT otherwise). This
    connection may then act only as that participant.
    """
    state, connection = state_of(ctx), connection_of(ctx)

    def act() -> duel.Joined:
        with state.identities.joining(connection, participant_name) as bind:
            joined = duel.join(
                state.acting(connection),
                target=target or None,
                duel_id=duel_id or None,
                topic=topic or None,
                participant_name=participant_name,
                harness=harness,
                run_id=run_id,
                model_id=model_id,
                participant_secret=participant_secret or None,
            )
            bind(joined.duel_id, joined.participant_id)
        return joined

    return answer(act)


def status(duel_id: DuelId, ctx: Context) -> CallToolResult:
    """The duel's participants, lock holder and expiry (never a token), turns accepted, next_step, and what the
    debate artifact says (turns, next_speaker, terminal_outcome, candidate_convergence, violations)."""
    ws = state_of(ctx).workspace
    return answer(lambda: duel.status(ws, duel_id=duel_id))


def claim_lock(
    duel_id: DuelId,
    participant_id: ParticipantId,
    ctx: Context,
    for_timeout: Annotated[
        bool, Field(description="Only after the bounded wait for a peer: take the lock although nobody else joined.")
    ] = False,
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    retry_after_seconds: Annotated[int, Field(description="Wait guidance returned on refusal.", ge=1)] = (
        DEFAULT_RETRY_AFTER_SECONDS
    ),
) -> CallToolResult:
    """Take the duel's lock before writing: returns lease_token, lease_expires_at and fencing_token.

    Refused (TOOLS_LOCK_HELD, TOOLS_WAITING_FOR_PARTICIPANT) with retry_after_seconds and wait_until while
    the peer holds it or has not joined; wait that long and try again.
    """
    state, connection = state_of(ctx), connection_of(ctx)

    def act() -> LockGranted:
        state.identities.require(connection, duel_id, participant_id)
        return duel.claim_lock(
            state.acting(connection),
            duel_id=duel_id,
            participant_id=participant_id,
            for_timeout=for_timeout,
            ttl_seconds=ttl_seconds,
            retry_after_seconds=retry_after_seconds,
        )

    return answer(act)


def refresh_lock(
    duel_id: DuelId,
    participant_id: ParticipantId,
    lease_token: LeaseToken,
    ctx: Context,
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
) -> CallToolResult:
    """Extend your unexpired lease while you compose a long turn (same token and fencing number)."""
    state, connection = state_of(ctx), connection_of(ctx)

    def act() -> LockGranted:
        state.identities.require(connection, duel_id, participant_id)
        return duel.refresh_lock(
            state.acting(connection),
            duel_id=duel_id,
            participant_id=participant_id,
            lease_token=lease_token,
            ttl_seconds=ttl_seconds,
        )

    return answer(act)


def release_lock(
    duel_id: DuelId,
    participant_id: ParticipantId,
    lease_token: LeaseToken,
    ctx: Context,
    close: Annotated[bool, Field(description="Write the Terminal Conclusion and close the duel.")] = False,
    outcome: Outcome = None,
    reason: Annotated[str, Field(description="With close: why it ended (required for INVALIDATED).")] = "",
    fencing_token: Fencing = None,
) -> CallToolResult:
    """Give the lock back after your turn; with close=true and outcome, first write the Terminal Conclusion.

    ACCEPTED_CONSENSUS, DISSENT and MAX_TURNS are accepted only when the turns reach them (append_turn reports
    terminal_outcome); TIMEOUT only while fewer than two joined; INVALIDATED needs a reason. A refused close
    answers closed: false.
    """
    state, connection = state_of(ctx), connection_of(ctx)

    def act() -> Released:
        state.identities.require(connection, duel_id, participant_id)
        return duel.release_lock(
            state.acting(connection),
            duel_id=duel_id,
            participant_id=participant_id,
            lease_token=lease_token,
            close=close,
            outcome=outcome.value if outcome is not None else None,
            reason=reason or None,
            fencing_token=fencing_token,
        )

    return answer(act)


def read_debate(duel_id: DuelId, ctx: Context) -> CallToolResult:
    """The debate artifact (the duel's record) as Markdown text, its resource_uri, and what moot's check says
    about it. Derive the next turn number and your peer's latest arguments from it."""
    ws = state_of(ctx).workspace
    return answer(lambda: resources.read_debate(ws, duel_id))


def append_turn(
    duel_id: DuelId,
    participant_id: ParticipantId,
    lease_token: LeaseToken,
    turn_markdown: Annotated[
        str,
        Field(
            description="Exactly one turn in the duel's turn format ('## Turn N — name (harness / model) — STANCE')."
        ),
    ],
    ctx: Context,
    fencing_token: Fencing = None,
) -> CallToolResult:
    """Validate one turn with the protocol and append it to the debate artifact under your lease.

    Returns turn_number, next_speaker, candidate_convergence, terminal_outcome and next_step. A turn that
    breaks a rule is refused with the rule ids and where; nothing is written. The artifact is created on the
    first turn.
    """
    state, connection = state_of(ctx), connection_of(ctx)

    def act() -> duel.TurnAppended:
        state.identities.require(connection, duel_id, participant_id)
        return duel.append(
            state.acting(connection),
            duel_id=duel_id,
            participant_id=participant_id,
            lease_token=lease_token,
            turn_markdown=turn_markdown,
            fencing_token=fencing_token,
        )

    return answer(act)


def emit(
    type: Annotated[str, Field(description=f"The event type: {', '.join(sorted(EVENT_TYPES))}.")],
    run_id: Annotated[str, Field(description="Your workflow run id.")],
    ctx: Context,
    step: Annotated[str, Field(description="The workflow state, e.g. debating.")] = events.DEFAULT_STEP,
    data: Annotated[dict[str, Any], Field(description='The event\'s JSON object, e.g. {"status": "running"}.')] = {},  # noqa: B006 - never mutated; the SDK copies validated arguments
    unit: Annotated[str, Field(description="e.g. participant:<id> or turn:3.")] = "",
    harness: Annotated[str, Field(description="Your agent host.")] = "",
    workflow: Annotated[str, Field(description="The workflow the event belongs to.")] = duel.PROTOCOL,
    close_run: Annotated[
        bool, Field(description="End the run (only with a completed or failed status_change).")
    ] = False,
) -> CallToolResult:
    """Record one workflow event (status_change, artifact_registered, btw_update); a malformed event is refused
    whole (TOOLS_EVENT) and nothing is stored."""
    ws = state_of(ctx).workspace
    return answer(
        lambda: events.emit(
            ws,
            workflow=workflow,
            type=type,
            run_id=run_id,
            step=step,
            data=data,
            unit=unit or None,
            harness=harness or None,
            close_run=close_run,
        )
    )


# (function, annotations) in the order an agent uses them; the function name is the tool name.
DUEL_TOOLS = (
    (join, WRITES),
    (status, READ_ONLY),
    (claim_lock, WRITES),
    (refresh_lock, WRITES),
    (append_turn, WRITES),
    (release_lock, WRITES),
    (read_debate, READ_ONLY),
    (emit, WRITES),
)

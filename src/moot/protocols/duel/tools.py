"""The Socratic Duel's agent tools: rp1's ``agent-tools socratic-duel`` commands, enforced.

rp1's backend only coordinates (joins, locks, paths) and leaves the Markdown to the agents. Here the same
commands exist — ``join``, ``status``, ``claim_lock`` (with ``for_timeout`` and the post-claim re-check),
``refresh_lock``, ``release_lock`` (with ``close`` and the outcome) — and two writes are added that the
backend performs itself under the lease: ``append`` (one turn, validated by the protocol) and the
conclusion written by ``release_lock(close=True)``. Both run in one guarded ledger transaction; see
:mod:`moot.tools.reconcile` for the order of the writes and how a crash between them is recovered. A seat
has a secret (:mod:`moot.tools.seats`): ``join`` returns it once, and rejoining, claiming and every write
under the lease need it, where rp1 let anyone who read a participant id act as that participant.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from moot.core.files import read_text
from moot.core.participant_defaults import UNKNOWN_MODEL
from moot.errors import (
    BadInput,
    NotFoundError,
    ProtocolViolationError,
    Refused,
    SourceMismatchError,
    ToolError,
    Violation,
)
from moot.ledger import (
    DEFAULT_RETRY_AFTER_SECONDS,
    DEFAULT_TTL_SECONDS,
    MIN_PARTICIPANTS,
    Debate,
    DebateState,
    DebateStatus,
    JoinResult,
    LeaseGuard,
    Refusal,
)
from moot.ledger import Participant as LedgerParticipant
from moot.limits import subject_problem
from moot.plugin import Seat, Sharing, Tool, ToolSet
from moot.protocols.duel import PLUGIN as DUEL
from moot.protocols.duel import record
from moot.protocols.duel import sharing as materialize
from moot.protocols.duel.machine import (
    OUTCOMES,
    SOURCE_SUFFIXES,
    DuelConclusion,
    DuelConfig,
    DuelProtocol,
    DuelState,
    DuelTurn,
    OutcomeName,
    Participant,
    computed_outcome,
    draft_conclusion,
    infer_topic,
)
from moot.protocols.duel.text import check_names, duel_config, parse_turn, table_participant
from moot.tools import seats
from moot.tools.declare import Cli, Fencing, Harness, LeaseToken, ModelId, ParticipantSecret, RunId, Ttl, resource_uri
from moot.tools.errors import refused_by, shown, tool, translated
from moot.tools.models import (
    LockGranted,
    LockView,
    NextStep,
    ParticipantView,
    Released,
    participants_of,
)
from moot.tools.reconcile import chain_rows, reconcile
from moot.tools.source_identity import first_difference, identify, local_copy, text_digest
from moot.tools.waiting import DEFAULT_WAIT_SECONDS, Waited, WaitTimeout, ledger_mark, wait_for
from moot.tools.workspace import Workspace

PROTOCOL = "socratic-duel"

# A result model's validator is built when a call first returns one, not when the module loads: an agent's
# every-turn command returns one kind of result and should not pay for the others.
_FROZEN = ConfigDict(frozen=True, defer_build=True)


class Joined(BaseModel):
    """rp1's join result: authoritative source, topic and artifact path from here on."""

    model_config = _FROZEN

    duel_id: str
    participant_id: str
    participant_count: int
    status: str
    source_path: str
    topic: str
    topic_slug: str
    debate_path: str
    next_step: NextStep
    created: bool
    rejoined: bool
    participant_secret: str | None
    """Shown once: the secret of the seat this join took (``None`` on a rejoin). Rejoining, claiming and every
    write need it; the CLI keeps it for the OS user that joined, the MCP server for the connection."""


class ArtifactView(BaseModel):
    """What the debate artifact says, if it exists (read-only; the artifact is the debate record)."""

    model_config = _FROZEN

    path: str
    exists: bool
    valid: bool
    turns: int
    next_speaker: str | None
    terminal_outcome: str | None
    candidate_convergence: bool
    violations: list[str]


class DuelStatus(BaseModel):
    model_config = _FROZEN

    duel_id: str
    status: str
    outcome: str | None
    source_path: str
    topic: str
    topic_slug: str
    debate_path: str
    participant_count: int
    participants: list[ParticipantView]
    lock: LockView | None
    turn_count: int
    """Turns the ledger accepted."""
    last_fencing_token: int
    next_step: NextStep
    artifact: ArtifactView
    may_write: list[str]
    """The participants (by name) who may write the next turn now: both before Turn 1, then the artifact's
    next_speaker; none while waiting for a peer or once the duel reached its outcome."""
    whose_turn: str
    """One sentence: whose turn it is and what the others do (before Turn 1: who writes it, what the other gets)."""


class DuelWaited(DuelStatus):
    """``wait``: the duel's status when the wait ended, and why it ended."""

    waited: Waited
    """your_turn (claim the lock and write), ended (the duel reached its outcome or closed: stop), or timed_out
    (nothing of the two within the timeout: call wait again, or close with TIMEOUT if your peer never joined)."""
    waited_seconds: float


class TurnAppended(BaseModel):
    model_config = _FROZEN

    duel_id: str
    turn_number: int
    participant: str
    stance: str
    digest: str
    fencing_token: int
    turn_count: int
    next_speaker: str | None
    candidate_convergence: bool
    terminal_outcome: str | None
    terminal_reason: str | None
    next_step: NextStep
    debate_path: str
    artifact_created: bool
    adopted_turns: list[int]
    """Turns a crash had left in the artifact without their ledger digest, recorded by this write."""
    already_appended: bool
    """The identical turn was already in the artifact: nothing was written (a retry)."""


# --- lookups ------------------------------------------------------------------------------------


def _status(ws: Workspace, duel_id: str) -> DebateStatus:
    status = ws.ledger.status(duel_id)
    if status.debate.protocol != PROTOCOL:
        raise BadInput(
            f"{duel_id} is a {status.debate.protocol} debate, not a duel; use that protocol's commands.",
            rule="TOOLS_BAD_INPUT",
        )
    return status


def _member(status: DebateStatus, participant_id: str) -> LedgerParticipant:
    found = next((p for p in status.participants if p.id == participant_id), None)
    if found is None:
        raise BadInput(
            f"Participant {participant_id!r} has not joined duel {status.debate.id}; pass the participant id "
            "that join printed.",
            rule="TOOLS_BAD_INPUT",
        )
    return found


def _token(lease_token: str | None, action: str) -> str:
    if not lease_token:
        raise Refused(
            f"To {action} you need the lease token that claim-lock printed; claim the lock and pass --lease-token.",
            rule="TOOLS_LEASE",
        )
    return lease_token


def _artifact_path(ws: Workspace, debate: Debate) -> Path:
    return ws.inside(DUEL.folder, debate.artifact_path)


def _next_step(debate: Debate, participant_count: int) -> NextStep:
    if debate.status is DebateState.CLOSED:
        return "invalidated" if debate.outcome == OutcomeName.INVALIDATED.value else "completed"
    return "debating" if participant_count >= MIN_PARTICIPANTS else "waiting_for_participant"


def _source(ws: Workspace, target: str | os.PathLike[str]) -> Path:
    if "\x00" in os.fspath(target):  # an MCP argument can hold one; no path can
        raise BadInput("The target holds a NUL character; pass the path of the Markdown source.")
    source = ws.source(target, "the target")
    if source.suffix.lower() not in SOURCE_SUFFIXES:
        raise BadInput(f"The target {source} is not a .md or .markdown file; pass the Markdown source to debate.")
    if not source.is_file() or not os.access(source, os.R_OK):
        raise BadInput(f"The target {source} is not a readable file; pass an existing Markdown source.")
    return source


def _document(path: Path) -> record.DuelDocument:
    text, problems = read_text(path)
    document, parsed = (None, problems) if text is None else record.parse_document(text, str(path))
    if document is None:
        raise refused_by(parsed)
    return document


def _existing(path: Path) -> tuple[record.DuelDocument | None, list[Violation]]:
    """The record at ``path`` (``None`` when there is none yet), or why it cannot be parsed at all."""
    if not path.exists():
        return None, []
    text, problems = read_text(path)
    if text is None:
        return None, problems
    document, parsed = record.parse_document(text, str(path))
    return document, ([] if document is not None else parsed)


def _table(status: DebateStatus) -> list[Participant]:
    return [table_participant(p) for p in status.participants]


# --- the tools ----------------------------------------------------------------------------------


DuelId = Annotated[str, Field(description="The duel_id that join returned.")]
ParticipantId = Annotated[
    str, Field(description="Your participant_id from join (over MCP, only the one this connection joined as).")
]
# The outcome is checked by release_lock with its own sentence; the schema lists the names for a model to pick.
Outcome = Annotated[
    str | None,
    WithJsonSchema({"type": "string", "enum": [o.value for o in OutcomeName]}),
    Field(description="With close: the outcome (ACCEPTED_CONSENSUS, DISSENT, MAX_TURNS, TIMEOUT, INVALIDATED)."),
]


@tool
def join(
    ws: Workspace,
    *,
    target: Annotated[
        str | None,
        Field(
            description="The Markdown source to debate (relative to the work root, or over the command line to the "
            "current directory); may be empty when joining by duel_id, else it is compared with the duel's source."
        ),
        Cli(here=True),
    ] = None,
    topic: Annotated[str | None, Field(description="The topic; empty means the source's first heading.")] = None,
    participant_name: Annotated[str, Field(description="Your unique display name in this duel.")],
    harness: Harness,
    run_id: RunId,
    model_id: ModelId = UNKNOWN_MODEL,
    duel_id: Annotated[
        str | None,
        Field(description="Join this duel by its id (a peer on another host shares it) instead of by source."),
    ] = None,
    participant_secret: ParticipantSecret = None,
) -> Joined:
    """Join the active duel on this source and topic (created if none; at most two participants), or the duel
    whose duel_id a peer shared (no copy of the source needed).

    Returns duel_id, participant_id, participant_count, debate_path, topic, next_step and, once, the seat's
    participant_secret, which moot keeps for you (the MCP connection, or your OS user on the command line).
    Joining again returns the same participant_id; from elsewhere only with participant_secret (TOOLS_SEAT
    otherwise). Without a topic the source's first heading is the topic, else its file name; hosts meet in one
    duel when their sources have the same path in their repositories, and a host whose copy differs is refused
    with the first difference.
    """
    identity = Participant(name=participant_name.strip(), harness=harness.strip(), model=model_id.strip())
    ws.area(DUEL.folder)
    if duel_id is not None:
        debate = _status(ws, duel_id).debate
        if target is not None:
            _same_source(ws, debate, read_text(_source(ws, target))[0] or "")
        check_names(duel_config(debate), identity)
        known = duel_id
        joined = seats.seated(
            ws.keyring,
            lambda secret: ws.ledger.join_debate(
                known,
                participant_name=identity.name,
                harness=identity.harness,
                model=identity.model,
                run_id=run_id,
                participant_secret=secret,
            ),
            participant_secret,
        )
    else:
        if target is None:
            raise BadInput(
                "Name the source to debate with --target, or join an existing duel with --duel-id.",
                rule="TOOLS_BAD_INPUT",
            )
        source = _source(ws, target)
        joined = seats.seated(
            ws.keyring, lambda secret: _join_by_source(ws, source, topic, identity, run_id, secret), participant_secret
        )
    debate = joined.debate
    me = joined.participant
    if joined.rejoined and (me.harness, me.model) != (identity.harness, identity.model):
        raise Refused(
            f"{shown(me.name)!r} joined duel {debate.id} as ({shown(me.harness)} / {shown(me.model)}), not "
            f"({shown(identity.harness)} / {shown(identity.model)}); rejoin with that --harness and --model-id, "
            "or join under another --participant-name.",
            rule="TOOLS_IDENTITY",
        )
    _sync(ws, debate)
    return Joined(
        duel_id=debate.id,
        participant_id=joined.participant.id,
        participant_count=joined.participant_count,
        status=debate.status.value,
        source_path=str(_local_source(ws, debate)),
        topic=debate.topic,
        topic_slug=debate.topic_slug,
        debate_path=str(_artifact_path(ws, debate)),
        next_step=_next_step(debate, joined.participant_count),
        created=joined.created,
        rejoined=joined.rejoined,
        participant_secret=joined.secret,
    )


def _join_by_source(
    ws: Workspace, source: Path, topic: str | None, identity: Participant, run_id: str, secret: str | None
) -> JoinResult:
    text, _ = read_text(source)
    topic = infer_topic(topic, text or "", source.stem)
    too_long = subject_problem("topic", topic)
    if too_long is not None:
        raise BadInput(too_long[:1].upper() + too_long[1:], rule="TOOLS_BAD_INPUT")
    slug = record.slugify(topic)
    found = identify(source, ws.root, DUEL.folder, text or "")
    config = DuelConfig(duel_id="-", source_path=found.record_path, topic=topic, topic_slug=slug)
    check_names(config, identity)
    legacy = ws.ledger.find_debate(source, slug)  # opened by an older moot, which knew the source by its real path
    if legacy is not None:
        return ws.ledger.join_debate(
            legacy.id,
            participant_name=identity.name,
            harness=identity.harness,
            model=identity.model,
            run_id=run_id,
            participant_secret=secret,
        )
    try:
        return ws.ledger.join(
            source_path=found.record_path,
            source_key=found.key,
            source_digest=found.digest,
            source_text=found.text,
            topic=topic,
            topic_slug=slug,
            participant_name=identity.name,
            harness=identity.harness,
            model=identity.model,
            run_id=run_id,
            artifact_dir=DUEL.folder,
            artifact_taken=lambda relative: os.path.lexists(ws.root / relative),
            participant_secret=secret,
        )
    except SourceMismatchError as mismatch:
        _same_source(ws, ws.ledger.get_debate(mismatch.debate_id), found.text)
        raise  # pragma: no cover - _same_source refuses whenever the digests differ


def _same_source(ws: Workspace, debate: Debate, text: str) -> None:
    """Refuse a host whose copy of the source differs from the one the duel was started with."""
    if debate.source_digest is None or text_digest(text) == debate.source_digest:
        return
    theirs = ws.ledger.source_text(debate.id)
    where = first_difference(text, theirs) if theirs is not None else f"its SHA-256 ({debate.source_digest[:12]}…)"
    raise Refused(
        f"Your copy of {debate.source_path} differs from the one duel {debate.id} was started with, at {where}; "
        "check out the same version of the source on every host, then join again.",
        rule="TOOLS_SOURCE_MISMATCH",
    )


def _local_source(ws: Workspace, debate: Debate) -> Path:
    """This host's copy of the duel's source."""
    return local_copy(debate.source_path, ws.root, DUEL.folder)


def _sync(ws: Workspace, debate: Debate) -> None:
    """Bring this host's record up to date from the ledger (best effort: an edited record is left as it is,
    for status, ``moot check`` and the next write to report)."""
    try:
        path = _artifact_path(ws, debate)
        with translated():
            materialize.sync_duel(path, ws.ledger.record(debate.id))
    except (ToolError, ProtocolViolationError):
        return


def _artifact_view(ws: Workspace, debate: Debate) -> ArtifactView:
    try:
        path = _artifact_path(ws, debate)
    except ToolError as problem:
        return ArtifactView(
            path=str(ws.root / debate.artifact_path),
            exists=False,
            valid=False,
            turns=0,
            next_speaker=None,
            terminal_outcome=None,
            candidate_convergence=False,
            violations=[v.rule for v in problem.rules],
        )
    if not path.exists():
        return ArtifactView(
            path=str(path),
            exists=False,
            valid=True,
            turns=0,
            next_speaker=None,
            terminal_outcome=None,
            candidate_convergence=False,
            violations=[],
        )
    report = record.check(path)
    summary = report.summary
    return ArtifactView(
        path=str(path),
        exists=True,
        valid=not report.errors,
        turns=summary.turns if summary else 0,
        next_speaker=summary.next_speaker if summary else None,
        terminal_outcome=summary.outcome.name if summary and summary.outcome else None,
        candidate_convergence=bool(summary and summary.detail.get("candidate_convergence")),
        violations=sorted({v.rule for v in report.violations}),
    )


@tool
def status(ws: Workspace, *, duel_id: DuelId) -> DuelStatus:
    """The duel's participants, lock holder and expiry (never a token), turns accepted, next_step, and what the
    debate artifact says (turns, next_speaker, terminal_outcome, candidate_convergence, violations)."""
    found = _status(ws, duel_id)
    debate = found.debate
    _sync(ws, debate)
    artifact = _artifact_view(ws, debate)
    next_step = _next_step(debate, found.participant_count)
    if next_step == "debating" and artifact.terminal_outcome is not None:
        next_step = "closing"  # the record reached an outcome (INVALIDATED by an edit, too) the ledger has not stored
    may_write, whose_turn = _whose_turn(found, artifact, next_step)
    return DuelStatus(
        duel_id=debate.id,
        status=debate.status.value,
        outcome=debate.outcome,
        source_path=str(_local_source(ws, debate)),
        topic=debate.topic,
        topic_slug=debate.topic_slug,
        debate_path=str(ws.root / debate.artifact_path),
        participant_count=found.participant_count,
        participants=participants_of(found),
        lock=LockView.of(found.lease),
        turn_count=found.turn_count,
        last_fencing_token=found.last_fencing_token,
        next_step=next_step,
        artifact=artifact,
        may_write=may_write,
        whose_turn=whose_turn,
    )


def _whose_turn(found: DebateStatus, artifact: ArtifactView, next_step: NextStep) -> tuple[list[str], str]:
    """Who may write the next turn, and the sentence that says so (see :attr:`DuelStatus.whose_turn`)."""
    if next_step == "waiting_for_participant":
        return [], (
            "Nobody may write yet: the second participant has not joined; wait, and after a bounded wait claim the "
            "lock with for_timeout to close with TIMEOUT."
        )
    if next_step != "debating":
        return (
            [],
            "The duel reached its outcome: nobody writes again; the participant who wrote the last turn closes it.",
        )
    if max(found.turn_count, artifact.turns) == 0:
        return [p.name for p in found.participants], (
            "Nobody has written Turn 1, so either participant may: whoever claims the lock first writes Turn 1. The "
            "other's claim of the lock is refused (TOOLS_LOCK_HELD, with retry_after_seconds) until that lock is released; "
            "it then reads the record and writes the next turn, Turn 2 if Turn 1 was written (a Turn 1 it prepared "
            "is refused, DUEL_TURN_NUMBER)."
        )
    if artifact.next_speaker is None:
        return [], "moot cannot tell whose turn it is from the debate record; run moot check on debate_path."
    return [artifact.next_speaker], f"It is {artifact.next_speaker}'s turn (Turn {artifact.turns + 1})."


@tool
def wait(
    ws: Workspace,
    *,
    duel_id: DuelId,
    participant_id: ParticipantId,
    timeout_seconds: WaitTimeout = DEFAULT_WAIT_SECONDS,
) -> DuelWaited:
    """Wait until it is your turn (waited: your_turn), the duel reached its outcome or closed (ended), or
    timeout_seconds passed (timed_out), instead of polling status; answers the status at that moment.

    Your turn means you may write the next turn (either participant before Turn 1) and no peer holds an
    unexpired lock: claim the lock next. One call waits at most the cap timeout_seconds names; call again to
    wait longer.
    """
    me = _member(_status(ws, duel_id), participant_id)

    def check() -> tuple[Waited | None, DuelStatus]:
        now = status(ws, duel_id=duel_id)
        if now.next_step != "debating" and now.next_step != "waiting_for_participant":
            return "ended", now
        lock = now.lock
        free = lock is None or lock.expired or lock.holder_participant_id == me.id
        return ("your_turn" if me.name in now.may_write and free else None), now

    waited, last, seconds = wait_for(check, lambda: ledger_mark(ws, duel_id), timeout_seconds)
    return DuelWaited(**dict(last), waited=waited, waited_seconds=seconds)


@tool
def claim_lock(
    ws: Workspace,
    *,
    duel_id: DuelId,
    participant_id: ParticipantId,
    for_timeout: Annotated[
        bool, Field(description="Only after the bounded wait for a peer: take the lock although nobody else joined.")
    ] = False,
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    retry_after_seconds: Annotated[
        int,
        Field(description="Wait guidance returned on refusal, in seconds.", ge=1),
        Cli(envvar="MOOT_RETRY_AFTER_SECONDS"),
    ] = DEFAULT_RETRY_AFTER_SECONDS,
    participant_secret: ParticipantSecret = None,
) -> LockGranted:
    """Take the duel's lock before writing: returns lease_token, lease_expires_at and fencing_token.

    Refused (TOOLS_LOCK_HELD, TOOLS_WAITING_FOR_PARTICIPANT) with retry_after_seconds and wait_until while the
    peer holds it or has not joined; wait that long and try again. With for_timeout the lock is re-checked at
    once: next_step is closing only while fewer than two participants joined, else debating with the same lease.
    """
    found = _status(ws, duel_id)
    debate = found.debate
    me = _member(found, participant_id)
    result = ws.ledger.claim(
        duel_id,
        me.id,
        participant_secret=seats.secret_for(ws.keyring, duel_id, me.id, participant_secret),
        ttl_seconds=ttl_seconds,
        for_timeout=for_timeout,
        retry_after_seconds=retry_after_seconds,
    )
    if isinstance(result, Refusal):
        wait_until = ws.clock() + timedelta(seconds=result.retry_after_seconds)
        raise Refused(
            result.message,
            rule="TOOLS_LOCK_HELD" if result.reason == "lease_held" else "TOOLS_WAITING_FOR_PARTICIPANT",
            detail={
                "acquired": False,
                "duel_id": duel_id,
                "reason": result.reason,
                "holder_participant_id": result.holder_participant_id,
                "lease_expires_at": result.lease_expires_at,
                "retry_after_seconds": result.retry_after_seconds,
                "wait_until": wait_until.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "participant_count": result.participant_count,
                "next_step": "waiting_for_participant",
            },
        )
    _sync(ws, debate)  # the holder reads the record next: bring it up to date with every host's turns
    count = result.participant_count
    if for_timeout:
        count = ws.ledger.status(duel_id).participant_count  # a peer may have joined during the wait
    return LockGranted(
        duel_id=duel_id,
        participant_id=result.participant_id,
        lease_token=result.lease_token,
        lease_expires_at=result.lease_expires_at,
        fencing_token=result.fencing_token,
        participant_count=count,
        next_step="debating" if count >= MIN_PARTICIPANTS else "closing",
    )


@tool
def refresh_lock(
    ws: Workspace,
    *,
    duel_id: DuelId,
    participant_id: ParticipantId,
    lease_token: LeaseToken,
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    participant_secret: ParticipantSecret = None,
) -> LockGranted:
    """Extend your unexpired lease while you compose a long turn (same token and fencing number)."""
    token = _token(lease_token, "refresh the lock")
    found = _status(ws, duel_id)
    debate = found.debate
    me = _member(found, participant_id)
    lease = ws.ledger.refresh(
        duel_id,
        me.id,
        token,
        participant_secret=seats.secret_for(ws.keyring, duel_id, me.id, participant_secret),
        ttl_seconds=ttl_seconds,
    )
    _sync(ws, debate)
    return LockGranted(
        duel_id=duel_id,
        participant_id=lease.participant_id,
        lease_token=lease.lease_token,
        lease_expires_at=lease.lease_expires_at,
        fencing_token=lease.fencing_token,
        participant_count=lease.participant_count,
        next_step="debating" if lease.participant_count >= MIN_PARTICIPANTS else "closing",
    )


def _relocate(violations: list[Violation], number: int, turn_file: str) -> list[Violation]:
    """Violations about the candidate turn point into the turn file; those about the record stay there."""
    return [v.model_copy(update={"file": turn_file, "line": None}) if v.turn == number else v for v in violations]


@tool
def append(
    ws: Workspace,
    *,
    duel_id: DuelId,
    participant_id: ParticipantId,
    lease_token: LeaseToken,
    turn_markdown: Annotated[
        str,
        Field(
            description="Exactly one turn in the duel's turn format ('## Turn N — name (harness / model) — STANCE')."
        ),
        Cli(flag="--file", file="turn file", file_name="turn_file"),
    ],
    turn_file: str = "<turn>",
    fencing_token: Fencing = None,
    participant_secret: ParticipantSecret = None,
) -> TurnAppended:
    """Validate one turn with the protocol and append it to the debate artifact under your lease.

    Returns turn_number, next_speaker, candidate_convergence, terminal_outcome and next_step. A turn that breaks
    a rule, one signed by someone other than the lease holder, or a write without the current lease is refused
    with the rule ids and where; nothing is written. The artifact is created on the first turn.
    """
    token = _token(lease_token, "append a turn")
    found = _status(ws, duel_id)
    me = _member(found, participant_id)
    secret = seats.secret_for(ws.keyring, duel_id, me.id, participant_secret)
    path = _artifact_path(ws, found.debate)
    config = duel_config(found.debate)
    table = _table(found)
    turn = parse_turn(turn_markdown, config, table, file=turn_file)
    if (turn.participant, turn.harness, turn.model) != (me.name, me.harness, me.model):
        raise Refused(
            f"The turn is signed '{turn.participant} ({turn.harness} / {turn.model})' but participant {me.id} is "
            f"'{me.name} ({me.harness} / {me.model})'; sign the heading as yourself.",
            rule="TOOLS_IDENTITY",
        )
    from moot.protocols.duel import grounding as duel_grounding

    quotes = duel_grounding.refusals(turn, config, path)
    if quotes:
        raise refused_by(_relocate(quotes, turn.number, turn_file))
    unmarked, turn = turn, duel_grounding.marked(turn, config, path)
    fencing = found.last_fencing_token if fencing_token is None else fencing_token
    existed = path.exists()
    already = False
    # Every check runs before the ledger records the turn (its text and digest, under the lease, in one
    # transaction); the record file is written from the ledger after the commit. A refusal changes
    # nothing, and a crash leaves the turn either in the ledger (every host's record catches up) or nowhere.
    with ws.ledger.guarded_write(duel_id, me.id, token, fencing, participant_secret=secret) as guard:
        document = _document(path) if existed else None
        written = document.chain_mark.turns if document is not None and document.chain_mark is not None else None
        texts = document.turn_texts if document is not None else []
        reconciled = reconcile(guard, texts, where=str(path), written_turns=written)
        snapshot = guard.record()
        shared = materialize.shared_duel(snapshot, document, where=str(path))
        if shared.turns and shared.turns[-1] in (turn, unmarked):
            already = True  # the same turn again: a retry after a crash or a lost reply (marked or not)
            digest = chain_rows(shared.texts)[-1].digest
        else:
            _check_turn(shared, table, turn, turn_file)
            text = record.render_turn(turn).rstrip()
            extended = shared.with_turn(text, turn)
            try:
                extended.render(path)  # what will be written must read back exactly
            except ProtocolViolationError as refused:
                raise refused_by(_relocate(refused.violations, len(extended.turns), turn_file)) from None
            row = chain_rows(extended.texts)[-1]
            recorded = guard.record_turn(row.turn, row.digest, row.chain, body=text)
            snapshot = replace(snapshot, turns=(*snapshot.turns, recorded))
            digest = row.digest
    with translated():
        materialize.sync_duel(path, snapshot)  # the debate as this transaction committed it
    created = not existed and path.exists()
    return _appended(ws, found, path, turn, digest, fencing, created, list(reconciled.adopted), already)


def _check_turn(shared: materialize.SharedDuel, table: list[Participant], turn: DuelTurn, turn_file: str) -> None:
    """Refuse a turn that breaks a rule of the duel so far (or comes after its conclusion)."""
    protocol = DuelProtocol(shared.config, table)
    replay = protocol.replay(shared.turns)
    state = replay.state.model_copy(update={"conclusion": shared.conclusion})
    try:
        protocol.step(state, turn)
    except ProtocolViolationError as refused:
        raise refused_by(_relocate(refused.violations, len(shared.turns) + 1, turn_file)) from None


def _appended(
    ws: Workspace,
    found: DebateStatus,
    path: Path,
    turn: DuelTurn,
    digest: str,
    fencing: int,
    created: bool,
    adopted: list[int],
    already: bool,
) -> TurnAppended:
    summary = record.check(path).summary
    outcome = summary.outcome if summary else None
    return TurnAppended(
        duel_id=found.debate.id,
        turn_number=turn.number,
        participant=turn.participant,
        stance=turn.stance,
        digest=digest,
        fencing_token=fencing,
        turn_count=summary.turns if summary else turn.number,
        next_speaker=summary.next_speaker if summary else None,
        candidate_convergence=bool(summary and summary.detail.get("candidate_convergence")),
        terminal_outcome=outcome.name if outcome else None,
        terminal_reason=outcome.reason if outcome else None,
        next_step="closing" if outcome else "debating",
        debate_path=str(path),
        artifact_created=created,
        adopted_turns=adopted,
        already_appended=already,
    )


# --- release and close ----------------------------------------------------------------------------


def _outcome(outcome: str | None) -> str:
    name = (outcome or "").strip().upper()
    if name not in OUTCOMES:
        raise BadInput(
            f"Outcome {outcome!r} is not one of {', '.join(sorted(OUTCOMES))}; pass one of them with --outcome.",
            rule="TOOLS_BAD_INPUT",
        )
    return name


def _reason(config: DuelConfig, turns: list[DuelTurn], outcome: str, given: str | None) -> str:
    text = " ".join((given or "").split())
    if text:
        return text
    computed = computed_outcome(config, turns)
    if computed is not None and computed.name == outcome:
        return computed.reason
    if outcome == OutcomeName.TIMEOUT.value:
        return "no second participant joined within the bounded wait"
    if outcome == OutcomeName.INVALIDATED.value:
        raise BadInput("An INVALIDATED close needs the reason; pass --reason with what failed validation.")
    return f"the participants recorded {outcome}"


def _write_conclusion(
    ws: Workspace,
    found: DebateStatus,
    me: LedgerParticipant,
    credentials: tuple[str, str],
    outcome: str,
    reason: str | None,
    fencing: int,
) -> DuelConclusion:
    """Record the Terminal Conclusion (its text too) and the outcome in one guarded transaction (idempotent).

    The record file is written from the ledger afterwards; only a record that is unreadable or was edited
    gets the conclusion written into it here, keeping its bytes as the evidence of what went wrong.
    """
    path = _artifact_path(ws, found.debate)
    config = duel_config(found.debate)
    table = _table(found)
    token, secret = credentials
    with ws.ledger.guarded_write(found.debate.id, me.id, token, fencing, participant_secret=secret) as guard:
        document, unreadable = _existing(path)
        if unreadable:
            if outcome != OutcomeName.INVALIDATED.value:
                raise refused_by(unreadable)
            # Nothing can be parsed, so nothing is checked: the conclusion goes after the record's bytes.
            given = " ".join((reason or "").split())
            conclusion = draft_conclusion(
                config, [], closed_at=ws.now(), outcome=OutcomeName.INVALIDATED, reason=given or unreadable[0].message
            )
            record.conclude_unreadable(path, conclusion)
            guard.conclude(
                outcome, reason=conclusion.reason, summary=conclusion.summary, body=record.render_conclusion(conclusion)
            )
            return conclusion
        if document is not None:
            written = document.chain_mark.turns if document.chain_mark is not None else None
            try:
                reconcile(guard, document.turn_texts, where=str(path), written_turns=written)
            except Refused as damage:
                if outcome != OutcomeName.INVALIDATED.value:
                    raise
                # the damage is what invalidates the duel
                return _conclude_damaged(ws, guard, path, document, table, reason or damage.message)
        shared = materialize.shared_duel(guard.record(), document, where=str(path))
        existing = shared.conclusion or (document.record.conclusion if document is not None else None)
        if existing is not None:
            if existing.outcome != outcome:
                raise Refused(
                    f"{path} already concludes {existing.outcome}; an outcome never changes, so close with "
                    f"--outcome {existing.outcome}.",
                    rule="TOOLS_CONFLICT",
                )
            body = shared.conclusion_text or (document.conclusion_text if document is not None else "")
            guard.conclude(outcome, reason=existing.reason, summary=existing.summary, body=body or None)
            return existing
        turns = list(shared.turns)
        conclusion = draft_conclusion(
            config,
            turns,
            closed_at=ws.now(),
            outcome=OutcomeName(outcome),
            reason=_reason(config, turns, outcome, reason),
        )
        state = DuelState(turns=tuple(turns))
        problems = [v for v in DuelProtocol(config, table).conclusion_violations(state, conclusion) if v.is_error]
        if problems:
            raise refused_by([v.at(file=str(path)) for v in problems])
        body = record.render_conclusion(conclusion)
        replace(shared, conclusion_text=body, conclusion=conclusion).render(path)  # must read back exactly
        guard.conclude(outcome, reason=conclusion.reason, summary=conclusion.summary, body=body)
    return conclusion


def _conclude_damaged(
    ws: Workspace,
    guard: LeaseGuard,
    path: Path,
    document: record.DuelDocument,
    table: list[Participant],
    reason: str,
) -> DuelConclusion:
    """INVALIDATED for a record whose accepted turns were edited: written into that record (kept as
    evidence) and stored in the ledger, from which every other host's record gets it."""
    turns = list(document.record.turns)
    config = document.record.config
    conclusion = draft_conclusion(
        config, turns, closed_at=ws.now(), outcome=OutcomeName.INVALIDATED, reason=" ".join(reason.split())
    )
    record.write_conclusion(path, conclusion, table)
    guard.conclude(
        conclusion.outcome,
        reason=conclusion.reason,
        summary=conclusion.summary,
        body=record.render_conclusion(conclusion),
    )
    return conclusion


@tool
def release_lock(
    ws: Workspace,
    *,
    duel_id: DuelId,
    participant_id: ParticipantId,
    lease_token: LeaseToken,
    close: Annotated[bool, Field(description="Write the Terminal Conclusion and close the duel.")] = False,
    outcome: Outcome = None,
    reason: Annotated[str | None, Field(description="With close: why it ended (required for INVALIDATED).")] = None,
    fencing_token: Fencing = None,
    participant_secret: ParticipantSecret = None,
) -> Released:
    """Give the lock back after your turn; with close=true and outcome, first write the Terminal Conclusion.

    ACCEPTED_CONSENSUS, DISSENT and MAX_TURNS are accepted only when the turns reach them (append reports
    terminal_outcome); TIMEOUT only while fewer than two joined and no outcome was reached; INVALIDATED needs a
    reason. A refused close answers closed: false.
    """
    if outcome is not None and not close:
        raise BadInput("An outcome is stored only when closing; pass --close with --outcome.")
    if close and outcome is None:
        raise BadInput("Closing a duel needs its outcome; pass --outcome, e.g. --outcome DISSENT.")
    action = "close the duel" if close else "release the lock"
    found = _status(ws, duel_id)
    me = _member(found, participant_id)
    path = str(ws.root / found.debate.artifact_path)
    if not close:
        token = _token(lease_token, action)
        secret = seats.secret_for(ws.keyring, duel_id, me.id, participant_secret)
        ws.ledger.release(duel_id, me.id, token, participant_secret=secret)
        _sync(ws, found.debate)
        return Released(duel_id=duel_id, closed=False, outcome=None, debate_path=path, next_step="debating")
    name = _outcome(outcome)
    try:
        with translated():
            token = _token(lease_token, action)
            secret = seats.secret_for(ws.keyring, duel_id, me.id, participant_secret)
            if name == OutcomeName.TIMEOUT.value and found.participant_count >= MIN_PARTICIPANTS:
                raise Refused(
                    f"Duel {duel_id} has {found.participant_count} participants, so it did not time out; keep the "
                    "lease and continue debating.",
                    rule="TOOLS_PEER_PRESENT",
                )
            fencing = found.last_fencing_token if fencing_token is None else fencing_token
            conclusion = _write_conclusion(ws, found, me, (token, secret), name, reason, fencing)
            ws.ledger.release(
                duel_id,
                me.id,
                token,
                participant_secret=secret,
                close=True,
                outcome=name,
                reason=conclusion.reason,
                summary=conclusion.summary,
            )
        _sync(ws, found.debate)
    except ToolError as refusal:
        refusal.detail.update({"closed": False, "next_step": "debating"})
        raise
    next_step: NextStep = "invalidated" if name == OutcomeName.INVALIDATED.value else "completed"
    return Released(duel_id=duel_id, closed=True, outcome=name, debate_path=path, next_step=next_step)


class DebateText(BaseModel):
    """``read``: the debate artifact's text and what moot's check says about it."""

    model_config = _FROZEN

    duel_id: str
    debate_path: str
    resource_uri: str
    exists: bool
    text: str
    artifact: ArtifactView


@tool
def read(ws: Workspace, *, duel_id: DuelId) -> DebateText:
    """The debate artifact (the duel's record) as Markdown text, its resource_uri, and what moot's check says
    about it. Derive the next turn number and your peer's latest arguments from it."""
    found = status(ws, duel_id=duel_id)
    path = Path(found.debate_path)
    text: str | None = ""
    if found.artifact.exists:
        text, problems = read_text(ws.inside(DUEL.folder, f"{DUEL.folder}/{path.name}"))
        if text is None:
            raise refused_by(problems)
    return DebateText(
        duel_id=found.duel_id,
        debate_path=str(path),
        resource_uri=resource_uri(DUEL.folder, path.name),
        exists=found.artifact.exists,
        text=text or "",
        artifact=found.artifact,
    )


def _seat(_: Workspace, arguments: dict[str, object]) -> tuple[str, str, str]:
    duel_id = str(arguments["duel_id"])
    return duel_id, str(arguments["participant_id"]), f"duel {duel_id!r}"


# Over MCP, join seats the connection as the participant it answers with; the other writes act only as that one.
# The MCP names are the ones the duel's clients and shipped skills have always used (no protocol prefix).
_JOINED = Seat(takes=False, of=_seat, claim="join", own_secrets=True)
TOOLS: ToolSet = (
    Tool(
        "join",
        join,
        seat=Seat(
            takes=True,
            answered=lambda joined: (joined.duel_id, joined.participant_id),
            name="participant_name",
            own_secrets=True,
        ),
        remembers="duel_id",
        folder_option="--debate-dir",
        mcp_name="join",
    ),
    Tool("status", status, read_only=True, locate="duel_id", mcp_name="status"),
    Tool("wait", wait, read_only=True, locate="duel_id", mcp_name="wait_turn"),
    Tool("claim-lock", claim_lock, seat=_JOINED, locate="duel_id", mcp_name="claim_lock"),
    Tool("refresh-lock", refresh_lock, seat=_JOINED, locate="duel_id", mcp_name="refresh_lock"),
    Tool("append", append, seat=_JOINED, locate="duel_id", mcp_name="append_turn"),
    Tool("release-lock", release_lock, seat=_JOINED, locate="duel_id", mcp_name="release_lock"),
    Tool("read", read, read_only=True, locate="duel_id", mcp_name="read_debate"),
)


def held(ws: Workspace, path: Path) -> bool:
    """True when the ledger holds the duel at ``path`` (its header's id, written to this file); the file is then
    brought up to date from the ledger."""
    text, _ = read_text(path)
    document = record.parse_document(text, str(path))[0] if text is not None else None
    if document is None or not document.record.config.duel_id:
        return False
    try:
        debate = ws.ledger.get_debate(document.record.config.duel_id)
    except NotFoundError:
        return False
    try:
        if _artifact_path(ws, debate).resolve() != path.resolve():
            return False  # the same id in another file: not this record
    except ToolError:
        return False
    _sync(ws, debate)
    return True


SHARING = Sharing(held=held, continue_with="moot duel claim-lock, append and release-lock")

__all__ = [
    "PROTOCOL",
    "SHARING",
    "TOOLS",
    "ArtifactView",
    "DebateText",
    "DuelStatus",
    "DuelWaited",
    "Joined",
    "TurnAppended",
    "append",
    "claim_lock",
    "held",
    "join",
    "read",
    "refresh_lock",
    "release_lock",
    "status",
    "wait",
]

"""The roundtable's agent tools: take the floor on ``turn.json``, speak, write the minutes.

The floor is a ledger lease on the meeting (a debate with protocol ``roundtable`` keyed by the meeting
directory; each role joins as a participant, the ``moderator`` too). Only the role ``turn.json`` names may
take it (the moderator once the meeting is concluding), and it does not wait for other roles to join:
``turn.json`` already says whose turn it is.

The ledger holds the meeting: its opening files, and each speech (then the minutes) with the ``turn.json``
it commits. ``speak`` validates the speech against the meeting as the ledger holds it, records it in the
guarded transaction, gives the floor back, and then writes this host's directory from the ledger
(:mod:`moot.protocols.roundtable.sharing`); every other host's directory catches up whenever a tool touches
the meeting there. A meeting is known by its name (``meeting:<name>``), so hosts with different work roots
meet in one. A crash before the commit changes nothing; one after it is finished by the next sync. A speech
file an older moot wrote before crashing is finished (with the prompt when the same speech is re-sent) and
adopted as :mod:`moot.tools.reconcile` describes. Each role's seat has a secret (:mod:`moot.tools.seats`):
the moderator's is returned by ``start``, a speaker's by its first ``take_floor``, and taking the floor
again, speaking and the minutes need it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from moot.core.participant_defaults import UNKNOWN_MODEL
from moot.errors import BadInput, LedgerError, ProtocolViolationError, Refused, SeatError, ToolError
from moot.ledger import DEFAULT_TTL_SECONDS, Debate, DebateRecord, JoinResult, LeaseGuard, Refusal
from moot.ledger import Participant as LedgerParticipant
from moot.plugin import Seat, Sharing, Tool, ToolSet
from moot.protocols.roundtable import PLUGIN as ROUNDTABLE
from moot.protocols.roundtable import record as meeting
from moot.protocols.roundtable import sharing as shared
from moot.protocols.roundtable.machine import (
    MINUTES_FILE,
    MODERATOR,
    TURN_FILE,
    Language,
    Speech,
    TurnState,
    advance,
    close_state,
    meeting_outcome,
    name_problem,
    opening_state,
    same_role,
    speech_file_name,
    speeches_before,
    state_violations,
)
from moot.tools import seats
from moot.tools.declare import Cli, Fencing, Harness, LeaseToken, ModelId, ParticipantSecret, RunId, Ttl
from moot.tools.errors import refused_by, tool, translated
from moot.tools.models import LockView, ParticipantView
from moot.tools.reconcile import chain_rows, reconcile
from moot.tools.workspace import Workspace

PROTOCOL = "roundtable"
TOPIC_SLUG = "meeting"  # the meeting directory identifies the debate; the slug only has to be valid
DEFAULT_PROMPT = "Read AGENDA.md and open the discussion."

# A result model's validator is built when a call first returns one, not when the module loads: an agent's
# every-turn command returns one kind of result and should not pay for the others.
_FROZEN = ConfigDict(frozen=True, defer_build=True)


class MeetingStarted(BaseModel):
    model_config = _FROZEN

    meeting: str
    meeting_id: str
    path: str
    speaker_order: list[str]
    max_rounds: int
    current_speaker: str
    prompt_for_speaker: str
    moderator_participant_id: str
    participant_secret: str
    """Shown once: the moderator seat's secret, which its take-floor and the minutes need."""


class FloorGranted(BaseModel):
    """The floor is yours until ``lease_expires_at``; the token is the credential for ``speak``/``minutes``."""

    model_config = _FROZEN

    acquired: bool = True
    meeting: str
    meeting_id: str
    role: str
    participant_id: str
    lease_token: str
    lease_expires_at: str
    fencing_token: int
    status: str
    round: int
    prompt_for_speaker: str
    participant_secret: str | None
    """Shown once: the secret of the seat this role took on its first take-floor (``None`` afterwards)."""


class FloorReleased(BaseModel):
    model_config = _FROZEN

    released: bool = True
    meeting: str
    role: str


class MeetingStatus(BaseModel):
    model_config = _FROZEN

    meeting: str
    meeting_id: str | None
    path: str
    status: str
    round: int
    max_rounds: int
    speaker_order: list[str]
    current_speaker: str
    prompt_for_speaker: str
    speeches: int
    floor: LockView | None
    floor_role: str | None
    participants: list[ParticipantView]
    valid: bool
    repairable: bool
    violations: list[str]
    outcome: str | None


class SpeechCommitted(BaseModel):
    model_config = _FROZEN

    meeting: str
    sequence: int
    role: str
    file: str
    digest: str
    status: str
    round: int
    next_speaker: str | None
    prompt_for_speaker: str
    released: bool
    repaired: bool
    """A speech a crash had left without its turn.json was finished first."""
    adopted_turns: list[int]
    already_committed: bool


class MeetingClosed(BaseModel):
    model_config = _FROZEN

    meeting: str
    status: str
    outcome: str
    consensus: bool
    reason: str
    minutes_path: str
    already_closed: bool


# --- lookups ------------------------------------------------------------------------------------


def _role(role: str) -> str:
    problem = name_problem(role)
    if problem is not None:
        raise BadInput(
            f"Role {role!r} {problem}; use a role from the meeting's speaker order.", rule="TOOLS_UNSAFE_NAME"
        )
    return unicodedata.normalize("NFC", role)


def _directory(ws: Workspace, name: str) -> Path:
    try:
        directory = meeting.meeting_dir(ws.root, name)
    except ValueError as exc:
        raise BadInput(str(exc).capitalize(), rule="TOOLS_UNSAFE_NAME") from exc
    return ws.inside(ROUNDTABLE.folder, directory.relative_to(ws.root))


def _record(directory: Path) -> meeting.MeetingRecord:
    if not (directory / TURN_FILE).exists():
        raise BadInput(
            f"{directory} is not a meeting; start it with moot roundtable start or check the name.",
            rule="TOOLS_BAD_INPUT",
        )
    record, problems = meeting.parse_meeting(directory)
    if record is None:
        raise refused_by(problems)
    return record


def _seats(state: TurnState) -> int:
    return len({unicodedata.normalize("NFC", r) for r in state.speaker_order} | {MODERATOR})


def _key(directory: Path) -> str:
    """What hosts meet on: the meeting's name, never a path of one host."""
    return f"meeting:{unicodedata.normalize('NFC', directory.name)}"


def _join(
    ws: Workspace,
    directory: Path,
    state: TurnState,
    role: str,
    seat: tuple[str, str, str],
    *,
    secret: str | None = None,
    opening: str | None = None,
) -> JoinResult:
    """Seat ``role`` (``seat`` is its harness, model and run id) in the meeting, with its secret if it has one."""
    if role != MODERATOR and not any(same_role(role, r) for r in state.speaker_order):
        raise BadInput(
            f"Role {role!r} is not in the speaker order {list(state.speaker_order)} of meeting "
            f"{state.conference!r}; join as one of those roles or as {MODERATOR!r}.",
            rule="TOOLS_IDENTITY",
        )
    harness, model_id, run_id = seat
    return ws.ledger.join(
        source_path=directory.relative_to(ws.root).as_posix(),
        source_key=_key(directory),
        opening=opening,
        topic=state.conference,
        topic_slug=TOPIC_SLUG,
        participant_name=role,
        harness=harness,
        model=model_id,
        run_id=run_id,
        artifact_dir=ROUNDTABLE.folder,
        protocol=PROTOCOL,
        seats=_seats(state),
        participant_secret=secret,
    )


def _debate(ws: Workspace, directory: Path) -> Debate | None:
    """The meeting's debate, the latest if the name was used before (an older moot knew it by its real path)."""
    found = ws.ledger.find_debate(directory, TOPIC_SLUG, protocol=PROTOCOL, source_key=_key(directory), closed=True)
    return found or ws.ledger.find_debate(directory, TOPIC_SLUG, protocol=PROTOCOL, closed=True)


def _sync(ws: Workspace, directory: Path) -> None:
    """Bring this host's meeting directory up to date from the ledger (best effort: an edited or unreadable
    directory is left as it is, for status, ``moot check`` and the next speech to report)."""
    debate = _debate(ws, directory)
    if debate is None:
        return
    try:
        with translated():
            shared.sync_meeting(directory, ws.ledger.record(debate.id))
    except (ToolError, ProtocolViolationError):
        return


def _holder(ws: Workspace, directory: Path, name: str, role: str) -> tuple[Debate, LedgerParticipant, int]:
    debate = _debate(ws, directory)
    if debate is None:
        raise Refused(
            f"Nobody holds the floor of meeting {name!r}; run moot roundtable take-floor first.", rule="TOOLS_LEASE"
        )
    found = ws.ledger.status(debate.id)
    me = next((p for p in found.participants if same_role(p.name, role)), None)
    if me is None:
        raise Refused(
            f"Role {role!r} has not taken the floor of meeting {name!r}; run moot roundtable take-floor first.",
            rule="TOOLS_LEASE",
        )
    return debate, me, found.last_fencing_token


def _token(lease_token: str | None) -> str:
    if not lease_token:
        raise Refused(
            "Speaking needs the lease token that take-floor printed; take the floor and pass --lease-token.",
            rule="TOOLS_LEASE",
        )
    return lease_token


# --- the tools ----------------------------------------------------------------------------------


Meeting = Annotated[str, Field(description="The meeting's name (its directory under .roundtable/).")]
Role = Annotated[str, Field(description="Your role in the speaker order (or moderator).")]


@tool
def start(
    ws: Workspace,
    *,
    name: Meeting,
    speakers: Annotated[
        list[str], Field(description="The speaking order, e.g. architect,reviewer (over MCP a list of roles).")
    ],
    max_rounds: Annotated[int, Field(description="The round limit.", ge=1)],
    agenda: Annotated[
        str,
        Field(description="AGENDA.md: the background, the topic and the roles (Markdown)."),
        Cli(file="agenda"),
    ],
    prompt: Annotated[str, Field(description="The first speaker's instruction.")] = "",
    harness: Harness = "unknown",
    model_id: ModelId = UNKNOWN_MODEL,
    run_id: RunId = "",
) -> MeetingStarted:
    """Create the meeting (AGENDA.md, turn.json) and seat you as its moderator, who writes the minutes once the
    meeting concludes; returns, once, the moderator seat's participant_secret (kept for you).

    The meeting is created in the ledger first, then written to this host's work root; a name another host
    already started is refused, and that host's meeting is joined by taking the floor.
    """
    directory = _directory(ws, name)
    roles = [_role(r.strip()) for r in speakers if r.strip()]
    if not roles:
        raise BadInput("A meeting needs at least one speaker; pass --speakers a,b,c.")
    if max_rounds < 1:
        raise BadInput(f"--max-rounds is {max_rounds}; a meeting has at least one round.")
    if not agenda.strip():
        raise BadInput("The agenda is empty; write the meeting's background, topic and roles into it.")
    state = opening_state(name, roles, max_rounds, prompt.strip() or DEFAULT_PROMPT)
    errors = [v for v in state_violations(state) if v.is_error]
    if errors:
        raise refused_by(errors)
    for folder in (directory.parent, directory):
        if folder.is_symlink():
            raise Refused(
                f"{folder} is a symbolic link; moot writes meetings only to real directories.", rule="TOOLS_CONFLICT"
            )
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise Refused(
            f"{directory} already exists; choose another meeting name or continue that meeting.", rule="TOOLS_CONFLICT"
        )
    earlier = _debate(ws, directory)
    if earlier is not None and earlier.status.value != "closed":
        raise Refused(
            f"Meeting {name!r} was already started (on another host, or before); take the floor in it with moot "
            "roundtable take-floor, or choose another name.",
            rule="TOOLS_CONFLICT",
        )
    opening = shared.opening_files(
        meeting.render_agenda(name, agenda, roles, max_rounds), meeting.render_turn_json(state)
    )
    raced = Refused(
        f"Meeting {name!r} was started by another host a moment ago; take the floor in it with moot "
        "roundtable take-floor.",
        rule="TOOLS_CONFLICT",
    )
    try:
        joined = _join(
            ws, directory, state, MODERATOR, (harness, model_id, run_id or f"roundtable:{name}"), opening=opening
        )
    except SeatError:
        raise raced from None
    if not joined.created or joined.secret is None:
        raise raced
    debate, moderator = joined.debate, joined.participant
    if ws.keyring is not None:
        ws.keyring.put(debate.id, moderator.id, joined.secret)
    with translated():
        shared.sync_meeting(directory, ws.ledger.record(debate.id))
    return MeetingStarted(
        meeting=name,
        meeting_id=debate.id,
        path=str(directory),
        speaker_order=list(state.speaker_order),
        max_rounds=state.max_rounds,
        current_speaker=state.current_speaker,
        prompt_for_speaker=state.prompt_for_speaker,
        moderator_participant_id=moderator.id,
        participant_secret=joined.secret,
    )


@tool
def status(ws: Workspace, *, name: Meeting) -> MeetingStatus:
    """turn.json (status, round, current_speaker, prompt_for_speaker), the speeches so far, who holds the floor
    (never a token) and what moot's check says."""
    directory = _directory(ws, name)
    _sync(ws, directory)
    record = _record(directory)
    state = record.state
    report = meeting.check(directory)
    debate = _debate(ws, directory)
    found = ws.ledger.status(debate.id) if debate is not None else None
    floor = LockView.of(found.lease) if found is not None else None
    holder = None
    if found is not None and floor is not None:
        holder = next((p.name for p in found.participants if p.id == floor.holder_participant_id), None)
    outcome = report.summary.outcome if report.summary else None
    return MeetingStatus(
        meeting=name,
        meeting_id=debate.id if debate else None,
        path=str(directory),
        status=state.status,
        round=state.round,
        max_rounds=state.max_rounds,
        speaker_order=list(state.speaker_order),
        current_speaker=state.current_speaker,
        prompt_for_speaker=state.prompt_for_speaker,
        # The accepted speeches: the check's turns less the moderator's minutes, which it counts as a turn too.
        speeches=report.summary.turns - (record.minutes is not None) if report.summary else 0,
        floor=floor,
        floor_role=holder,
        participants=[ParticipantView.of(p) for p in found.participants] if found else [],
        valid=not report.errors,
        repairable=report.repairable,
        violations=sorted({v.rule for v in report.violations}),
        outcome=("CONSENSUS" if outcome.consensus else "CLOSED") if outcome else None,
    )


@tool
def take_floor(
    ws: Workspace,
    *,
    name: Meeting,
    role: Role,
    harness: Harness = "unknown",
    model_id: ModelId = UNKNOWN_MODEL,
    run_id: RunId = "",
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    participant_secret: ParticipantSecret = None,
) -> FloorGranted:
    """Take the floor when turn.json says it is your turn (the moderator's once the meeting concludes): returns
    lease_token, prompt_for_speaker and, on the role's first take, its participant_secret (kept for you).
    Refused (TOOLS_NOT_YOUR_TURN) otherwise. Over MCP the connection then speaks only as that role here."""
    directory = _directory(ws, name)
    role = _role(role)
    _sync(ws, directory)
    state = _record(directory).state
    if state.status == "closed":
        raise Refused(f"Meeting {name!r} is over; read its {MINUTES_FILE}.", rule="TOOLS_DEBATE_CLOSED")
    expected = MODERATOR if state.status == "concluding" else state.current_speaker
    if not same_role(role, expected):
        raise Refused(
            f"[meeting blocked] It is {expected}'s turn to speak in {name!r}, not {role}'s; dispatch that agent.",
            rule="TOOLS_NOT_YOUR_TURN",
            detail={"acquired": False, "current_speaker": expected},
        )
    seat = (harness, model_id, run_id or f"roundtable:{name}:{role}")
    joined = seats.seated(
        ws.keyring, lambda secret: _join(ws, directory, state, role, seat, secret=secret), participant_secret
    )
    debate, me = joined.debate, joined.participant
    secret = joined.secret or seats.secret_for(ws.keyring, debate.id, me.id, participant_secret)
    # The floor never waits for other roles to join (turn.json orders the meeting): for_timeout.
    lease = ws.ledger.claim(debate.id, me.id, participant_secret=secret, ttl_seconds=ttl_seconds, for_timeout=True)
    if isinstance(lease, Refusal):
        holder = next(
            (p.name for p in ws.ledger.status(debate.id).participants if p.id == lease.holder_participant_id), None
        )
        raise Refused(
            lease.message,
            rule="TOOLS_LOCK_HELD",
            detail={
                "acquired": False,
                "holder_role": holder,
                "lease_expires_at": lease.lease_expires_at,
                "retry_after_seconds": lease.retry_after_seconds,
            },
        )
    return FloorGranted(
        meeting=name,
        meeting_id=debate.id,
        role=role,
        participant_id=me.id,
        lease_token=lease.lease_token,
        lease_expires_at=lease.lease_expires_at,
        fencing_token=lease.fencing_token,
        status=state.status,
        round=state.round,
        prompt_for_speaker=state.prompt_for_speaker,
        participant_secret=joined.secret,
    )


def _pending(record: meeting.MeetingRecord) -> Speech | None:
    """A speech whose turn.json advance a crash lost (the speech file is there, turn.json did not move)."""
    before = speeches_before(record.state)
    if record.state.status == "open" and before is not None and len(record.speeches) == before + 1:
        return record.speeches[-1]
    return None


def _release(ws: Workspace, debate: Debate, me: LedgerParticipant, token: str, secret: str) -> bool:
    try:
        ws.ledger.release(debate.id, me.id, token, participant_secret=secret)
    except LedgerError:
        return False  # the speech is committed; an expired floor needs no release
    return True


@tool
def speak(
    ws: Workspace,
    *,
    name: Meeting,
    role: Role,
    lease_token: LeaseToken,
    speech: Annotated[str, Field(description="Your speech (Markdown)."), Cli(flag="--file", file="speech file")],
    prompt_next: Annotated[str, Field(description="Your instruction or question for the next speaker.")] = "",
    consensus: Annotated[bool, Field(description="Declare that every participant now agrees.")] = False,
    fencing_token: Fencing = None,
    participant_secret: ParticipantSecret = None,
) -> SpeechCommitted:
    """Commit your speech and the next turn.json together, then give the floor back: returns sequence,
    next_speaker and status (concluding once the rounds are used or consensus is declared)."""
    token = _token(lease_token)
    directory = _directory(ws, name)
    role = _role(role)
    debate, me, fencing = _holder(ws, directory, name, role)
    secret = seats.secret_for(ws.keyring, debate.id, me.id, participant_secret)
    fencing = fencing if fencing_token is None else fencing_token
    _sync(ws, directory)
    repaired = already = False
    with ws.ledger.guarded_write(debate.id, me.id, token, fencing, participant_secret=secret) as guard:
        found = guard.record()
        record = _record(directory)
        pending = _pending(record)
        if pending is not None and len(record.speeches) > len(found.turns):
            # a speech file an older moot wrote before it crashed: finish its commit, then adopt it below
            same = same_role(pending.role, role) and pending.body == speech
            meeting.finish_commit(
                directory, prompt=(prompt_next.strip() or None) if same else None, consensus=same and consensus
            )
            repaired, already = True, same
        local, adopted = _reconciled(guard, directory)
        meeting_files = _shared(guard, local, directory)
        state, _ = meeting_files.replayed(directory)
        last = _last_speech(meeting_files)
        moved_on = state.status != "open" or not same_role(state.current_speaker, role)
        if last is not None and same_role(last.role, role) and last.body == speech and moved_on:
            already = True  # the same speech again: a retry after a crash or a lost reply
        if already:
            committed = last
        else:
            sequence = (last.sequence if last else 0) + 1
            committed = Speech(sequence=sequence, role=role, body=speech)
            prompt = prompt_next.strip() or f"Read {speech_file_name(sequence, role)} and continue the discussion."
            file = speech_file_name(sequence, role)
            turn_json = meeting.render_turn_json(advance(state, consensus=consensus, prompt=prompt))
            meeting_files = meeting_files.with_turn(file, speech, turn_json)
            state, _ = meeting_files.replayed(directory)  # refused, changing nothing, unless it checks clean
            found = _record_last(guard, found, meeting_files)
    assert committed is not None
    with translated():
        shared.sync_meeting(directory, found)  # the meeting as this transaction committed it
    released = _release(ws, debate, me, token, secret)
    return SpeechCommitted(
        meeting=name,
        sequence=committed.sequence,
        role=committed.role,
        file=str(directory / speech_file_name(committed.sequence, committed.role)),
        digest=chain_rows([committed.body])[0].digest,
        status=state.status,
        round=state.round,
        next_speaker=None if state.status == "closed" else state.current_speaker,
        prompt_for_speaker=state.prompt_for_speaker,
        released=released,
        repaired=repaired,
        adopted_turns=adopted,
        already_committed=already,
    )


def _reconciled(guard: LeaseGuard, directory: Path) -> tuple[shared.LocalMeeting | None, list[int]]:
    """Check this host's directory against the ledger (an outside edit is refused) and adopt what an older
    moot left on disk: its opening files, the text of turns it stored as digests, a crash's last speech."""
    local = shared.local_meeting(directory)
    if local is None:
        return None, []
    found = guard.record()
    if found.opening is None and local.agenda is not None:
        guard.open_record(shared.opening_files(local.agenda, None if local.entries else local.turn_json))
    reconciled = reconcile(guard, local.texts, where=str(directory), layouts=local.layouts())
    return local, list(reconciled.adopted)


def _shared(guard: LeaseGuard, local: shared.LocalMeeting | None, directory: Path) -> shared.MeetingFiles:
    found = shared.shared_meeting(guard.record(), local, where=directory)
    if found is None:
        raise BadInput(
            f"{directory} is not a meeting; start it with moot roundtable start or check the name.",
            rule="TOOLS_BAD_INPUT",
        )
    return found


def _last_speech(files: shared.MeetingFiles) -> Speech | None:
    for file, text in reversed(files.entries):
        named, _ = meeting.parse_speech_name(file)
        if named is not None:
            return Speech(sequence=named[0], role=named[1], body=text)
    return None


def _record_last(guard: LeaseGuard, found: DebateRecord, files: shared.MeetingFiles) -> DebateRecord:
    """Record the turn just added to ``files`` (its text, file and turn.json); the snapshot with it."""
    row = chain_rows(files.texts)[-1]
    file, text = files.entries[-1]
    guard.record_turn(row.turn, row.digest, row.chain, body=text, files=shared.turn_files(file, files.turn_json))
    return guard.record()


@tool
def minutes(
    ws: Workspace,
    *,
    name: Meeting,
    lease_token: LeaseToken,
    minutes_markdown: Annotated[
        str,
        Field(description="MINUTES.md with its four parts (consensus, disagreements, decisions, actions)."),
        Cli(flag="--file", file="minutes file", file_name="minutes_file"),
    ],
    language: Annotated[Language, Field(description="The headings' language: en or zh.")] = "en",
    minutes_file: str = MINUTES_FILE,
    fencing_token: Fencing = None,
    participant_secret: ParticipantSecret = None,
) -> MeetingClosed:
    """The moderator's minutes: write MINUTES.md and close the meeting (turn.json closed) under the floor's
    lease."""
    token = _token(lease_token)
    directory = _directory(ws, name)
    parsed, problems = meeting.parse_minutes(minutes_markdown, minutes_file)
    if any(v.is_error for v in problems):
        raise refused_by(problems)
    debate, me, fencing = _holder(ws, directory, name, MODERATOR)
    secret = seats.secret_for(ws.keyring, debate.id, me.id, participant_secret)
    fencing = fencing if fencing_token is None else fencing_token
    _sync(ws, directory)
    already = False
    with ws.ledger.guarded_write(debate.id, me.id, token, fencing, participant_secret=secret) as guard:
        found = guard.record()
        record = _record(directory)
        if record.state.status == "concluding" and record.minutes is not None:
            meeting.finish_commit(directory)  # MINUTES.md was written, turn.json not: finish the close
        local, _ = _reconciled(guard, directory)
        meeting_files = _shared(guard, local, directory)
        state, replayed = meeting_files.replayed(directory)
        if state.status == "closed" and replayed.minutes == parsed:
            already = True
        else:
            text = meeting.render_minutes(parsed, state.conference, language)
            turn_json = meeting.render_turn_json(close_state(state))
            meeting_files = meeting_files.with_turn(MINUTES_FILE, text, turn_json)
            state, replayed = meeting_files.replayed(directory)
            found = _record_last(guard, found, meeting_files)
    with translated():
        shared.sync_meeting(directory, found)
    ended = meeting_outcome(replayed)
    consensus = bool(ended and ended.consensus)
    outcome = "CONSENSUS" if consensus else "CLOSED"
    reason = ended.reason if ended else "the moderator closed the meeting"
    ws.ledger.release(debate.id, me.id, token, participant_secret=secret, close=True, outcome=outcome, reason=reason)
    return MeetingClosed(
        meeting=name,
        status="closed",
        outcome=outcome,
        consensus=consensus,
        reason=reason,
        minutes_path=str(directory / MINUTES_FILE),
        already_closed=already,
    )


@tool
def release_floor(
    ws: Workspace, *, name: Meeting, role: Role, lease_token: LeaseToken, participant_secret: ParticipantSecret = None
) -> FloorReleased:
    """Give the floor back without speaking."""
    token = _token(lease_token)
    directory = _directory(ws, name)
    debate, me, _ = _holder(ws, directory, name, _role(role))
    secret = seats.secret_for(ws.keyring, debate.id, me.id, participant_secret)
    ws.ledger.release(debate.id, me.id, token, participant_secret=secret)
    return FloorReleased(meeting=name, role=me.name)


def _seat_of(role: str | None) -> Callable[[Workspace, dict[str, Any]], tuple[str, str, str]]:
    """The seat a call is about: the meeting (its name, as every host knows it) and the role it names, or
    ``role``."""

    def seat(_: Workspace, arguments: dict[str, Any]) -> tuple[str, str, str]:
        name = unicodedata.normalize("NFC", str(arguments["name"]))
        who = role or unicodedata.normalize("NFC", str(arguments["role"]))
        return f"roundtable:{name}", who, f"the meeting {name!r}"

    return seat


# Over MCP, start seats the moderator and take-floor a speaker; speaking, the minutes and giving the floor back
# act only in that seat.
_SPEAKER = Seat(takes=False, of=_seat_of(None), claim="roundtable_take_floor", own_secrets=True)
TOOLS: ToolSet = (
    Tool("status", status, read_only=True),
    Tool("start", start, seat=Seat(takes=True, of=_seat_of(MODERATOR), own_secrets=True)),
    Tool("take-floor", take_floor, seat=Seat(takes=True, of=_seat_of(None), own_secrets=True)),
    Tool("speak", speak, seat=_SPEAKER),
    Tool(
        "minutes", minutes, seat=Seat(takes=False, of=_seat_of(MODERATOR), claim="roundtable_start", own_secrets=True)
    ),
    Tool("release", release_floor, seat=_SPEAKER, mcp_name="roundtable_release_floor"),
)


def held(ws: Workspace, directory: Path) -> bool:
    """True when the ledger holds the meeting in ``directory``; its files are then brought up to date."""
    if _debate(ws, directory) is None:
        return False
    _sync(ws, directory)
    return True


SHARING = Sharing(held=held, continue_with="moot roundtable take-floor, speak and release")

__all__ = [
    "SHARING",
    "TOOLS",
    "FloorGranted",
    "FloorReleased",
    "MeetingClosed",
    "MeetingStarted",
    "MeetingStatus",
    "SpeechCommitted",
    "minutes",
    "release_floor",
    "speak",
    "start",
    "status",
    "take_floor",
]

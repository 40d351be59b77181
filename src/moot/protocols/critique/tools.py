"""The Critique Loop's agent tool: append one turn (the participant instructions' Rule 2 form) to a
``.dialogues/`` record, with its Status checked by the protocol.

The seed runs a critique loop with one orchestrator that spawns the participants one at a time, so a
lease is optional:

- without a lease, appends to one dialogue are serialised by a lock file under ``<root>/.moot/locks`` (one
  machine), validated, written atomically, and chained (tamper evidence);
- with a lease (``claim`` → ``append --lease-token`` → ``release``), the dialogue is also a ledger debate
  that holds the whole dialogue: each append is validated against the dialogue as the ledger holds it and
  recorded (its text and place in the file) in a guarded transaction, as the duel does; the file is then
  written from the ledger (:mod:`moot.protocols.critique.sharing`) on this host, and on any other whenever a
  tool touches the dialogue there. A dialogue is known by its path under ``.dialogues/``, so hosts with
  different work roots meet in one. A dialogue that was claimed once accepts no lease-less appends (the
  ledger would lose track of them). Each role's seat has a secret (:mod:`moot.tools.seats`): its first
  ``claim`` returns it once, and later claims and every leased write need it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from moot.core.chain import ChainMark
from moot.core.files import MAX_ARTIFACT_BYTES, read_text, too_large
from moot.core.participant_defaults import UNKNOWN_MODEL
from moot.errors import BadInput, ProtocolViolationError, Refused, ToolError, Violation
from moot.ledger import DEFAULT_TTL_SECONDS, Debate, DebateRecord, LeaseGuard, Refusal
from moot.ledger import Participant as LedgerParticipant
from moot.plugin import Seat, Sharing, Tool, ToolSet
from moot.protocols.critique import PLUGIN as CRITIQUE
from moot.protocols.critique import record as dialogue
from moot.protocols.critique import sharing as shared
from moot.protocols.critique.machine import EXTENSION_ROUNDS, CritiqueProtocol, CritiqueTurn, is_turn_header
from moot.tools import seats
from moot.tools.declare import Cli, Fencing, Harness, LeaseToken, ModelId, ParticipantSecret, RunId, Ttl
from moot.tools.errors import refused_by, tool, translated
from moot.tools.models import LockView
from moot.tools.reconcile import chain_rows, reconcile
from moot.tools.source_identity import first_difference
from moot.tools.workspace import Workspace

PROTOCOL = "critique"
TOPIC_SLUG = "dialogue"  # the dialogue file identifies the debate; the slug only has to be valid
LOCKS_DIR = Path(".moot") / "locks"

# A result model's validator is built when a call first returns one, not when the module loads: an agent's
# every-turn command returns one kind of result and should not pay for the others.
_FROZEN = ConfigDict(frozen=True, defer_build=True)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_RULE_LINE = re.compile(r"\s*-{3,}\s*")


class DialogueTurnAppended(BaseModel):
    model_config = _FROZEN

    file: str
    turn_number: int
    role: str
    round: int
    status: str
    digest: str
    next_speaker: str | None
    outcome: str | None
    outcome_reason: str | None
    warnings: list[Violation]
    leased: bool
    adopted_turns: list[int]
    already_appended: bool


class DialogueLock(BaseModel):
    model_config = _FROZEN

    acquired: bool = True
    file: str
    dialogue_id: str
    role: str
    participant_id: str
    lease_token: str
    lease_expires_at: str
    fencing_token: int
    participant_secret: str | None
    """Shown once: the secret of the seat this role took on its first claim (``None`` afterwards)."""


class DialogueReleased(BaseModel):
    model_config = _FROZEN

    released: bool = True
    file: str
    closed: bool
    outcome: str | None


class DialogueExtended(BaseModel):
    model_config = _FROZEN

    file: str
    max_rounds: int
    leased: bool


class DialogueStatus(BaseModel):
    model_config = _FROZEN

    file: str
    dialogue_id: str | None
    topic: str
    roles: list[str]
    turns: int
    round: int | None
    next_speaker: str | None
    outcome: str | None
    lock: LockView | None
    lock_role: str | None
    valid: bool
    violations: list[str]


# --- reading ------------------------------------------------------------------------------------


def _path(ws: Workspace, file: str) -> Path:
    path = ws.inside(CRITIQUE.folder, file)
    _sync(ws, path)
    if not path.is_file():
        raise BadInput(f"{path} is not a dialogue record; pass an existing file under {CRITIQUE.folder}/.")
    return path


def _read(path: Path) -> tuple[str, dialogue.CritiqueRecord]:
    text, problems = read_text(path)
    if text is None:
        raise refused_by(problems)
    found, violations = dialogue.parse(text, str(path))
    if found is None:
        raise refused_by(violations)
    return text, found


def parse_turn(existing: str, turn_text: str, *, file: str, record_file: str) -> CritiqueTurn:
    """The one Rule 2 turn in ``turn_text`` as it would read after ``existing``; violations point into ``file``.

    The leading ``---`` may be left out.
    """
    lines = _LINE_BREAK.split(turn_text.removeprefix("\ufeff"))
    skipped = 0
    while skipped < len(lines) and not lines[skipped].strip():
        skipped += 1
    body = lines[skipped:]
    while body and not body[-1].strip():
        body.pop()
    if not body or not (_RULE_LINE.fullmatch(body[0]) or is_turn_header(body[0])):
        raise Refused(
            f"{file} must start with '---' and the header '## [<role>] Round N — YYYY-MM-DD HH:MM'; write the "
            "turn in the Rule 2 form.",
            rule="TOOLS_TURN_FILE",
        )
    prefix = [] if _RULE_LINE.fullmatch(body[0]) else ["---", ""]
    before = existing + ("\n" if existing.endswith(("\n", "\r")) else "\n\n")
    offset = len(_LINE_BREAK.findall(before)) + len(prefix) - skipped
    synthetic = before + "\n".join([*prefix, *body]) + "\n"
    found, problems = dialogue.parse(synthetic, None)

    def located(v: Violation) -> Violation:
        if v.line is not None and v.line > offset:
            return v.model_copy(update={"file": file, "line": v.line - offset, "turn": None})
        return v.model_copy(update={"file": record_file})

    errors = [located(v) for v in problems if v.is_error]
    if found is None or errors:
        raise refused_by(errors)
    existing_turns = len(dialogue.turn_sources(existing))
    if len(found.turns) != existing_turns + 1:
        raise Refused(
            f"{file} holds {len(found.turns) - existing_turns} turns; put exactly one turn in it.",
            rule="TOOLS_TURN_FILE",
        )
    return found.turns[-1]


def _texts(path: Path) -> list[str]:
    text, _ = _read(path)
    return [source.text for source in dialogue.turn_sources(text)]


@contextmanager
def _file_lock(ws: Workspace, path: Path) -> Iterator[None]:
    """Serialise lease-less appends to one dialogue across processes on this machine (POSIX)."""
    import fcntl

    locks = ws.root / LOCKS_DIR
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:32]
    with open(locks / f"{name}.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _key(ws: Workspace, path: Path) -> str:
    """What hosts meet on: the dialogue's path under ``.dialogues/``, never a path of one host."""
    return f"dialogue:{path.relative_to(ws.root / CRITIQUE.folder).as_posix()}"


def _debate(ws: Workspace, path: Path, *, closed: bool = False) -> Debate | None:
    """The dialogue's debate (with ``closed``, the latest even if closed); an older moot knew it by its real path."""
    key = _key(ws, path)
    found = ws.ledger.find_debate(path, TOPIC_SLUG, protocol=PROTOCOL, source_key=key, closed=closed)
    return found or ws.ledger.find_debate(path, TOPIC_SLUG, protocol=PROTOCOL, closed=closed)


def _sync(ws: Workspace, path: Path) -> None:
    """Bring this host's dialogue file up to date from the ledger (best effort: an edited or unreadable file
    is left as it is, for status, ``moot check`` and the next append to report)."""
    debate = _debate(ws, path, closed=True)
    if debate is None:
        return
    try:
        with translated():
            shared.sync_dialogue(path, ws.ledger.record(debate.id))
    except (ToolError, ProtocolViolationError):
        return


def _participant(ws: Workspace, debate: Debate, role: str, given: str | None) -> tuple[LedgerParticipant, str, int]:
    """``role``'s participant in the claimed dialogue, its secret, and the last fencing number."""
    found = ws.ledger.status(debate.id)
    me = next((p for p in found.participants if p.name == role), None)
    if me is None:
        raise Refused(
            f"Role {role!r} has not claimed this dialogue; run moot critique claim first.", rule="TOOLS_LEASE"
        )
    return me, seats.secret_for(ws.keyring, debate.id, me.id, given), found.last_fencing_token


# --- the tools ----------------------------------------------------------------------------------


def _write(path: Path, turn: CritiqueTurn) -> tuple[bool, list[Violation]]:
    """Append ``turn`` to the file unless it is already the last turn (a retry)."""
    _, current = _read(path)
    if current.turns and current.turns[-1] == turn:
        return True, []
    return False, dialogue.append_turn(path, turn).warnings


def _identity(turn: CritiqueTurn, role: str) -> None:
    if turn.role != role:
        raise Refused(
            f"The turn is written as [{turn.role}] but you append as {role!r}; write the header with your own role.",
            rule="TOOLS_IDENTITY",
        )


def _write_shared(
    guard: LeaseGuard, path: Path, role: str, turn_markdown: str, turn_file: str
) -> tuple[CritiqueTurn, bool, list[Violation], tuple[int, ...], DebateRecord]:
    """Validate the turn against the dialogue as the ledger holds it and record it there (nothing is written
    to the file here); returns the turn, whether it was already there, the warnings, the turns adopted from
    this host's file, and the ledger snapshot to write the file from."""
    text, _ = _read(path)
    mine = shared.cut(text)
    if guard.record().opening is None:  # claimed by an older moot: the ledger takes this host's header
        guard.open_record(shared.opening_files(path.name, mine.opening))
    written = mine.layouts(path.name)
    adopted = reconcile(guard, mine.texts, where=str(path), adopt_history=True, layouts=written).adopted
    held = shared.shared_dialogue(guard.record(), text, where=path)
    assert held is not None  # the opening was stored above
    turn = parse_turn(held.text, turn_markdown, file=turn_file, record_file=str(path))
    _identity(turn, role)
    record, _ = dialogue.parse(held.text, str(path))
    if record is None:
        raise Refused(f"The ledger's turns of {path} do not read back as a dialogue; restore the file and retry.")
    if record.turns and record.turns[-1] == turn:
        return turn, True, [], adopted, guard.record()
    protocol = CritiqueProtocol(record.config)
    try:
        _, warnings = protocol.step(protocol.replay(record.turns).state, turn)
    except ProtocolViolationError as refused:
        raise refused_by([v.at(file=str(path)) for v in refused.violations]) from None
    before = held.text + ("\n" if held.text.endswith(("\n", "\r")) else "\n\n")
    texts = shared.cut(before + dialogue.render_turn(turn)).texts
    text = before + dialogue.render_marked(turn, ChainMark.of(texts))  # the chain's head after it, as appends do
    size = len(text.encode("utf-8"))
    if size > MAX_ARTIFACT_BYTES:
        raise refused_by([too_large(str(path), size, writing=True)])
    grown = shared.cut(text)
    if grown.texts != texts or texts[:-1] != held.texts or len(grown.pieces) != len(held.pieces) + 1:
        raise Refused("The turn would not read back as written; simplify its message.", rule="CRITIQUE_TURN_HEADER")
    row = chain_rows(grown.texts)[-1]
    guard.record_turn(row.turn, row.digest, row.chain, body=grown.texts[-1], files=grown.layouts(path.name)[-1])
    return turn, False, warnings, adopted, guard.record()


File = Annotated[
    str,
    Field(
        description="The dialogue record under .dialogues/, e.g. .dialogues/api-design.md (relative to the "
        "work root, or absolute)."
    ),
]
Role = Annotated[str, Field(description="Your role in the dialogue, as its Participants list names it.")]


@tool
def append(
    ws: Workspace,
    *,
    file: File,
    role: Role,
    turn_markdown: Annotated[
        str,
        Field(
            description="Exactly one turn in the Rule 2 form: '## [<role>] Round N — YYYY-MM-DD HH:MM', the "
            "message, then 'Status: …' last."
        ),
        Cli(flag="--turn-file", file="turn file", file_name="turn_file"),
    ],
    turn_file: str = "<turn>",
    lease_token: LeaseToken = None,
    fencing_token: Fencing = None,
    participant_secret: ParticipantSecret = None,
) -> DialogueTurnAppended:
    """Validate one turn (format, status, alternation, rounds, timestamps) and append it; under your lease once
    the dialogue was claimed (without one before).

    Returns turn_number, round, status, next_speaker and outcome (DONE, STUCK, MAX_ROUNDS once reached). A turn
    that breaks a rule is refused with the rule ids; nothing is written.
    """
    path = _path(ws, file)
    debate = _debate(ws, path)
    adopted: tuple[int, ...] = ()
    if lease_token:
        if debate is None:
            raise Refused(f"Nobody claimed {path}; run moot critique claim first.", rule="TOOLS_LEASE")
        me, secret, fencing = _participant(ws, debate, role, participant_secret)
        with ws.ledger.guarded_write(
            debate.id,
            me.id,
            lease_token,
            fencing if fencing_token is None else fencing_token,
            participant_secret=secret,
        ) as guard:
            turn, already, warnings, adopted, snapshot = _write_shared(guard, path, role, turn_markdown, turn_file)
        with translated():
            shared.sync_dialogue(path, snapshot)  # the dialogue as this transaction committed it
    else:
        text, _ = _read(path)
        turn = parse_turn(text, turn_markdown, file=turn_file, record_file=str(path))
        _identity(turn, role)
        if debate is not None:
            raise Refused(
                f"{path} is coordinated through leases since it was claimed; claim it and pass --lease-token.",
                rule="TOOLS_LEASE",
            )
        with _file_lock(ws, path):
            already, warnings = _write(path, turn)
    texts = _texts(path)
    summary = dialogue.check(path).summary
    ended = summary.outcome if summary else None
    return DialogueTurnAppended(
        file=str(path),
        turn_number=len(texts),
        role=turn.role,
        round=turn.round,
        status=turn.status_text,
        digest=chain_rows(texts)[-1].digest,
        next_speaker=summary.next_speaker if summary else None,
        outcome=ended.name if ended else None,
        outcome_reason=ended.reason if ended else None,
        warnings=warnings,
        leased=bool(lease_token),
        adopted_turns=list(adopted),
        already_appended=already,
    )


@tool
def claim(
    ws: Workspace,
    *,
    file: File,
    role: Role,
    harness: Harness = "unknown",
    model_id: ModelId = UNKNOWN_MODEL,
    run_id: RunId = "",
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    participant_secret: ParticipantSecret = None,
) -> DialogueLock:
    """Coordinate the dialogue through leases from now on and take the lease for your role: returns
    lease_token, fencing_token and, on the role's first claim, its participant_secret (kept for you). Refused
    (TOOLS_LOCK_HELD) with retry_after_seconds while the other role holds it."""
    path = _path(ws, file)
    text, found = _read(path)
    if role not in found.config.roles:
        raise BadInput(
            f"Role {role!r} is not a participant of {path} ({' and '.join(found.config.roles)}); claim as one of them.",
            rule="TOOLS_IDENTITY",
        )
    opening = shared.cut(text).opening
    _same_header(ws, path, opening)
    joined = seats.seated(
        ws.keyring,
        lambda secret: ws.ledger.join(
            source_path=path.relative_to(ws.root).as_posix(),
            source_key=_key(ws, path),
            opening=shared.opening_files(path.name, opening),
            topic=found.config.topic,
            topic_slug=TOPIC_SLUG,
            participant_name=role,
            harness=harness,
            model=model_id,
            run_id=run_id or f"critique:{path.name}:{role}",
            artifact_dir=CRITIQUE.folder,
            protocol=PROTOCOL,
            participant_secret=secret,
        ),
        participant_secret,
    )
    debate, me = joined.debate, joined.participant
    secret = joined.secret or seats.secret_for(ws.keyring, debate.id, me.id, participant_secret)
    # One orchestrator runs the participants one at a time: the lease never waits for the peer to join.
    lease = ws.ledger.claim(debate.id, me.id, participant_secret=secret, ttl_seconds=ttl_seconds, for_timeout=True)
    if isinstance(lease, Refusal):
        raise Refused(
            lease.message,
            rule="TOOLS_LOCK_HELD",
            detail={
                "acquired": False,
                "lease_expires_at": lease.lease_expires_at,
                "retry_after_seconds": lease.retry_after_seconds,
            },
        )
    return DialogueLock(
        file=str(path),
        dialogue_id=joined.debate.id,
        role=role,
        participant_id=joined.participant.id,
        lease_token=lease.lease_token,
        lease_expires_at=lease.lease_expires_at,
        fencing_token=lease.fencing_token,
        participant_secret=joined.secret,
    )


@tool
def extend(
    ws: Workspace,
    *,
    file: File,
    role: Role,
    lease_token: LeaseToken = None,
    rounds: Annotated[int, Field(description="How many more rounds (default: as moot run offers).")] = (
        EXTENSION_ROUNDS
    ),
    participant_secret: ParticipantSecret = None,
) -> DialogueExtended:
    """Raise the dialogue's round limit; a claimed dialogue's header changes in the ledger, under your lease,
    so that every host's file shows the new limit."""
    if rounds < 1:
        raise BadInput("Extend by at least one round; pass --rounds 1 or more.")
    path = _path(ws, file)
    debate = _debate(ws, path)
    if debate is None:
        with _file_lock(ws, path):
            config = dialogue.extend(path, rounds)
        return DialogueExtended(file=str(path), max_rounds=config.max_rounds, leased=False)
    if not lease_token:
        raise Refused(
            f"{path} is coordinated through leases since it was claimed; claim it and pass --lease-token.",
            rule="TOOLS_LEASE",
        )
    me, secret, fencing = _participant(ws, debate, role, participant_secret)
    with ws.ledger.guarded_write(debate.id, me.id, lease_token, fencing, participant_secret=secret) as guard:
        text, _ = _read(path)
        held = shared.shared_dialogue(guard.record(), text, where=path)
        if held is None:
            raise Refused(f"The ledger does not hold the header of {path} yet; append a turn first, then extend.")
        found, _ = dialogue.parse(held.opening)
        if found is None:
            raise Refused(f"The header of {path} the ledger holds does not read back; restore the file and retry.")
        limit = found.config.extended(rounds).max_rounds
        guard.reopen_record(shared.opening_files(path.name, dialogue.with_max_rounds(held.opening, limit)))
        snapshot = guard.record()
    with translated():
        shared.sync_dialogue(path, snapshot)
    return DialogueExtended(file=str(path), max_rounds=limit, leased=True)


def _same_header(ws: Workspace, path: Path, opening: str) -> None:
    """Refuse a host whose dialogue was started apart from the one the ledger holds under the same name."""
    debate = _debate(ws, path)
    held = ws.ledger.record(debate.id).opening if debate is not None else None
    theirs = json.loads(held).get(path.name) if held is not None else None
    if theirs is not None and theirs != opening:
        raise Refused(
            f"Your {path} was started apart from the dialogue of that name the ledger holds; its header differs at "
            f"{first_difference(opening, theirs)}. Move your file aside to take part in the shared one, or rename "
            "yours to start another.",
            rule="TOOLS_SOURCE_MISMATCH",
        )


@tool
def release(
    ws: Workspace,
    *,
    file: File,
    role: Role,
    lease_token: LeaseToken,
    close: Annotated[
        bool, Field(description="Store the outcome the record reached (DONE, STUCK or MAX_ROUNDS).")
    ] = False,
    participant_secret: ParticipantSecret = None,
) -> DialogueReleased:
    """Give the lease back after your turn so the other role can claim it; with close, store the outcome."""
    path = _path(ws, file)
    debate = _debate(ws, path)
    if debate is None or not lease_token:
        raise Refused(
            f"Releasing {path} needs the lease token that claim printed; pass --lease-token.", rule="TOOLS_LEASE"
        )
    me, secret, _ = _participant(ws, debate, role, participant_secret)
    outcome = None
    if close:
        summary = dialogue.check(path).summary
        if summary is None or summary.outcome is None:
            raise Refused(
                f"{path} has not reached an outcome (DONE, STUCK or MAX_ROUNDS); release without --close.",
                rule="TOOLS_BAD_INPUT",
            )
        outcome = summary.outcome.name
        ws.ledger.release(
            debate.id,
            me.id,
            lease_token,
            participant_secret=secret,
            close=True,
            outcome=outcome,
            reason=summary.outcome.reason,
        )
    else:
        ws.ledger.release(debate.id, me.id, lease_token, participant_secret=secret)
    return DialogueReleased(file=str(path), closed=close, outcome=outcome)


@tool
def status(ws: Workspace, *, file: File) -> DialogueStatus:
    """What the dialogue says (turns, round, next_speaker, outcome, violations) and who holds its lease."""
    path = _path(ws, file)
    report = dialogue.check(path)
    text, _ = read_text(path)
    found = dialogue.parse(text)[0] if text is not None else None
    debate = _debate(ws, path)
    current = ws.ledger.status(debate.id) if debate is not None else None
    lock = LockView.of(current.lease) if current is not None else None
    holder = None
    if current is not None and lock is not None:
        holder = next((p.name for p in current.participants if p.id == lock.holder_participant_id), None)
    summary = report.summary
    return DialogueStatus(
        file=str(path),
        dialogue_id=debate.id if debate else None,
        topic=found.config.topic if found else "",
        roles=list(found.config.roles) if found else [],
        turns=summary.turns if summary else 0,
        round=summary.round if summary else None,
        next_speaker=summary.next_speaker if summary else None,
        outcome=summary.outcome.name if summary and summary.outcome else None,
        lock=lock,
        lock_role=holder,
        valid=not report.errors,
        violations=sorted({v.rule for v in report.violations}),
    )


def _seat(ws: Workspace, arguments: dict[str, Any]) -> tuple[str, str, str]:
    """The seat a call is about: the record (its absolute path) and the role it names."""
    path = (ws.root / str(arguments["file"])).resolve()
    return str(path), str(arguments["role"]), f"the dialogue {path.name}"


# Over MCP, claim seats the connection as the role (and makes the dialogue a leased ledger debate); the other
# writes act only as that role, under its lease.
_CLAIMED = Seat(takes=False, of=_seat, claim="critique_claim", own_secrets=True)
TOOLS: ToolSet = (
    Tool("status", status, read_only=True),
    Tool("claim", claim, seat=Seat(takes=True, of=_seat, own_secrets=True)),
    Tool("append", append, seat=_CLAIMED),
    Tool("release", release, seat=_CLAIMED),
    Tool("extend", extend, seat=_CLAIMED),
)


def held(ws: Workspace, path: Path) -> bool:
    """True when the ledger holds the dialogue at ``path`` (closed ones too); the file is then brought up to date."""
    if _debate(ws, path, closed=True) is None:
        return False
    _sync(ws, path)
    return True


SHARING = Sharing(held=held, continue_with="moot critique claim, append and release")

__all__ = [
    "SHARING",
    "TOOLS",
    "DialogueExtended",
    "DialogueLock",
    "DialogueReleased",
    "DialogueStatus",
    "DialogueTurnAppended",
    "append",
    "claim",
    "extend",
    "parse_turn",
    "release",
    "status",
]

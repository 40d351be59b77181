"""The agent tools on the command line: ``moot duel …``, ``moot roundtable …``, ``moot critique …``,
``moot emit`` and ``moot events``. Thin wrappers over :mod:`moot.tools`, imported only when a command runs
(so that ``moot --help`` stays fast); their options are declared once (:mod:`moot.cli.tool_options`) and read
without typer on an agent's every-turn call.

Every agent command prints one JSON object on stdout — ``ok: true`` and the result, or ``ok: false`` with
``error``, ``kind`` and the ``rules`` that refused it — and exits 0 (ok), 1 (refused by a rule or the
lease), 2 (bad input) or 3 (the ledger is unavailable; retry). A refusal's sentence also goes to stderr.
See docs/agent-tools.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

from moot.cli.tool_options import Opt, ToolGroup
from moot.core.participant_defaults import UNKNOWN_MODEL

if TYPE_CHECKING:
    import typer
    from pydantic import BaseModel

    from moot.tools.workspace import Workspace

# Defaults follow rp1: a lease lasts 15 minutes, a refused claim says to retry after 30 s.
DEFAULT_TTL_SECONDS = 900.0
DEFAULT_RETRY_AFTER_SECONDS = 30

Root = Annotated[
    Path | None,
    Opt("--root", envvar="MOOT_ROOT", help="The work root (default: $MOOT_ROOT, else the current directory)."),
]
LeaseToken = Annotated[
    str | None,
    Opt(
        "--lease-token",
        envvar="MOOT_LEASE_TOKEN",
        help="The token claim-lock/take-floor printed (or $MOOT_LEASE_TOKEN).",
    ),
]
Ttl = Annotated[
    float,
    Opt("--ttl-seconds", envvar="MOOT_LEASE_SECONDS", help="How long the lease lasts (default 900 s)."),
]
Secret = Annotated[
    str | None,
    Opt(
        "--participant-secret",
        envvar="MOOT_PARTICIPANT_SECRET",
        help="Your seat's secret, which join printed once (default: the one moot kept for you when you joined, "
        "else $MOOT_PARTICIPANT_SECRET).",
    ),
]
Fencing = Annotated[
    int | None,
    Opt("--fencing-token", help="The fencing number claim-lock printed; checked with the token if given."),
]
Harness = Annotated[str, Opt("--harness", help="The agent harness: claude-code, codex, … .")]
ModelId = Annotated[str, Opt("--model-id", help="The model identity recorded with the turns.")]
RunId = Annotated[str, Opt("--run-id", help="The workflow run this participant belongs to.")]


def _print(payload: dict[str, Any], code: int) -> NoReturn:
    print(json.dumps(payload, ensure_ascii=False, indent=2), flush=True)
    if code:
        print(f"moot: {payload.get('error', 'refused')}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def _run(root: Path | None, call: Callable[[Workspace], BaseModel], *, debate_id: str | None = None) -> None:
    """Run one tool in the work root: ``root``, else (for a command given a ``debate_id``) the root that
    holds that debate (see moot.tools.locate), else the current directory."""
    from moot.tools import ToolError, invoke, open_workspace

    try:
        if debate_id is not None:
            from moot.tools.locate import open_for_debate

            workspace = open_for_debate(debate_id, root)
        else:
            workspace = open_workspace(root, confined=False)  # the person running it names the files it reads
    except ToolError as problem:
        _print(problem.payload(), problem.exit_code)
    from moot.tools.seats import UserKeyring

    workspace.keyring = UserKeyring()  # the seats this OS user joined: the seed's commands pass only the id
    with workspace:
        payload, code = invoke(lambda: call(workspace))
    _print(payload, code)


def _read(path: str, what: str) -> tuple[str, str]:
    """(text, name) of a file an agent wrote; ``-`` reads stdin. Refused with a located reason."""
    from moot.core.files import decode_text
    from moot.tools import BadInput

    if path == "-":
        data, name = sys.stdin.buffer.read(), "<stdin>"
    else:
        try:
            data, name = Path(path).read_bytes(), path
        except OSError as exc:
            raise BadInput(f"Cannot read the {what} {path} ({exc.strerror}); pass an existing file.") from exc
    text, problems = decode_text(data, name)
    if text is None:
        raise BadInput(f"The {what} cannot be used: {problems[0].message}", rules=problems)
    return text, name


def _absolute(path: Path) -> Path:
    return path if path.is_absolute() else Path.cwd() / path


# --- moot duel ----------------------------------------------------------------------------------

duel_tools = ToolGroup("Socratic duel: join, lock, append turns, close (rp1's agent-tools socratic-duel, enforced).")


@duel_tools.command("join")
def duel_join(
    participant_name: Annotated[str, Opt("--participant-name", help="Your unique display name.")],
    harness: Harness,
    run_id: RunId,
    topic: Annotated[str | None, Opt("--topic", help="The topic (default: the source's first heading).")] = None,
    model_id: ModelId = UNKNOWN_MODEL,
    debate_dir: Annotated[
        Path | None,
        Opt("--debate-dir", help="rp1's {workRoot}/debates; sets the work root if --root is not given."),
    ] = None,
    root: Root = None,
    target: Annotated[Path | None, Opt("--target", help="The Markdown source to debate.")] = None,
    duel_id: Annotated[str | None, Opt("--duel-id", help="Join this duel by its id (from another host, say).")] = None,
    participant_secret: Secret = None,
) -> None:
    """Join the active duel on this source and topic (created if none), or --duel-id; prints duel_id, participant_id,
    debate_path, and once the participant_secret (kept for you)."""
    if debate_dir is not None:
        from moot.protocols.duel import PLUGIN as DUEL
        from moot.tools import BadInput

        given = Path(os.path.abspath(debate_dir))
        if given.is_symlink():
            link = BadInput(
                f"--debate-dir {given} is a symbolic link; moot writes only to real directories under the work "
                "root, so replace the link with a directory (or pass the real one).",
                rule="FILE_SYMLINK",
            )
            _print(link.payload(), link.exit_code)
        root = root or given.parent
        if given.resolve() != (_absolute(root).resolve() / DUEL.folder):
            _print(
                BadInput(f"--debate-dir {given} is not <work root>/debates; pass --root with the work root.").payload(),
                2,
            )
    source = _absolute(target) if target is not None else None

    def call(ws: Workspace) -> BaseModel:
        from moot.protocols.duel import tools as duel
        from moot.tools.locate import remember

        joined = duel.join(
            ws,
            target=source,
            topic=topic,
            participant_name=participant_name,
            harness=harness,
            model_id=model_id,
            run_id=run_id,
            duel_id=duel_id,
            participant_secret=participant_secret,
        )
        if joined.created or duel_id is not None:
            remember(joined.duel_id, ws.root)  # so that later commands find the root without --root
        return joined

    _run(root, call)


@duel_tools.command("status")
def duel_status(duel_id: Annotated[str, Opt("--duel-id")], root: Root = None) -> None:
    """Participants, lock holder (never a token), turns accepted, and what the artifact says."""
    from moot.protocols.duel import tools as duel

    _run(root, lambda ws: duel.status(ws, duel_id=duel_id), debate_id=duel_id)


@duel_tools.command("claim-lock")
def duel_claim_lock(
    duel_id: Annotated[str, Opt("--duel-id")],
    participant_id: Annotated[str, Opt("--participant-id")],
    for_timeout: Annotated[
        bool, Opt("--for-timeout", help="Only after the bounded wait: take the lock without a peer.")
    ] = False,
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    retry_after_seconds: Annotated[
        int, Opt("--retry-after-seconds", envvar="MOOT_RETRY_AFTER_SECONDS", help="Wait guidance on refusal.")
    ] = DEFAULT_RETRY_AFTER_SECONDS,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Take the duel's lock: prints lease_token, lease_expires_at, fencing_token (exit 1 with wait guidance if not)."""
    from moot.protocols.duel import tools as duel

    _run(
        root,
        lambda ws: duel.claim_lock(
            ws,
            duel_id=duel_id,
            participant_id=participant_id,
            for_timeout=for_timeout,
            ttl_seconds=ttl_seconds,
            retry_after_seconds=retry_after_seconds,
            participant_secret=participant_secret,
        ),
        debate_id=duel_id,
    )


@duel_tools.command("refresh-lock")
def duel_refresh_lock(
    duel_id: Annotated[str, Opt("--duel-id")],
    participant_id: Annotated[str, Opt("--participant-id")],
    lease_token: LeaseToken = None,
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Extend your unexpired lease."""
    from moot.protocols.duel import tools as duel

    _run(
        root,
        lambda ws: duel.refresh_lock(
            ws,
            duel_id=duel_id,
            participant_id=participant_id,
            lease_token=lease_token,
            ttl_seconds=ttl_seconds,
            participant_secret=participant_secret,
        ),
        debate_id=duel_id,
    )


@duel_tools.command("release-lock")
def duel_release_lock(
    duel_id: Annotated[str, Opt("--duel-id")],
    participant_id: Annotated[str, Opt("--participant-id")],
    lease_token: LeaseToken = None,
    close: Annotated[bool, Opt("--close", help="Write the Terminal Conclusion and close the duel.")] = False,
    outcome: Annotated[
        str | None, Opt("--outcome", help="ACCEPTED_CONSENSUS, DISSENT, MAX_TURNS, TIMEOUT, INVALIDATED.")
    ] = None,
    reason: Annotated[str | None, Opt("--reason", help="Why the duel ended (needed for INVALIDATED).")] = None,
    fencing_token: Fencing = None,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Give the lock back; with --close --outcome O, write the conclusion (it must agree with the turns) and close."""
    from moot.protocols.duel import tools as duel

    _run(
        root,
        lambda ws: duel.release_lock(
            ws,
            duel_id=duel_id,
            participant_id=participant_id,
            lease_token=lease_token,
            close=close,
            outcome=outcome,
            reason=reason,
            fencing_token=fencing_token,
            participant_secret=participant_secret,
        ),
        debate_id=duel_id,
    )


@duel_tools.command("append")
def duel_append(
    duel_id: Annotated[str, Opt("--duel-id")],
    participant_id: Annotated[str, Opt("--participant-id")],
    file: Annotated[str, Opt("--file", help="TURN.md: one turn in §TURN_MARKDOWN form ('-' for stdin).")],
    lease_token: LeaseToken = None,
    fencing_token: Fencing = None,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Validate one turn with the protocol and append it to the debate artifact under your lease."""

    def call(ws: Workspace) -> BaseModel:
        from moot.protocols.duel import tools as duel

        text, name = _read(file, "turn file")
        return duel.append(
            ws,
            duel_id=duel_id,
            participant_id=participant_id,
            lease_token=lease_token,
            turn_markdown=text,
            turn_file=name,
            fencing_token=fencing_token,
            participant_secret=participant_secret,
        )

    _run(root, call, debate_id=duel_id)


# --- moot roundtable ----------------------------------------------------------------------------

roundtable_tools = ToolGroup("Roundtable: start a meeting, take the floor, speak, write the minutes.")
Meeting = Annotated[str, Opt("--name", help="The meeting name (.roundtable/<name>/).")]
Role = Annotated[str, Opt("--role", help="Your role in the speaker order (or moderator).")]


@roundtable_tools.command("start")
def roundtable_start(
    name: Meeting,
    speakers: Annotated[str, Opt("--speakers", help="Comma-separated speaking order, e.g. architect,reviewer.")],
    max_rounds: Annotated[int, Opt("--max-rounds", help="Round limit.")],
    agenda: Annotated[str, Opt("--agenda", help="AGENDA file: background, topic, roles ('-' for stdin).")],
    prompt: Annotated[str, Opt("--prompt", help="The first speaker's instruction.")] = "",
    harness: Harness = "unknown",
    model_id: ModelId = UNKNOWN_MODEL,
    run_id: Annotated[str, Opt("--run-id")] = "",
    root: Root = None,
) -> None:
    """Create the meeting directory (AGENDA.md, turn.json) and join as its moderator."""

    def call(ws: Workspace) -> BaseModel:
        from moot.protocols.roundtable import tools as roundtable

        text, _ = _read(agenda, "agenda")
        return roundtable.start(
            ws,
            name=name,
            speakers=speakers.split(","),
            max_rounds=max_rounds,
            agenda=text,
            prompt=prompt,
            harness=harness,
            model_id=model_id,
            run_id=run_id,
        )

    _run(root, call)


@roundtable_tools.command("status")
def roundtable_status(name: Meeting, root: Root = None) -> None:
    """turn.json, speeches, who holds the floor (never a token), and whether the record checks."""
    from moot.protocols.roundtable import tools as roundtable

    _run(root, lambda ws: roundtable.status(ws, name=name))


@roundtable_tools.command("take-floor")
def roundtable_take_floor(
    name: Meeting,
    role: Role,
    harness: Harness = "unknown",
    model_id: ModelId = UNKNOWN_MODEL,
    run_id: Annotated[str, Opt("--run-id")] = "",
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Claim the floor when turn.json says it is your turn; prints lease_token (and, the first time, your
    participant_secret)."""
    from moot.protocols.roundtable import tools as roundtable

    _run(
        root,
        lambda ws: roundtable.take_floor(
            ws,
            name=name,
            role=role,
            harness=harness,
            model_id=model_id,
            run_id=run_id,
            ttl_seconds=ttl_seconds,
            participant_secret=participant_secret,
        ),
    )


@roundtable_tools.command("speak")
def roundtable_speak(
    name: Meeting,
    role: Role,
    file: Annotated[str, Opt("--file", help="SPEECH.md ('-' for stdin).")],
    prompt_next: Annotated[str, Opt("--prompt-next", help="Your instruction or question for the next role.")] = "",
    consensus: Annotated[bool, Opt("--consensus", help="Declare that every participant now agrees.")] = False,
    lease_token: LeaseToken = None,
    fencing_token: Fencing = None,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Commit your speech and the next turn.json together, then give the floor back."""

    def call(ws: Workspace) -> BaseModel:
        from moot.protocols.roundtable import tools as roundtable

        text, _ = _read(file, "speech file")
        return roundtable.speak(
            ws,
            name=name,
            role=role,
            lease_token=lease_token,
            speech=text,
            prompt_next=prompt_next,
            consensus=consensus,
            fencing_token=fencing_token,
            participant_secret=participant_secret,
        )

    _run(root, call)


@roundtable_tools.command("minutes")
def roundtable_minutes(
    name: Meeting,
    file: Annotated[str, Opt("--file", help="MINUTES.md with the four parts ('-' for stdin).")],
    lease_token: LeaseToken = None,
    language: Annotated[str, Opt("--language", help="Headings to write: en or zh.")] = "en",
    fencing_token: Fencing = None,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """The moderator's minutes: MINUTES.md and turn.json closed; closes the meeting."""

    def call(ws: Workspace) -> BaseModel:
        from moot.protocols.roundtable import tools as roundtable
        from moot.tools import BadInput

        if language not in ("en", "zh"):
            raise BadInput(f"--language {language!r} is not en or zh; pass one of them.")
        text, name_ = _read(file, "minutes file")
        return roundtable.minutes(
            ws,
            name=name,
            lease_token=lease_token,
            minutes_markdown=text,
            language="zh" if language == "zh" else "en",
            minutes_file=name_,
            fencing_token=fencing_token,
            participant_secret=participant_secret,
        )

    _run(root, call)


@roundtable_tools.command("release")
def roundtable_release(
    name: Meeting, role: Role, lease_token: LeaseToken = None, participant_secret: Secret = None, root: Root = None
) -> None:
    """Give the floor back without speaking."""
    from moot.protocols.roundtable import tools as roundtable

    _run(
        root,
        lambda ws: roundtable.release_floor(
            ws, name=name, role=role, lease_token=lease_token, participant_secret=participant_secret
        ),
    )


# --- moot critique ------------------------------------------------------------------------------

critique_tools = ToolGroup("Critique loop: append a checked turn to a .dialogues/ record.")
Dialogue = Annotated[str, Opt("--file", help="The dialogue record, e.g. .dialogues/api-design.md.")]


@critique_tools.command("append")
def critique_append(
    file: Dialogue,
    role: Annotated[str, Opt("--role", help="Your role in the dialogue.")],
    turn_file: Annotated[str, Opt("--turn-file", help="TURN.md in the Rule 2 form ('-' for stdin).")],
    lease_token: LeaseToken = None,
    fencing_token: Fencing = None,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Validate one turn (format, status, alternation, rounds) and append it; a lease is optional."""

    def call(ws: Workspace) -> BaseModel:
        from moot.protocols.critique import tools as critique

        text, name = _read(turn_file, "turn file")
        return critique.append(
            ws,
            file=file,
            role=role,
            turn_markdown=text,
            turn_file=name,
            lease_token=lease_token,
            fencing_token=fencing_token,
            participant_secret=participant_secret,
        )

    _run(root, call)


@critique_tools.command("claim")
def critique_claim(
    file: Dialogue,
    role: Annotated[str, Opt("--role")],
    harness: Harness = "unknown",
    model_id: ModelId = UNKNOWN_MODEL,
    run_id: Annotated[str, Opt("--run-id")] = "",
    ttl_seconds: Ttl = DEFAULT_TTL_SECONDS,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Coordinate the dialogue through leases from now on and take the lease for your role (the first claim also
    prints your participant_secret)."""
    from moot.protocols.critique import tools as critique

    _run(
        root,
        lambda ws: critique.claim(
            ws,
            file=file,
            role=role,
            harness=harness,
            model_id=model_id,
            run_id=run_id,
            ttl_seconds=ttl_seconds,
            participant_secret=participant_secret,
        ),
    )


@critique_tools.command("release")
def critique_release(
    file: Dialogue,
    role: Annotated[str, Opt("--role")],
    lease_token: LeaseToken = None,
    close: Annotated[bool, Opt("--close", help="Store the outcome the record reached.")] = False,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Give the lease back (with --close, store the record's outcome: DONE, STUCK or MAX_ROUNDS)."""
    from moot.protocols.critique import tools as critique

    _run(
        root,
        lambda ws: critique.release(
            ws, file=file, role=role, lease_token=lease_token, close=close, participant_secret=participant_secret
        ),
    )


@critique_tools.command("extend")
def critique_extend(
    file: Dialogue,
    role: Annotated[str, Opt("--role")],
    lease_token: LeaseToken = None,
    rounds: Annotated[int | None, Opt("--rounds", help="How many more rounds (default: as moot run offers).")] = None,
    participant_secret: Secret = None,
    root: Root = None,
) -> None:
    """Raise the round limit (on a claimed dialogue under your lease, for every host)."""
    from moot.protocols.critique import tools as critique
    from moot.protocols.critique.machine import EXTENSION_ROUNDS

    _run(
        root,
        lambda ws: critique.extend(
            ws,
            file=file,
            role=role,
            lease_token=lease_token,
            rounds=EXTENSION_ROUNDS if rounds is None else rounds,
            participant_secret=participant_secret,
        ),
    )


@critique_tools.command("status")
def critique_status(file: Dialogue, root: Root = None) -> None:
    """What the record says and who holds its lease."""
    from moot.protocols.critique import tools as critique

    _run(root, lambda ws: critique.status(ws, file=file))


# --- moot emit / moot events --------------------------------------------------------------------


def emit_command(
    workflow: Annotated[str, Opt("--workflow", help="e.g. socratic-duel.")],
    type_: Annotated[str, Opt("--type", help="status_change, artifact_registered or btw_update.")],
    run_id: Annotated[str, Opt("--run-id")],
    step: Annotated[str, Opt("--step", help="The workflow state, e.g. debating.")] = "unspecified",
    unit: Annotated[str | None, Opt("--unit", help="e.g. participant:<id> or turn:3.")] = None,
    data: Annotated[str, Opt("--data", help="A JSON object.")] = "{}",
    close_run: Annotated[bool, Opt("--close-run", help="End the run (a completed or failed status_change).")] = False,
    harness: Annotated[str | None, Opt("--harness", help="The agent harness that emits.")] = None,
    root: Root = None,
) -> None:
    """Store one workflow event (rp1's agent-tools emit); a malformed one is refused and nothing is stored."""
    from moot.tools import events

    _run(
        root,
        lambda ws: events.emit(
            ws,
            workflow=workflow,
            type=type_,
            run_id=run_id,
            step=step,
            data=data,
            unit=unit,
            harness=harness,
            close_run=close_run,
        ),
    )


def _event_line(event: dict[str, Any]) -> str:
    where = " ".join(f"{k}={event[k]}" for k in ("step", "unit", "harness") if event.get(k))
    closing = " [run closed]" if event["close_run"] else ""
    data = json.dumps(event["data"], ensure_ascii=False)
    return f"#{event['id']} {event['created_at']} {event['workflow']} {event['type']} run={event['run_id']} {where} {data}{closing}"


def events_command(
    run_id: Annotated[str | None, Opt("--run-id", help="Only this run's events.")] = None,
    follow: Annotated[bool, Opt("--follow", help="Keep printing new events (until the run closes).")] = False,
    as_json: Annotated[bool, Opt("--json", help="One JSON object per line.")] = False,
    after_id: Annotated[int | None, Opt("--after-id", help="Only events after this id.")] = None,
    interval: Annotated[float, Opt("--interval", help="Seconds between polls with --follow.")] = 0.5,
    root: Root = None,
) -> None:
    """Print stored events in order; --follow keeps polling (and stops at --run-id's close-run event)."""
    from moot.tools import ToolError, events, open_workspace

    try:
        ws = open_workspace(root)
    except ToolError as problem:
        _print(problem.payload(), problem.exit_code)
    with ws:
        last = after_id
        while True:
            try:
                batch = events.read_events(ws, run_id=run_id, after_id=last)
            except ToolError as problem:
                _print(problem.payload(), problem.exit_code)
            for event in batch.events:
                payload = event.model_dump(mode="json")
                print(json.dumps(payload, ensure_ascii=False) if as_json else _event_line(payload))
            sys.stdout.flush()
            last = batch.last_id
            closed = run_id is not None and any(e.close_run for e in batch.events)
            if not follow or closed:
                return
            time.sleep(max(interval, 0.05))


# The commands every protocol shares, served as ``moot emit`` and ``moot events``.
SHARED_COMMANDS: dict[str, Callable[..., None]] = {"emit": emit_command, "events": events_command}
# Each protocol's group by the name its ``tool_commands`` gives (``moot.cli.tools:duel_app``).
GROUPS = {"duel_app": duel_tools, "roundtable_app": roundtable_tools, "critique_app": critique_tools}


def __getattr__(name: str) -> Any:
    """``duel_app``, ``roundtable_app`` and ``critique_app``: the groups as typer apps, built on first use."""
    if name in GROUPS:
        from moot.cli.tool_options import typer_app

        app = globals()[name] = typer_app(GROUPS[name])
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(app: typer.Typer) -> None:
    """Add the agent-tool commands every protocol shares to the ``moot`` app (each protocol's own are
    registered with it: ``tool_commands`` in :mod:`moot.registry`)."""
    from moot.cli.tool_options import typer_command

    for name, function in SHARED_COMMANDS.items():
        app.command(name)(typer_command(function))

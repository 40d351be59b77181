"""The MCP tools that run deliberations in the server: ``start_debate``, ``debate_status``, ``debate_result``,
``list_debates`` and ``cancel_debate``, for every registered protocol.

A debate runs in the server's event loop with the engine ``moot run`` uses (:mod:`moot.engine.runner`): the same
record, the same checks, the same refusals. A long run is three steps — start, status (with progress
notifications while it waits), result — so no call has to outlast a client's timeout. A debate's id is its record's
path relative to the work root, so records written before the server started are found by the same id.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from moot import registry
from moot.conformity import conformity_json
from moot.core.machine import Summary
from moot.decision import decision_json
from moot.detect import check_path, documents
from moot.engine.runner import DebateRun, Runner, RunState
from moot.engine.sealed import open_phase
from moot.engine.specs import NOT_OPTIONS, rooted_paths
from moot.errors import BadInput, RecordExists, Refused, UserError
from moot.followup import follow_up, note_followup
from moot.mcp.params import READ_ONLY
from moot.mcp.state import answer_async, connection_of, state_of
from moot.paths import CLIENT_FIX, record_place
from moot.records import find_records, record_row
from moot.resuming import resumable
from moot.tools.errors import shown
from moot.tools.waiting import MAX_WAIT_SECONDS
from moot.tools.workspace import refused_paths

# What a deliberation is about, by the name its protocol's options give it (a duel debates a source document).
SUBJECTS = ("topic", "question", "source")


def _option_names(protocol: str) -> list[str]:
    return [f.name for f in dataclasses.fields(registry.get(protocol).driver.load().options_type)]


def _taking(subject: str) -> str:
    """The protocols whose options have ``subject``, for the argument's description."""
    return ", ".join(name for name in registry.protocols() if subject in _option_names(name)) or "none"


def _options_text() -> str:
    per = "; ".join(
        f"{name}: {', '.join(o for o in _option_names(name) if o not in SUBJECTS)}" for name in registry.protocols()
    )
    return f"The protocol's other options, as in a moot run --batch line ({per})."


Protocol = Annotated[
    str,
    WithJsonSchema({"type": "string", "enum": list(registry.protocols())}),
    Field(description=f"The protocol: {registry.names_sentence()}."),
]
DebateId = Annotated[
    str, Field(description="The debate_id start_debate returned (the record's path under the work root).")
]
Optional = Annotated[float | None, WithJsonSchema({"type": "number"})]
OptionalInt = Annotated[int | None, WithJsonSchema({"type": "integer"})]
# The arguments start_debate and resume_debate share: a role's agent, the budgets and the repairs.
AgentPerRole = Annotated[
    dict[str, str], Field(description='An agent spec per role, e.g. {"critic": "anthropic:claude-sonnet-4"}.')
]
MaxTokens = Annotated[OptionalInt, Field(description="Token budget for the debate.", ge=1)]
MaxWall = Annotated[Optional, Field(description="Wall-time budget in seconds.", ge=1)]
MaxCost = Annotated[Optional, Field(description="Budget in USD (every agent needs a known price).", ge=0)]
TurnTimeout = Annotated[Optional, Field(description="Seconds per turn.", ge=1)]
Repairs = Annotated[OptionalInt, Field(description="Retries for an invalid turn (default 2).", ge=0)]


class DebateStatus(BaseModel):
    """Where a debate stands: ``state`` is running, ended, halted, cancelled or failed for a debate this server
    ran, and ended, halted or open for a record it did not."""

    model_config = ConfigDict(frozen=True)

    debate_id: str
    protocol: str | None
    record: str
    state: str
    turns: int
    round: int | None
    next_speaker: str | None
    speaking: list[str]  # who is being asked now: the next speaker, or every role of a sealed phase
    outcome: str | None
    reason: str | None
    turns_this_run: int | None
    tokens: int
    last_event: str | None
    error: str | None
    next_step: str
    lifetime: str | None = None  # for a debate this call started: how long it runs (see LIFETIME)


class DebateResult(BaseModel):
    """How a debate ended, what it decided, what ``moot check`` says about its record, what it spent, and its
    conformity."""

    model_config = ConfigDict(frozen=True)

    debate_id: str
    protocol: str | None
    record: str
    state: str
    outcome: str | None
    consensus: bool
    reason: str | None
    summary: dict[str, Any]
    verdict: str
    violations: list[str]
    run_halted: dict[str, Any] | None
    turns: int
    tokens: int
    cost_usd: float | None
    elapsed_s: float | None
    conformity: dict[str, Any]
    decision: dict[str, Any] | None = None
    transcript: list[dict[str, str]] = []  # the turns, latest kept first when cut: {"heading", "text"}
    transcript_note: str | None = None  # what was left out of the transcript, and where to read it


class DebateList(BaseModel):
    """The records of the work root, and one sentence for each folder or record left out (a symbolic link)."""

    model_config = ConfigDict(frozen=True)

    root: str
    debates: list[dict[str, Any]]
    skipped: list[str] = []


# A debate runs as a task of this server, not detached from it: a detached run would go on spending the operator's
# keys with no server left to follow or cancel it. Every accepted turn is durable, so resume_debate continues it.
LIFETIME = {
    False: "It runs inside this server, which its host started over stdio: when the host closes the server, the "
    "debate stops (every accepted turn is kept, and the record notes where); continue it with resume_debate.",
    True: "It runs inside this HTTP server and survives client disconnects; when the server stops, the debate "
    "stops (every accepted turn is kept, and the record notes where); continue it with resume_debate.",
}


def _started(ctx: Context, debate_id: str) -> DebateStatus:
    """The status a start returns, saying how long the debate lives."""
    state = state_of(ctx)
    return _status(state.runner, debate_id).model_copy(update={"lifetime": LIFETIME[state.over_http]})


# --- finding a debate ---------------------------------------------------------------------------


async def follow_up_debate(
    debate_id: DebateId,
    question: Annotated[str, Field(description="The follow-up question.")],
    ctx: Context,
) -> CallToolResult:
    """Ask a finished council, critique or Agora a follow-up question: a new deliberation of the same protocol and
    panel (each member with its agent of the earlier run) whose question carries the earlier question and answer
    and names the earlier debate, which lists it beside itself. Returns the new debate_id at once, as start_debate
    does; refused in one sentence for a debate still running, without an answer, or of a protocol that takes no
    question.
    """
    runner = _runner(ctx)

    async def act() -> DebateStatus:
        run, path = _located(runner, debate_id)
        if run is not None and run.active:
            raise Refused(
                f"Debate {run.id} is still running; wait for it with debate_status, then ask the follow-up.",
                rule="TOOLS_BAD_INPUT",
            )
        protocol = check_path(path).protocol
        if protocol is None:
            raise BadInput(
                f"{shown(debate_id)!r} is not a record moot can read; call list_debates.", rule="TOOLS_BAD_INPUT"
            )
        followed = await anyio.to_thread.run_sync(follow_up, runner.root, protocol, path, question)
        later = await runner.start(followed.spec, session=connection_of(ctx))
        await anyio.to_thread.run_sync(note_followup, path, later.id, question.strip(), later.started_at)
        return _started(ctx, later.id)

    return await answer_async(act)


def _runner(ctx: Context) -> Runner:
    return state_of(ctx).runner


def _located(runner: Runner, debate_id: str) -> tuple[DebateRun | None, Path]:
    """The run of ``debate_id`` in this server, else the record of that id in the work root."""
    run = runner.get(debate_id)
    if run is not None:
        return run, run.record_path
    for path in find_records(runner.root):
        if runner.id_of(path) == debate_id:
            return None, path
    with refused_paths():  # a record moot does not list (a link, or outside the root): say why, not "missing"
        record_place(runner.root, debate_id)
    raise BadInput(
        f"There is no debate {shown(debate_id)!r} under {runner.root}; call list_debates for the ids.",
        rule="TOOLS_BAD_INPUT",
    )


def _disk_state(ended: bool, halted: bool) -> str:
    """The state of a record no run in this server drives."""
    if ended:
        return RunState.ended.value
    return RunState.halted.value if halted else "open"


def _status(runner: Runner, debate_id: str) -> DebateStatus:
    run, path = _located(runner, debate_id)
    summary: Summary | None
    speaking: list[str] = []
    if run is not None and run.active:
        summary = run.driver.summary()
        phase = open_phase(run.driver)
        speaking = list(phase.roles) if phase is not None else [r for r in [summary.next_speaker] if r is not None]
        halted = None
        tokens = run.prompt_tokens + run.completion_tokens
        state = run.state.value
    else:
        summary = check_path(path).summary
        halted = summary.detail.get("run_halted") if summary is not None else None
        tokens = int(record_row(path)["tokens"])
        ended = summary is not None and summary.outcome is not None
        state = run.state.value if run is not None else _disk_state(ended, isinstance(halted, dict))
    outcome = summary.outcome if summary is not None else None
    reason = outcome.reason if outcome is not None else (halted.get("reason") if isinstance(halted, dict) else None)
    if state == RunState.running:
        step = "running: call debate_status again (wait_seconds waits for news), then debate_result once it ends"
    else:
        step = "call debate_result for the outcome, the decision, the record's check and the conformity metrics"
    return DebateStatus(
        debate_id=runner.id_of(path),
        protocol=summary.protocol if summary is not None else None,
        record=str(path),
        state=state,
        turns=summary.turns if summary is not None else 0,
        round=summary.round if summary is not None else None,
        next_speaker=summary.next_speaker if summary is not None and state == RunState.running else None,
        speaking=speaking,
        outcome=outcome.name if outcome is not None else None,
        reason=reason,
        turns_this_run=run.turns_this_run if run is not None else None,
        tokens=tokens,
        last_event=run.last_event if run is not None else None,
        error=run.error if run is not None else None,
        next_step=step,
    )


def _result(runner: Runner, debate_id: str, chars: int) -> DebateResult:
    run, path = _located(runner, debate_id)
    if run is not None and run.active:
        raise Refused(
            f"Debate {run.id} is still running ({run.driver.summary().turns} turn(s) so far); call debate_status "
            "with wait_seconds until its state is no longer running, then debate_result.",
            rule="TOOLS_BAD_INPUT",
        )
    report = check_path(path)
    summary = report.summary
    outcome = summary.outcome if summary is not None else None
    halted = summary.detail.get("run_halted") if summary is not None else None
    result = run.result if run is not None else None
    state = run.state.value if run is not None else _disk_state(outcome is not None, isinstance(halted, dict))
    reason = outcome.reason if outcome is not None else (halted.get("reason") if isinstance(halted, dict) else None)
    debate_id = runner.id_of(path)
    transcript, note = (
        bounded_turns(turn_texts(report.protocol, path), debate_id, chars) if report.protocol else ([], None)
    )
    return DebateResult(
        debate_id=debate_id,
        protocol=report.protocol,
        record=str(path),
        state=state,
        outcome=outcome.name if outcome is not None else None,
        consensus=bool(outcome and outcome.consensus),
        reason=reason or (run.error if run is not None else None),
        summary=summary.model_dump(mode="json") if summary is not None else {},
        verdict=report.verdict,
        violations=[str(v) for v in report.violations],
        run_halted=halted if isinstance(halted, dict) else None,
        turns=summary.turns if summary is not None else 0,
        tokens=int(record_row(path)["tokens"]),
        cost_usd=None if result is None or result.cost_usd is None else round(result.cost_usd, 6),
        elapsed_s=None if result is None else round(result.elapsed_s, 3),
        conformity=conformity_json(path),
        decision=decision_json(path),
        transcript=transcript,
        transcript_note=note,
    )


# --- the transcript ---

# The most of the turns' text debate_result carries: a long debate fits a client's context with room to spare.
TRANSCRIPT_CHARS = 60_000


def turn_texts(protocol: str, path: Path) -> list[dict[str, str]]:
    """Each turn of the record as {"heading", "text"}: a one-file record cut at its protocol's turn headings, a
    meeting's files one each."""
    shown = documents(protocol, path)
    heading = registry.get(protocol).record.load().turn_heading
    if path.is_dir() or heading is None or not shown:
        return [{"heading": title, "text": text} for title, text in shown]
    turns: list[list[str]] = []
    for line in shown[0][1].split("\n"):
        if line.startswith(heading) or (turns and line.startswith("## ")):
            turns.append([line])
        elif turns:
            turns[-1].append(line)
    return [{"heading": lines[0].lstrip("# "), "text": "\n".join(lines).strip()} for lines in turns]


def bounded_turns(
    turns: list[dict[str, str]], record: str, chars: int = TRANSCRIPT_CHARS
) -> tuple[list[dict[str, str]], str | None]:
    """The latest turns within ``chars`` characters of text (the oldest one kept may be cut at its start), and a
    note saying what was left out, or None when nothing was."""
    kept: list[dict[str, str]] = []
    left, cut = chars, False
    for turn in reversed(turns):
        text = turn["text"]
        if left <= 0 or len(text) > left:
            cut = True
            if left > 0:
                kept.append({**turn, "text": "…" + text[len(text) - left :]})
            break
        kept.append(turn)
        left -= len(text)
    kept.reverse()
    if not cut:
        return kept, None
    return kept, (
        f"The transcript is cut to its last {chars:,} characters: {len(turns) - len(kept)} earlier part(s) left "
        f"out, and a part that begins with … is cut at its start; the record {record} holds every turn (read it "
        "with moot show, or call debate_result with a larger max_chars)."
    )


# --- starting -----------------------------------------------------------------------------------


def debate_spec(
    root: Path,
    protocol: str,
    subjects: dict[str, str],
    options: dict[str, Any],
    agent: dict[str, str],
    agents: str,
) -> dict[str, Any]:
    """The ``--batch``-line spec of a start_debate call: its subject and options are the protocol's options."""
    fields = set(_option_names(protocol))
    misplaced = sorted(set(options) & NOT_OPTIONS)
    if misplaced:
        raise UserError(
            f"options hold the {protocol} options only, not {', '.join(misplaced)}; give the protocol and the "
            "agents as start_debate's own arguments."
        )
    given: dict[str, Any] = {}
    for name, value in subjects.items():
        if not value:
            continue
        if name not in fields:
            wanted = " or ".join(s for s in SUBJECTS if s in fields) or "options"
            article = "an" if protocol[:1] in "aeiou" else "a"
            raise UserError(f"{article} {protocol} debate takes no {name}; give its {wanted} instead.")
        if name in options:
            raise UserError(f"{name} is given twice; leave it out of options.")
        given[name] = value
    spec: dict[str, Any] = {**options, **given, "protocol": protocol}
    if agent:
        spec["agent"] = agent
    if agents:
        spec["agents"] = agents
    # A path (the source, an agenda, sources) is relative to the work root, not to wherever the server was
    # started, and must lie inside it: a client never makes the server read a file of its choosing.
    return rooted_paths(spec, root, CLIENT_FIX)


async def start_debate(
    protocol: Protocol,
    ctx: Context,
    topic: Annotated[str, Field(description=f"What it is about ({_taking('topic')}).")] = "",
    question: Annotated[str, Field(description=f"The question ({_taking('question')}).")] = "",
    source: Annotated[
        str,
        Field(
            description=f"The document to debate ({_taking('source')}), relative to the work root (or absolute, "
            "inside it)."
        ),
    ] = "",
    agents: Annotated[
        str, Field(description="One moot agent spec for every role, e.g. openai:gpt-4o-mini (default: moot.toml's).")
    ] = "",
    agent: AgentPerRole = {},  # noqa: B006 - never mutated; the SDK copies validated arguments
    options: Annotated[dict[str, Any], Field(description=_options_text())] = {},  # noqa: B006 - never mutated; the SDK copies validated arguments
    max_tokens: MaxTokens = None,
    max_wall_s: MaxWall = None,
    max_cost_usd: MaxCost = None,
    turn_timeout_s: TurnTimeout = None,
    repairs: Repairs = None,
    force: Annotated[bool, Field(description="Replace an existing record of the same name.")] = False,
) -> CallToolResult:
    """Start a deliberation that the server runs with moot's engine (as `moot run` does) and return its debate_id
    at once; follow it with debate_status and fetch debate_result when it ends. The debate lives as long as this
    server: over stdio it stops when the host closes the server (over HTTP it survives client disconnects), with
    every accepted turn kept; resume_debate continues it.

    A start that cannot run (an unknown option, agent or role, a missing key or script, an unreachable server)
    is refused in one sentence and writes nothing. So is an agent that would run a program, read a file or the
    terminal, or a model server this call names, unless the server's operator allowed it, and a start past the
    server's or this session's cap on debates running at once (moot.toml's max_running_debates and
    max_running_debates_per_session). A record of the same name is refused unless force is true: continue it
    with resume_debate.
    """
    runner = _runner(ctx)

    async def act() -> DebateStatus:
        spec = debate_spec(
            runner.root, protocol, {"topic": topic, "question": question, "source": source}, options, agent, agents
        )
        try:
            run = await runner.start(
                spec,
                session=connection_of(ctx),
                force=force,
                max_tokens=max_tokens,
                max_wall_s=max_wall_s,
                max_cost_usd=max_cost_usd,
                turn_timeout_s=turn_timeout_s,
                repairs=repairs,
            )
        except RecordExists as exists:
            debate_id = runner.id_of(exists.path)
            raise UserError(
                f"{debate_id} already exists; continue it with resume_debate (debate_id {debate_id!r}), or pass "
                "force: true to start it afresh."
            ) from None
        return _started(ctx, run.id)

    return await answer_async(act)


async def resume_debate(
    debate_id: DebateId,
    ctx: Context,
    agents: Annotated[
        str, Field(description="One moot agent spec for every role (default: the ones the debate's runs used).")
    ] = "",
    agent: AgentPerRole = {},  # noqa: B006 - never mutated; the SDK copies validated arguments
    max_tokens: MaxTokens = None,
    max_wall_s: MaxWall = None,
    max_cost_usd: MaxCost = None,
    turn_timeout_s: TurnTimeout = None,
    repairs: Repairs = None,
) -> CallToolResult:
    """Continue a halted, cancelled or interrupted debate of the work root from its record, as `moot resume`
    does: no turn is lost or repeated, and the agents are the ones its runs used unless agents or agent name
    others. Returns at once, as start_debate does; follow it with debate_status and debate_result.

    Refused in one sentence, with nothing read or written, for a debate_id that is not a record inside the work
    root, a debate running or ended, and an agent (named here or used by the debate's earlier runs) that the
    server's operator did not allow; the same caps on debates running at once apply as for start_debate. Like a
    started debate, it runs as long as this server does.
    """
    runner = _runner(ctx)

    async def act() -> DebateStatus:
        run, path = _located(runner, debate_id)
        shown = runner.id_of(path)
        if run is not None and run.active:
            raise Refused(f"Debate {run.id} is still running; follow it with debate_status.", rule="TOOLS_BAD_INPUT")
        resumed = await runner.resume(
            path,
            lambda record: resumable(record, runner.root, shown),
            session=connection_of(ctx),
            agent=agent,
            agents=agents or None,
            max_tokens=max_tokens,
            max_wall_s=max_wall_s,
            max_cost_usd=max_cost_usd,
            turn_timeout_s=turn_timeout_s,
            repairs=repairs,
        )
        return _started(ctx, resumed.id)

    return await answer_async(act)


async def debate_status(
    debate_id: DebateId,
    ctx: Context,
    wait_seconds: Annotated[
        float,
        Field(
            description="Wait up to this long for the debate to end, sending a progress notification as each turn "
            "lands (if you sent a progress token); 0 answers at once.",
            ge=0,
            le=MAX_WAIT_SECONDS,
        ),
    ] = 0,
) -> CallToolResult:
    """A debate's state (running, ended, halted, cancelled), turns so far, whose turn it is, and its outcome."""
    runner = _runner(ctx)

    async def act() -> DebateStatus:
        run = runner.get(debate_id)
        if run is not None and wait_seconds > 0:
            await _follow(run, ctx, wait_seconds)
        return _status(runner, debate_id)

    return await answer_async(act)


async def _follow(run: DebateRun, ctx: Context, seconds: float) -> None:
    """Wait while ``run`` goes on, up to ``seconds``; each turn that lands is one progress notification."""
    deadline = time.monotonic() + seconds
    reported, seen = run.driver.summary().turns, run.version
    while (left := deadline - time.monotonic()) > 0 and await run.next_change(seen, left):
        seen = run.version
        summary = run.driver.summary()
        if summary.turns > reported:
            reported = summary.turns
            whose = f"; next: {summary.next_speaker}" if summary.next_speaker and run.active else ""
            await ctx.report_progress(summary.turns, None, f"{run.last_event}{whose}")


async def debate_result(
    debate_id: DebateId,
    ctx: Context,
    max_chars: Annotated[
        int,
        Field(
            description="The most characters of turn text the transcript carries (the latest turns are kept).",
            ge=0,
            le=TRANSCRIPT_CHARS,
        ),
    ] = TRANSCRIPT_CHARS,
) -> CallToolResult:
    """How a debate ended: outcome, reason, its decision (what was decided, conceded, left open or blocking, each
    with its turn), the turns themselves (transcript: the latest ones, up to max_chars characters, with a
    transcript_note when cut), the protocol's summary, the record's path and check, tokens and price, and its
    conformity metrics (who changed position toward whom)."""
    runner = _runner(ctx)

    async def act() -> DebateResult:
        return _result(runner, debate_id, max_chars)

    return await answer_async(act)


async def list_debates(ctx: Context) -> CallToolResult:
    """The debates of the work root: the ones this server runs or ran (with their state) and every record on disk
    (protocol, status, outcome, turns, tokens)."""
    runner = _runner(ctx)

    def listed() -> DebateList:
        found: list[dict[str, Any]] = []
        skipped: list[str] = []
        for path in find_records(runner.root, skipped):
            debate_id = runner.id_of(path)
            run = runner.get(debate_id)
            row = record_row(path)
            ended, halted = row["outcome"] is not None, bool(row["run_halted"])
            state = run.state.value if run is not None else _disk_state(ended, halted)
            found.append({"debate_id": debate_id, "state": state, **row})
        return DebateList(root=str(runner.root), debates=found, skipped=skipped)

    async def act() -> DebateList:
        # Every record is read and checked: off the event loop, where the debates run.
        return await anyio.to_thread.run_sync(listed)

    return await answer_async(act)


async def cancel_debate(debate_id: DebateId, ctx: Context) -> CallToolResult:
    """Stop a debate this server runs. Every accepted turn is already in its record, and the record notes where the
    run stopped (`moot check` reports it; `moot resume` continues it)."""
    runner = _runner(ctx)

    async def act() -> DebateStatus:
        await runner.cancel(debate_id)
        return _status(runner, debate_id)

    return await answer_async(act)


# Starting runs the chosen agents, which may call model APIs: an open world.
STARTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)
STOPS = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

RUN_TOOLS = (
    (start_debate, STARTS),
    (resume_debate, STARTS),
    (follow_up_debate, STARTS),
    (debate_status, READ_ONLY),
    (debate_result, READ_ONLY),
    (list_debates, READ_ONLY),
    (cancel_debate, STOPS),
)

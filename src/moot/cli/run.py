"""``moot run <protocol>``, ``moot resume`` and ``moot run --batch``: moot drives the debate itself.

Exit codes: 0 the debate reached consensus; 1 it ended another way (no consensus, stuck, limits,
a participant that could not produce a valid turn); 2 a usage or input error; 3 an internal error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer

from moot import registry
from moot.agents import Agent
from moot.agents.acp_catalog import ALLOW_WRITES_ENV
from moot.agents.family import one_family_warning
from moot.agents.pricing import total_usd, usd_text
from moot.cli.interrupt import EXIT_INTERRUPTED, run_interruptible
from moot.cli.progress import Progress, print_outcome
from moot.config import Settings, load_settings
from moot.core.run_state import remove_record, resume_text, stored_agents
from moot.core.torn import set_aside_torn_append
from moot.engine.driver import Driver
from moot.engine.loop import INTERRUPTED, Limits, RunResult
from moot.engine.session import (
    AgentChoice,
    limits_from,
    parse_agent_options,
    probe_agents,
    require_prices,
    resolve_agents,
    run_driver,
)
from moot.errors import DiskFault, RecordExists, UserError

run_app = typer.Typer(
    help="Run a debate: moot asks every participant for its turn, enforces the protocol and writes the record.",
    no_args_is_help=False,
    invoke_without_command=True,
)
# Each registered protocol adds its own command, ``moot run NAME`` (moot.cli registers them).

# Options every protocol shares (declared once, used by each command).
AgentOpt = Annotated[
    list[str] | None,
    typer.Option("--agent", help="ROLE=SPEC for one role (repeatable), e.g. critic=openai:gpt-4o-mini."),
]
AgentsOpt = Annotated[str | None, typer.Option("--agents", help="One agent SPEC for every role (default: local).")]
RootOpt = Annotated[Path, typer.Option("--root", help="The work root the record is written under.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object with the outcome, for scripts.")]
FollowOpt = Annotated[bool, typer.Option("--follow", help="Print each accepted turn as it is written.")]
RepairsOpt = Annotated[int | None, typer.Option("--repairs", min=0, help="Retries for an invalid turn (default 2).")]
TurnTimeoutOpt = Annotated[float | None, typer.Option("--turn-timeout", min=1, help="Seconds per turn.")]
MaxTokensOpt = Annotated[int | None, typer.Option("--max-tokens", min=1, help="Token budget for the debate.")]
MaxWallOpt = Annotated[float | None, typer.Option("--max-wall", min=1, help="Wall-time budget in seconds.")]
MaxCostOpt = Annotated[
    float | None, typer.Option("--max-cost", min=0, help="Budget in USD (every agent needs a known price).")
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the expected calls, tokens and price; run and write nothing.")
]
MaxTurnTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--max-turn-tokens", min=1, help="Completion tokens per turn for every agent (default: each agent's)."
    ),
]


DRY_RUN_PREFIX = "moot-dry-run-"


def start_root(root: Path, dry_run: bool) -> Path:
    """Where the record is started: the work root, or for a dry run a temporary one removed afterwards."""
    return Path(tempfile.mkdtemp(prefix=DRY_RUN_PREFIX)) if dry_run else root


def print_estimate(
    driver: Driver, agents: dict[str, Agent], choice: AgentChoice, settings: Settings, limits: Limits
) -> None:
    """The dry run's table: per role its agent, calls, tokens and price, and the total."""
    from moot.engine.estimate import estimate

    found = estimate(driver, agents, limits)
    typer.echo(f"dry run of a {driver.protocol} debate: nothing was asked or written; at most, without repairs:")
    for row in found:
        typer.echo(
            f"  {row.role:<12} {choice.spec_for(row.role, settings):<28} {row.calls} call(s), "
            f"~{row.prompt_tokens} prompt + ≤{row.completion_tokens} completion tokens, {usd_text(row.cost_usd)}"
        )
    calls = sum(row.calls for row in found)
    tokens = sum(row.prompt_tokens + row.completion_tokens for row in found)
    cost = total_usd([row.cost_usd for row in found])
    typer.echo(f"  total: {calls} call(s), ~{tokens} tokens, {usd_text(cost)}")


SourceOpt = Annotated[
    list[Path] | None,
    typer.Option("--source", help="A file or directory the evidence comes from (repeatable; .gitignore respected)."),
]


DebugOpt = Annotated[bool, typer.Option("--debug", help="Print every attempt (raw reply, violations) as it happens.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress line; only the outcome.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing record of the same name.")]

# The options every ``moot run <protocol>`` command takes after its own, declared once: (parameter, type,
# default). All but ``force`` are the fields of RunFlags.
RUN_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("root", RootOpt, Path(".")),
    ("agent", AgentOpt, None),
    ("agents", AgentsOpt, None),
    ("as_json", JsonOpt, False),
    ("follow", FollowOpt, False),
    ("repairs", RepairsOpt, None),
    ("turn_timeout", TurnTimeoutOpt, None),
    ("max_tokens", MaxTokensOpt, None),
    ("max_wall", MaxWallOpt, None),
    ("max_turn_tokens", MaxTurnTokensOpt, None),
    ("max_cost", MaxCostOpt, None),
    ("dry_run", DryRunOpt, False),
    ("debug", DebugOpt, False),
    ("quiet", QuietOpt, False),
    ("force", ForceOpt, False),
)


def run_options(*, without: Collection[str] = ()) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the shared options (but ``without``): it is written with ``flags: RunFlags`` (and
    ``force: bool`` if it takes --force) in their place, and its --help lists them after its own."""
    shared = [(name, kind, default) for name, kind, default in RUN_OPTIONS if name not in without]

    def add(command: Callable[..., None]) -> Callable[..., None]:
        hints = get_type_hints(command, include_extras=True)
        own = [
            parameter.replace(annotation=hints[parameter.name])
            for parameter in inspect.signature(command).parameters.values()
            if parameter.name not in ("flags", "force")
        ]
        keyword = inspect.Parameter.KEYWORD_ONLY
        added = [inspect.Parameter(name, keyword, default=default, annotation=kind) for name, kind, default in shared]

        @functools.wraps(command)
        def with_options(**values: Any) -> None:
            chosen = {name: values.pop(name) for name, _, _ in shared}
            if "force" in chosen:
                values["force"] = chosen.pop("force")
            command(**values, flags=RunFlags(**chosen))

        signature = inspect.Signature([*own, *added])
        with_options.__signature__ = signature  # type: ignore[attr-defined]
        with_options.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        return with_options

    return add


def now_minutes() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M")


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


@dataclass(frozen=True)
class RunFlags:
    """The flags every ``moot run <protocol>`` and ``moot resume`` share."""

    root: Path = Path(".")
    agent: list[str] | None = None
    agents: str | None = None
    as_json: bool = False
    follow: bool = False
    repairs: int | None = None
    turn_timeout: float | None = None
    max_tokens: int | None = None
    max_wall: float | None = None
    max_turn_tokens: int | None = None
    max_cost: float | None = None
    dry_run: bool = False
    debug: bool = False
    quiet: bool = False


def start_record(driver_class: type[Driver], options: Any, flags: RunFlags, *, force: bool) -> Driver:
    """Create a new debate's record once its settings, --agent options and paths are known to be good.

    Every path option (a source, an agenda, --source) and the protocol's record folder must lie inside the
    work root (moot.paths). ``--force`` replaces an existing record of the same name (and the files beside it).
    """
    from moot.engine.specs import confine

    load_settings(flags.root)
    parse_agent_options(flags.agent or [])
    options = confine(options, flags.root, registry.get(driver_class.protocol).folder)
    try:
        return driver_class.start(start_root(flags.root, flags.dry_run), options, now_minutes())
    except RecordExists as exc:
        if not force:
            raise UserError(f"{exc} To start it afresh, pass --force.") from exc
        remove_record(exc.path, stop_at=exc.path.parent)
        return driver_class.start(start_root(flags.root, flags.dry_run), options, now_minutes())


# ``moot --debug run …`` (the root's flag) asks for the attempts as well as the tracebacks.
debug_everything = False


def execute(
    driver: Driver,
    flags: RunFlags,
    after: Callable[[Driver, RunResult], bool] | None = None,
    *,
    created: bool = True,
) -> None:
    """Run ``driver`` with the chosen agents, show progress, print the outcome and exit with its code.

    The agents are built and probed before the first turn; when that fails for a record this command
    ``created``, the record is removed again, so the corrected command can start it. A resumed run
    uses the agent specs its record's runs used, unless --agent/--agents say otherwise.
    ``after`` may continue the debate (the person agreed to more rounds): it returns True to run again.
    """
    path = driver.record_path
    progress: Progress | None = None
    try:
        settings = load_settings(flags.root)
        per_role = parse_agent_options(flags.agent or [])
        if not created and flags.agents is None:
            per_role = {**stored_agents(path), **per_role}
        choice = AgentChoice.for_driver(driver, per_role, flags.agents)
        limits = limits_from(
            settings,
            repairs=flags.repairs,
            turn_timeout_s=flags.turn_timeout,
            max_tokens=flags.max_tokens,
            max_wall_s=flags.max_wall,
            max_turn_tokens=flags.max_turn_tokens,
            max_cost_usd=flags.max_cost,
        )
        warning = one_family_warning({role: choice.spec_for(role, settings) for role in driver.roles()})
        if warning is not None:
            typer.echo(f"moot: {warning}", err=True)
        if flags.dry_run:
            try:
                print_estimate(driver, resolve_agents(driver.roles(), choice, settings), choice, settings, limits)
            finally:
                shutil.rmtree(next(p for p in path.parents if p.name.startswith(DRY_RUN_PREFIX)))
            raise typer.Exit(0)
        try:
            chosen = resolve_agents(driver.roles(), choice, settings)
            if limits.max_cost_usd is not None:
                require_prices(chosen, choice, settings)
            asyncio.run(probe_agents(chosen))
        except UserError:
            if created:
                remove_record(path, stop_at=flags.root)
            raise
        progress = shown = Progress(
            driver, follow=flags.follow, quiet=flags.as_json or flags.quiet, debug=flags.debug or debug_everything
        )
        shown.interactive_roles = {role for role, agent in chosen.items() if agent.interactive}
        while True:
            roles = driver.roles()
            specs = {role: choice.spec_for(role, settings) for role in roles}
            with shown:
                result = run_interruptible(
                    run_driver(driver, chosen, limits, (shown.on_event,), specs),
                    stopping=lambda: shown.say("moot: stopping… (Ctrl-C again quits at once)"),
                    stop_now=lambda: stopped_text(driver, flags, shown.final),
                )
            if after is None or flags.as_json or not after(driver, result):
                break
            chosen = resolve_agents(roles, choice, settings)
    except KeyboardInterrupt:
        out, err = stopped_text(driver, flags, progress.final if progress is not None else None)
        sys.stdout.write(out)
        sys.stderr.write(err)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (DiskFault, OSError) as exc:  # every accepted turn is durable: once the disk is fixed, the run resumes
        fault = DiskFault.of(exc)
        if fault is None:
            raise
        raise fault.then_do(f"run `moot resume {path}`") from exc
    if flags.as_json:
        typer.echo(run_json(result.to_json(), path))
    else:
        print_outcome(result, quiet=flags.quiet)
    outcome = result.outcome
    raise typer.Exit(0 if outcome is not None and outcome.consensus else 1)


def stopped_text(driver: Driver, flags: RunFlags, final: dict[str, Any] | None) -> tuple[str, str]:
    """What an interrupted run prints on stdout (--json: its one object) and on stderr (where to resume).

    ``final`` is the engine's account of the run up to the stop; a run stopped before the engine began (an agent's
    probe) has none, and its object says only where it stopped.
    """
    path = driver.record_path
    err = f"moot: stopped. The record is {path}; continue with: {resume_text(path)}\n"
    if not flags.as_json:
        return "", err
    if final is None:
        halt = {"cause": "interrupted", "role": driver.next_speaker(), "reason": INTERRUPTED}
        final = RunResult(driver.protocol, path, driver.summary(), halted=halt).to_json()
    return run_json(final, path) + "\n", err


def run_json(result: dict[str, Any], path: Path) -> str:
    """The one object --json prints: the run's result and the record's conformity."""
    from moot.conformity import conformity_json

    return json.dumps({**result, "conformity": conformity_json(path)}, ensure_ascii=False)


@run_app.callback()
def run_root(
    ctx: typer.Context,
    batch: Annotated[Path | None, typer.Option("--batch", help="A JSONL file: one debate per line.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Debates run at once (per worker).")] = 4,
    workers: Annotated[
        int,
        typer.Option(
            "--workers", min=1, max=256, help="Processes the batch is dealt to (use one per core; default 1)."
        ),
    ] = 1,
    ledger: Annotated[
        str | None,
        typer.Option(
            "--ledger",
            help="A postgresql:// URL (as in MOOT_DATABASE_URL): every host running the same --batch file shares it, "
            "each debate run once.",
        ),
    ] = None,
    lease: Annotated[
        float | None,
        typer.Option(
            "--lease",
            min=2,
            help="With --ledger: seconds before another host takes over a debate whose host died (default 60).",
        ),
    ] = None,
    allow_writes: Annotated[
        bool, typer.Option("--allow-writes", help="Let acp: agents edit files and run commands (default: read-only).")
    ] = False,
) -> None:
    """Run one debate (choose a protocol) or many (--batch FILE.jsonl)."""
    if allow_writes:
        os.environ[ALLOW_WRITES_ENV] = "1"
    if ctx.invoked_subcommand is not None:
        if batch is not None:
            raise UserError("--batch runs the debates in the file; give it without a protocol.")
        if workers != 1:
            raise UserError("--workers deals a --batch file's debates to processes; give it with --batch.")
        if ledger is not None or lease is not None:
            raise UserError(
                "--ledger (and its --lease) shares a --batch file's debates between hosts; give it with --batch."
            )
        return
    if batch is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(2)
    from moot.cli.batch import run_batch

    if lease is not None and ledger is None:
        raise UserError("--lease is how long a host holds a debate of a batch shared with --ledger; give --ledger too.")
    raise typer.Exit(run_batch(batch, concurrency, workers, ledger, lease))


@run_options()
def run_critique(
    topic: Annotated[str, typer.Option("--topic", help="What the dialogue is about.")],
    template: Annotated[
        str | None,
        typer.Option("--template", help="planning (proposer/critic), review (author/reviewer), pair (lead/partner)."),
    ] = None,
    roles: Annotated[str | None, typer.Option("--roles", help="Two custom roles, A,B (A is your side).")] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="A file (or - for stdin) given to the first role only.")
    ] = None,
    max_rounds: Annotated[int | None, typer.Option("--max-rounds", min=1, help="Round limit.")] = None,
    source: SourceOpt = None,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """A Critique Loop: two roles alternate until one proposes done and the other confirms."""
    from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions
    from moot.protocols.critique.questions import after_critique, offer_gitignore

    if template is not None and roles is not None:
        raise UserError("give either --template or --roles, not both.")
    options = CritiqueOptions(
        topic=topic,
        roles=_two_roles(roles) if roles is not None else None,
        template=template,
        max_rounds=max_rounds,
        context=with_passages(_read_context(context, flags.root), source, flags.root, topic),
    )
    driver = start_record(CritiqueDriver, options, flags, force=force)
    if not flags.as_json and not flags.dry_run and interactive():
        offer_gitignore(flags.root)
    execute(
        driver,
        flags,
        after=after_critique if interactive() else None,
    )


def _spec_for(flags: RunFlags) -> Callable[[str], str]:
    """Each role's agent spec, recorded in the duel's and Agora's records as the participant's model."""
    choice = AgentChoice(parse_agent_options(flags.agent or []), flags.agents)
    settings = load_settings(flags.root)
    return lambda role: choice.spec_for(role, settings)


@run_options()
def run_duel(
    source: Annotated[Path, typer.Argument(help="The Markdown document to debate (read-only).")],
    topic: Annotated[
        str | None, typer.Option("--topic", help="Default: the first heading, else the file stem.")
    ] = None,
    roles: Annotated[str, typer.Option("--roles", help="The two participants, A,B.")] = "advocate,skeptic",
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", help="Turn limit (default and most: the seed's cap).")
    ] = None,
    supporting: SourceOpt = None,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """A Socratic Duel: two participants debate a source document in at most six turns."""
    from moot.protocols.duel.driver import DuelDriver, DuelOptions

    announce_sources(supporting, flags.root)
    options = DuelOptions(
        source=source,
        topic=topic,
        roles=_two_roles(roles),
        supporting=tuple(supporting or ()),
    ).with_models(_spec_for(flags))
    if max_turns is not None:  # the cap and its check live with the protocol (DuelConfig)
        options = dataclasses.replace(options, max_turns=max_turns)
    driver = start_record(DuelDriver, options, flags, force=force)
    execute(driver, flags)


@run_options()
def run_agora(
    topic: Annotated[str, typer.Option("--topic", help="What the drones debate.")],
    position: Annotated[
        list[str] | None, typer.Option("--position", help="ROLE=TEXT per participant (default: for and against).")
    ] = None,
    methodology: Annotated[str, typer.Option("--methodology", help="opinion, fact-based or mixed.")] = "opinion",
    max_turns: Annotated[int, typer.Option("--max-turns", min=2, help="Turn limit (the seed: 20).")] = 20,
    research: Annotated[int, typer.Option("--research", min=0, help="Research drones that gather evidence first.")] = 0,
    source: SourceOpt = None,
    sealed: Annotated[
        bool, typer.Option("--sealed", help="Ask every drone's opening proposal at once, none seeing another's.")
    ] = False,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """An Agora debate: drones exchange signals until Nash consensus, or time out."""
    from moot.protocols.agora.driver import AgoraDriver, AgoraOptions, parse_position

    positions = tuple(parse_position(value) for value in position or [])
    announce_sources(source, flags.root)
    options = AgoraOptions(
        topic=topic,
        positions=positions,
        methodology=methodology,
        max_turns=max_turns,
        research=research,
        sources=tuple(source or ()),
        sealed=sealed,
    ).with_models(_spec_for(flags))
    driver = start_record(AgoraDriver, options, flags, force=force)
    execute(driver, flags)


@run_options()
def run_roundtable(
    topic: Annotated[str | None, typer.Option("--topic", help="What the meeting discusses.")] = None,
    agenda: Annotated[Path | None, typer.Option("--agenda", help="A file with the background (AGENDA.md).")] = None,
    speakers: Annotated[str, typer.Option("--speakers", help="The speakers in order, A,B,C.")] = "architect,reviewer",
    max_rounds: Annotated[int, typer.Option("--max-rounds", min=1, help="Round limit.")] = 3,
    name: Annotated[str | None, typer.Option("--name", help="The meeting's directory name.")] = None,
    source: SourceOpt = None,
    sealed: Annotated[
        bool, typer.Option("--sealed", help="Ask every speaker's round-1 position at once, none seeing another's.")
    ] = False,
    *,
    flags: RunFlags,
    force: bool = False,
) -> None:
    """A Roundtable: speakers in order, then the moderator writes MINUTES.md and closes."""
    from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions

    if topic is None and agenda is None:
        raise UserError("give --topic or --agenda so the meeting has something to discuss.")
    order = tuple(part.strip() for part in speakers.split(",") if part.strip())
    background = with_passages(None, source, flags.root, topic or (agenda.stem if agenda else ""))
    options = RoundtableOptions(
        speakers=order,
        topic=topic,
        agenda=agenda,
        name=name,
        max_rounds=max_rounds,
        background=background,
        sealed=sealed,
    )
    driver = start_record(RoundtableDriver, options, flags, force=force)
    execute(driver, flags)


@run_options(without=("root", "dry_run", "force"))  # a resumed debate keeps its root and its record
def resume_command(
    path: Annotated[Path, typer.Argument(help="The record of an interrupted debate (file or meeting directory).")],
    context: Annotated[str | None, typer.Option("--context", help="Context for the first role (critique).")] = None,
    *,
    flags: RunFlags,
) -> None:
    """Continue an interrupted debate from its record with the agents it used: no turn is lost or repeated."""
    protocol, target = detected(path, "resume")
    from moot.core import ledger_place

    root = _work_root(target)
    if ledger_place.configured(root):  # only then is the ledger imported and asked
        from moot.tools.shared_record import shared_turns

        shared = shared_turns(protocol, target, root)
    else:
        shared = None
    if shared is not None:
        raise UserError(
            f"{target} is shared through the moot ledger and is now as the ledger holds it; its participants "
            f"take their turns with {shared}, not moot resume."
        )
    set_aside = set_aside_torn_append(target, registry.get(protocol).record.load().check)
    if set_aside is not None:
        typer.echo(f"moot: {set_aside}", err=True)
    driver = registry.get(protocol).driver.load().resume(target, context=_read_context(context, root))
    if driver.repaired_chain:
        typer.echo(f"moot: brought the digest chain of {target} up to date with its turns.", err=True)
    from moot.engine.sealed import open_phase

    if driver.next_speaker() is None and open_phase(driver) is None:
        outcome = driver.outcome()
        ended = f"it ended with {outcome.name} ({outcome.reason})" if outcome is not None else "it has ended"
        raise UserError(f"nothing to resume in {target}: {ended}; start a new debate instead.")
    execute(driver, dataclasses.replace(flags, root=root), created=False)


def announce_sources(paths: list[Path] | None, root: Path) -> None:
    """Read the --source paths once before the run: a missing one is a usage error, skipped files are said."""
    if not paths:
        return
    from moot.sources import collect_sources

    note = collect_sources(paths, root).skipped_note()
    if note is not None:
        typer.echo(f"moot: sources: {note}.", err=True)


def with_passages(context: str | None, paths: list[Path] | None, root: Path, query: str) -> str | None:
    """``context`` followed by the --source passages that best match ``query`` (critique, roundtable, council)."""
    if not paths:
        return context
    from moot.engine.grounding import source_passages

    announce_sources(paths, root)
    passages = source_passages(paths, root, query)
    return f"{context.rstrip()}\n\n{passages}" if context else passages


def detected(path: Path, doing: str) -> tuple[str, Path]:
    """The protocol of the record at ``path`` and the record, or one sentence saying why moot cannot ``doing`` it."""
    from moot.detect import detect

    protocol, target, report = detect(path)
    if report is not None or protocol is None:
        problem = report.violations[0].message if report is not None and report.violations else "unknown format"
        raise UserError(f"cannot {doing} {path}: {problem}")
    return protocol, target


def _work_root(record: Path) -> Path:
    """The work root of a record: the directory holding its protocol's folder (.dialogues/, debates/, …),
    refused when a folder between the two is a symbolic link (moot.paths): a resume writes there."""
    from moot.paths import record_place

    absolute = Path(os.path.abspath(record))
    folders = registry.folders()
    root = next((parent.parent for parent in absolute.parents if parent.name in folders), absolute.parent)
    record_place(root, absolute.relative_to(root))
    return root


def _two_roles(value: str) -> tuple[str, str]:
    parts = [part.strip() for part in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise UserError(f"--roles {value!r} needs exactly two names, like --roles architect,skeptic.")
    return parts[0], parts[1]


def _read_context(value: str | None, root: Path) -> str | None:
    """The text of --context: stdin for ``-``, else a file inside the work root ``root``."""
    if value is None:
        return None
    if value == "-":
        return sys.stdin.read()
    from moot.paths import inside_root

    path = inside_root(root, value, what="the context file")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(
            f"cannot read the context file {value}: {getattr(exc, 'strerror', None) or exc}; check the path."
        ) from exc

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
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer

from moot import registry
from moot.agents import Agent
from moot.agents.acp_catalog import ALLOW_WRITES_ENV
from moot.agents.family import one_family_warning
from moot.agents.pricing import attempt_tokens, logged_cost, total_usd, usd_text
from moot.cli.interrupt import EXIT_INTERRUPTED, run_interruptible
from moot.cli.progress import Progress, print_outcome
from moot.config import Settings, load_settings
from moot.core.run_state import SetAside, remove_record, resume_text, stored_agents
from moot.engine.driver import Driver
from moot.engine.loop import INTERRUPTED, Limits, RunResult, now_minutes, rounded_usd
from moot.engine.session import (
    AgentChoice,
    limits_from,
    parse_agent_options,
    probe_agents,
    refuse_one_family,
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
    driver: Driver,
    agents: dict[str, Agent],
    choice: AgentChoice,
    settings: Settings,
    limits: Limits,
    *,
    as_json: bool = False,
) -> None:
    """The dry run's table: per role its agent, calls, expected tokens and price beside the upper bound, the
    total, what calls made only on a condition add (an auto panel that splits), and how they stand against
    --max-cost (--json: one object with the same figures)."""
    from moot.engine.estimate import LONG_TEXT_TOKENS, contingent_totals, estimate, estimate_json

    found = estimate(driver, agents, limits)
    if as_json:
        specs = {row.role: choice.spec_for(row.role, settings) for row in found}
        typer.echo(json.dumps(estimate_json(driver.protocol, found, specs, limits.max_cost_usd), ensure_ascii=False))
        return
    typer.echo(
        f"dry run ({driver.protocol}): nothing was asked or written. An estimate, without repairs: "
        f"expected with replies of typical length (~{LONG_TEXT_TOKENS} tokens a main text) and the providers' "
        "caching; at most with every reply its whole budget and no cache."
    )
    for row in found:
        agent = f"  {row.role:<12} {choice.spec_for(row.role, settings):<28} {row.calls} call(s)"
        if row.person:
            typer.echo(f"{agent}: a person, no model tokens, $0")
            continue
        cached = f" ({row.cached_tokens:,} cached)" if row.cached_tokens else ""
        row_most = f"{row.max_calls} call(s), " if row.max_calls is not None else ""
        typer.echo(
            f"{agent}, ~{row.prompt_tokens:,} prompt{cached} + ~{row.completion_tokens:,} completion tokens, "
            f"~{usd_text(row.cost_usd)}; at most {row_most}{row.max_prompt_tokens:,} + "
            f"{row.max_completion_tokens:,}, {usd_text(row.max_cost_usd)}"
        )
    calls = sum(row.calls for row in found)
    tokens = sum(row.prompt_tokens + row.completion_tokens for row in found)
    most = sum(row.max_prompt_tokens + row.max_completion_tokens for row in found)
    cost, most_cost = total_usd([row.cost_usd for row in found]), total_usd([row.max_cost_usd for row in found])
    most_calls = sum(row.max_calls or row.calls for row in found)
    at_most = f"{most_calls} call(s), " if most_calls != calls else ""
    typer.echo(
        f"  total: {calls} call(s), ~{tokens:,} tokens, ~{usd_text(cost)}; "
        f"at most {at_most}{most:,} tokens, {usd_text(most_cost)}"
    )
    for part in contingent_totals(found):
        typer.echo(
            f"  if {part.when}: {part.calls} more call(s), ~{part.prompt_tokens + part.completion_tokens:,} more "
            f"tokens, ~{usd_text(part.cost_usd)} more (in the upper bound, not in the expected figures)"
        )
    if limits.max_cost_usd is not None:
        typer.echo(f"  --max-cost {usd_text(limits.max_cost_usd)}: {budget_text(limits.max_cost_usd, cost, most_cost)}")


def budget_text(budget: float, expected: float | None, most: float | None) -> str:
    """How the dry run's expected and upper-bound prices stand against a cost budget."""
    if expected is None or most is None:
        return "an agent's price is unknown, so the run would be refused; give it a price in moot.toml [prices]."
    if most <= budget:
        return "even the upper bound fits."
    if expected <= budget:
        return "the expected cost fits, the upper bound does not: the run halts if its spend reaches the budget."
    return "the expected cost is over the budget: the run will likely halt when its spend reaches it."


SourceOpt = Annotated[
    list[Path] | None,
    typer.Option("--source", help="A file or directory the evidence comes from (repeatable; .gitignore respected)."),
]


DebugOpt = Annotated[bool, typer.Option("--debug", help="Print every attempt (raw reply, violations) as it happens.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress line; only the outcome.")]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force", help="Replace an existing record of the same name (kept until the new debate's agents are ready)."
    ),
]
RequireDiverseOpt = Annotated[
    bool,
    typer.Option(
        "--require-diverse", help="Refuse a panel (three roles or more) whose every member is of one model family."
    ),
]

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
    ("require_diverse", RequireDiverseOpt, False),
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
    require_diverse: bool = False


def panel_specs(driver: Driver, per_role: dict[str, str], every_role: str | None, settings: Settings) -> dict[str, str]:
    """The agent spec each of ``driver``'s roles would be run with."""
    choice = AgentChoice.for_driver(driver, per_role, every_role)
    return {role: choice.spec_for(role, settings) for role in driver.roles()}


DIVERSE_FIX = "--member, --agent ROLE=SPEC"  # where a command names the panel's agents


def start_record(driver_class: type[Driver], options: Any, flags: RunFlags, *, force: bool) -> Driver:
    """Create a new debate's record once its settings, --agent options and paths are known to be good.

    Every path option (a source, an agenda, --source) and the protocol's record folder must lie inside the
    work root (moot.paths). ``--force`` replaces an existing record of the same name (and the files beside it).
    """
    from moot.engine.specs import confine

    settings = load_settings(flags.root)
    per_role = parse_agent_options(flags.agent or [])
    options = confine(options, flags.root, registry.get(driver_class.protocol).folder)
    if flags.require_diverse:  # the panel is known once a driver exists: start one where nothing is kept
        trial_root = start_root(flags.root, dry_run=True)
        try:
            trial = driver_class.start(trial_root, options, now_minutes())
            specs = panel_specs(trial, per_role, flags.agents, settings)
        finally:
            shutil.rmtree(trial_root, ignore_errors=True)
        refuse_one_family(specs, "--require-diverse", DIVERSE_FIX)
    try:
        return driver_class.start(start_root(flags.root, flags.dry_run), options, now_minutes())
    except RecordExists as exc:
        if not force:
            raise UserError(f"{exc} To start it afresh, pass --force.") from exc
        aside = SetAside(exc.path)
        try:
            driver = driver_class.start(start_root(flags.root, flags.dry_run), options, now_minutes())
        except BaseException as failed:
            aside.restore(failed)
            raise
        aside.claim(driver.record_path)
        replacing[driver.record_path] = aside
        return driver


# The records a --force start moved aside, by the new record's path: execute() deletes one once the new debate's
# agents are ready, or puts it back if they are not.
replacing: dict[Path, SetAside] = {}


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
        specs = {role: choice.spec_for(role, settings) for role in driver.roles()}
        if flags.require_diverse:  # a resumed record: refused before any turn is asked
            refuse_one_family(specs, "--require-diverse", DIVERSE_FIX)
        warning = one_family_warning(specs)
        if warning is not None:
            typer.echo(f"moot: {warning}", err=True)
        if flags.dry_run:
            try:
                chosen = resolve_agents(driver.roles(), choice, settings)
                print_estimate(driver, chosen, choice, settings, limits, as_json=flags.as_json)
            finally:
                shutil.rmtree(next(p for p in path.parents if p.name.startswith(DRY_RUN_PREFIX)))
            raise typer.Exit(0)
        replaced = replacing.pop(path, None)
        try:
            chosen = resolve_agents(driver.roles(), choice, settings)
            if limits.max_cost_usd is not None:
                require_prices(chosen, choice, settings)
            asyncio.run(probe_agents(chosen))
        except BaseException as exc:
            if replaced is not None:
                replaced.restore(exc)  # the old debate stands until the new one can start
            elif created and isinstance(exc, UserError):
                remove_record(path, stop_at=flags.root)
            raise
        if replaced is not None:
            replaced.discard()
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
    """The one object --json prints: the run's result, what the record spent in all its runs (``tokens``,
    ``cost_usd_all_runs``: its usage log, as moot ls and moot show count it; ``turns`` is the record's too) beside
    this run's share (``tokens_this_run``, ``prompt_tokens``, ``completion_tokens``, ``cost_usd``), and the record's
    conformity."""
    from moot.conformity import conformity_json
    from moot.records import read_attempts

    logged = read_attempts(path)
    spent = {
        "tokens": sum(attempt_tokens(row) for row in logged),
        "tokens_this_run": int(result.get("prompt_tokens") or 0) + int(result.get("completion_tokens") or 0),
        "cost_usd_all_runs": rounded_usd(logged_cost(logged)),
    }
    return json.dumps({**result, **spent, "conformity": conformity_json(path)}, ensure_ascii=False)


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


@run_options(without=("root", "dry_run", "force"))  # a resumed debate keeps its root and its record
def resume_command(
    path: Annotated[Path, typer.Argument(help="The record of an interrupted debate (file or meeting directory).")],
    context: Annotated[str | None, typer.Option("--context", help="Context for the first role (critique).")] = None,
    max_rounds: Annotated[
        int | None, typer.Option("--max-rounds", min=1, help="Raise the round limit to N and go on (critique).")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Raise the turn limit to N and go on, where allowed.")
    ] = None,
    *,
    flags: RunFlags,
) -> None:
    """Continue an interrupted debate from its record with the agents it used: no turn is lost or repeated.
    --max-rounds (or --max-turns) first raises the limit a debate ended at, where its protocol allows it."""
    from moot.resuming import resumable

    _, target = detected(path, "resume")
    root = _work_root(target)
    raised = {name: value for name, value in (("max_rounds", max_rounds), ("max_turns", max_turns)) if value}
    driver = resumable(
        target,
        root,
        str(target),
        context=read_context(context, root),
        raised=raised,
        note=lambda text: typer.echo(f"moot: {text}", err=True),
    )
    execute(driver, dataclasses.replace(flags, root=root), created=False)


def spec_for(flags: RunFlags) -> Callable[[str], str]:
    """Each role's agent spec, recorded in the duel's and Agora's records as the participant's model."""
    choice = AgentChoice(parse_agent_options(flags.agent or []), flags.agents)
    settings = load_settings(flags.root)
    return lambda role: choice.spec_for(role, settings)


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
    from moot.records import record_root

    root = record_root(record)
    record_place(root, Path(os.path.abspath(record)).relative_to(root))
    return root


def two_roles(value: str) -> tuple[str, str]:
    parts = [part.strip() for part in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise UserError(f"--roles {value!r} needs exactly two names, like --roles architect,skeptic.")
    return parts[0], parts[1]


def read_context(value: str | None, root: Path) -> str | None:
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

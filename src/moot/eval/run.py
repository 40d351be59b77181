"""Running (or resuming) an eval end to end: tasks, agents, every strategy, the fitted K, then the report files.

Every deliberation gets the baselines the verdict table needs: ``single`` and the self-consistency matched to
its own cost (``sc:match=D``) are added when the user did not name them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import moot
from moot.agents import Agent, resolve_agent
from moot.errors import AgentError, UserError
from moot.eval.costs import MEASURES, USD, Cost, mean, measure_for
from moot.eval.report import COST_UNITS, PLOT, markdown, plot, plotting_available, scaling_curve, summarise
from moot.eval.runner import Runner, Sampling, analysis_of
from moot.eval.store import Store
from moot.eval.strategies import Strategy, matched, parse_strategy
from moot.eval.tasks import AUTO, DEFAULT_LEVEL, DEFAULT_LIMIT, Extractor, Task, arithmetic, extractor, load_jsonl
from moot.eval.tasks import sample as sample_tasks
from moot.eval.workers import deal

ARITHMETIC = "arithmetic"
RECORDS = "records"  # under --out: the protocol strategies' records
MAX_SAMPLES = 1000  # a matched self-consistency never asks more per task


@dataclass(frozen=True)
class EvalOptions:
    tasks: str  # "arithmetic" or a JSONL file
    strategies: Sequence[str]
    agents: Mapping[str, str]  # name -> spec, in order; the first answers single and sc
    out: Path
    limit: int | None = None  # the first N tasks
    sample: int | None = None  # N tasks drawn with shuffle_seed
    shuffle_seed: int = 0
    seed: int = 0
    difficulty: int = DEFAULT_LEVEL
    extract: str = AUTO
    temperature: float = 0.7
    max_tokens: int = 512
    timeout_s: float = 120.0
    concurrency: int = 1  # in each worker process
    workers: int = 1  # processes the tasks are dealt to (moot.eval.workers)
    match: str | None = None  # calls | completion | tokens | usd; None: usd where prices are known
    replicates: int = 1
    about: dict[str, Any] = field(default_factory=dict)


def _strategies(texts: Sequence[str], agents: int) -> list[Strategy]:
    if not texts:
        raise UserError("give at least one --strategy, e.g. --strategy single --strategy protocol:council.")
    strategies = [parse_strategy(text) for text in texts]
    deliberations = [s for s in strategies if s.deliberates]
    for s in strategies:
        if s.kind == "protocol" and s.protocol is not None:
            analysis_of(s.protocol)
    resolved = []
    for s in strategies:
        if s.kind == "match":
            if not deliberations:
                raise UserError("sc:match matches a deliberation's cost; add one, e.g. --strategy protocol:council.")
            target = s.target or deliberations[0].name
            if target not in {d.name for d in deliberations}:
                raise UserError(f"--strategy {s.name}: {target} is not among the strategies; add it, or fix the name.")
            s = matched(target)
        resolved.append(s)
    names = [s.name for s in resolved]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UserError(f"--strategy {repeated[0]} is given twice; give each strategy once.")
    if any(s.kind == "vote" for s in resolved) and agents < 2:
        raise UserError("vote needs at least two agents; name them with --agent NAME=SPEC (repeatable).")
    if deliberations and "single" not in names:
        resolved.insert(0, Strategy("single", "single", added=True))
    for d in deliberations:
        if not any(s.kind == "match" and s.target == d.name for s in resolved):
            resolved.append(replace(matched(d.name), added=True))
    return resolved


def _tasks(options: EvalOptions) -> tuple[list[Task], Extractor, str | None]:
    """The tasks, the extractor that reads their answers, and the task file's SHA-256 (None: generated)."""
    if options.limit and options.sample:
        raise UserError("give --limit (the first N tasks) or --sample (N tasks drawn at random), not both.")
    count = options.sample or options.limit
    if options.tasks == ARITHMETIC:
        return arithmetic(count or DEFAULT_LIMIT, options.seed, options.difficulty), extractor(options.extract), None
    tasks, read, digest = load_jsonl(Path(options.tasks), options.extract)
    return sample_tasks(tasks, count, options.shuffle_seed if options.sample else None), read, digest


def _identity(options: EvalOptions, digest: str | None) -> dict[str, Any]:
    """What makes two runs the same experiment (the number of tasks, replicates and strategies may grow)."""
    generated = options.tasks == ARITHMETIC
    return {
        "tasks": options.tasks if generated else str(Path(options.tasks).resolve()),
        "tasks_sha256": digest,
        "difficulty": options.difficulty if generated else None,
        "shuffle_seed": options.shuffle_seed if options.sample and not generated else None,
        "seed": options.seed,
        "extract": options.extract,
        "agents": dict(options.agents),
        "temperature": options.temperature,
        "max_tokens": options.max_tokens,
        "match": options.match,
    }


def _resolve(agents: Mapping[str, str]) -> dict[str, Agent]:
    by_spec: dict[str, Agent] = {}
    for spec in agents.values():
        if spec not in by_spec:
            try:
                by_spec[spec] = resolve_agent(spec)
            except AgentError as exc:
                raise UserError(str(exc)) from exc
    return {name: by_spec[spec] for name, spec in agents.items()}


def _write(path: Path, text: str) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def fit(
    store: Store,
    strategy: Strategy,
    tasks: Sequence[Task],
    replicates: int,
    requested: str | None,
    agents: Mapping[str, Agent] | None = None,
) -> int | None:
    """K of ``strategy`` (sc:match=D): fitted once and kept in the store; None while D has finished no task.

    The first samples are D's openings, at what they cost; the further ones are asked of D's agents in turn
    (as :mod:`moot.eval.runner` asks them), each costing what a ``single`` answer cost, in dollars at the price
    of the agent that gives it. K is the number of samples whose cost comes nearest D's mean cost, in the
    ``--match`` unit.
    """
    if strategy.name in store.fits:
        return int(store.fits[strategy.name]["k"])
    assert strategy.target is not None

    def finished(name: str) -> list[dict[str, Any]]:
        keys = ((name, t.id, r) for t in tasks for r in range(1, replicates + 1))
        return [record for key in keys if (record := store.tasks.get(key)) is not None]

    records, singles = finished(strategy.target), finished("single")
    if not records:
        return None
    costs = [Cost.of(record) for record in records]
    measure = measure_for(requested, costs)
    if mean(costs, measure) is None:  # a price is unknown: dollars cannot be matched
        measure = "completion"
    spent = mean(costs, measure) or 0.0
    openings = mean([Cost.of(record["opening"]) for record in records], measure) or 0.0
    shared = max(len(record["rounds"][0]) if record.get("rounds") else 0 for record in records)
    one = mean([Cost.of(record) for record in singles], measure) if singles else None
    if not one:
        one = openings / shared if shared else 0.0
    step = _sample_costs(measure, one, singles, _panel(records), agents or {})
    k, paid = shared, openings
    while k < MAX_SAMPLES and (cost := step(k + 1)) > 0 and paid + cost / 2 <= spent:
        k, paid = k + 1, paid + cost
    k = max(k, 1)
    store.append(
        {
            "kind": "fit",
            "strategy": strategy.name,
            "target": strategy.target,
            "measure": measure,
            "k": k,
            "tasks": len(records),
            "deliberation_cost": spent,
            "openings_cost": openings,
            "openings": shared,
            "sample_cost": one,
            "fitted_cost": paid,
        }
    )
    return k


def _panel(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The agents that answer a deliberation's further matched samples in turn: those of its openings."""
    for record in records:
        openings = record["rounds"][0] if record.get("rounds") else {}
        if openings:
            return [record["panel"].get(who, who) for who in openings]
    return []


def _sample_costs(
    measure: str, one: float, singles: Sequence[Mapping[str, Any]], panel: Sequence[str], agents: Mapping[str, Agent]
) -> Callable[[int], float]:
    """The cost of the i-th matched sample (counted from 1): ``one``, or in dollars the price of a single answer's
    mean tokens at the agent that gives it (``one`` where that agent's price is unknown)."""
    if measure != USD or not panel or not singles:
        return lambda index: one
    prompt = round(sum(int(r["prompt_tokens"]) for r in singles) / len(singles))
    completion = round(sum(int(r["completion_tokens"]) for r in singles) / len(singles))

    def price(name: str) -> float:
        agent = agents.get(name)
        usd = agent.price_usd(prompt, completion) if agent is not None else None
        return one if usd is None else usd

    prices = [price(name) for name in panel]
    return lambda index: prices[(index - 1) % len(prices)]


def _about(options: EvalOptions, store: Store, runner: Runner, digest: str | None) -> dict[str, Any]:
    models: dict[str, set[str]] = {}
    for record in store.calls.values():
        if record.get("model"):
            models.setdefault(record["agent"], set()).add(record["model"])
    return {
        "tasks": options.tasks + (f" (difficulty {options.difficulty})" if options.tasks == ARITHMETIC else ""),
        "tasks_sha256": digest,
        "seed": options.seed,
        "agents": dict(options.agents),
        "models": {agent: sorted(found) for agent, found in models.items()},
        "temperature": options.temperature,
        "max_tokens": options.max_tokens,
        "replicates": options.replicates,
        "moot_versions": sorted({s["moot"] for s in store.sessions}),
        "missing_this_run": [
            {"strategy": s, "task": t, "replicate": r, "why": why} for (s, t, r), why in runner.missing.items()
        ],
        **options.about,
    }


def build_runner(options: EvalOptions, store: Store, on_task_done: Callable[[], None]) -> Runner:
    """The eval's runner around ``store``: in this process, and in each ``--workers`` process."""
    tasks, read, _ = _tasks(options)
    sampling = Sampling(options.temperature, options.max_tokens, options.timeout_s, options.seed)
    return Runner(
        tasks, read, _resolve(options.agents), options.agents, sampling, store, options.out / RECORDS,
        options.replicates, options.concurrency, on_task_done,
    )  # fmt: skip


def run_eval(
    options: EvalOptions,
    on_start: Callable[[int], None] = lambda total: None,
    on_task_done: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """Run (or resume) the eval, write report.json, report.md and the plot, and return the summary."""
    if not options.agents:
        raise UserError("give the agents with --agents SPEC or --agent NAME=SPEC.")
    if options.match is not None and options.match not in MEASURES:
        raise UserError(f"--match {options.match} is unknown; use {', '.join(MEASURES)}.")
    strategies = _strategies(options.strategies, len(options.agents))
    tasks, _, digest = _tasks(options)
    store = Store(options.out)
    store.open(_identity(options, digest))
    store.append({"kind": "session", "moot": moot.__version__, "at": datetime.now().isoformat(timespec="seconds")})
    runner = build_runner(options, store, on_task_done)

    async def run_phase(phase: Sequence[Strategy]) -> None:
        if options.workers == 1:
            for strategy in phase:
                await runner.run(strategy)
            return
        items = [(s, task.id, replicate) for s in phase for task, replicate in runner.pending(s)]
        build = functools.partial(build_runner, options)
        runner.missing.update(await asyncio.to_thread(deal, build, store, items, options.workers, on_task_done))

    async def run_all() -> list[Strategy]:
        try:
            done = [s for s in strategies if s.kind != "match"]
            await run_phase(done)
            matched: list[Strategy] = []
            for strategy in (s for s in strategies if s.kind == "match"):  # after what they match
                k = fit(store, strategy, tasks, options.replicates, options.match, runner.agents)
                if k is not None:
                    matched.append(replace(strategy, samples=k))
            await run_phase(matched)
            return done + matched
        finally:
            await runner.aclose()

    on_start(sum(len(runner.pending(s)) for s in strategies))
    finished = asyncio.run(run_all())
    order = {s.name: i for i, s in enumerate(strategies)}
    finished.sort(key=lambda s: order[s.name])
    summary = summarise(
        finished, tasks, options.replicates, store.tasks, _about(options, store, runner, digest), store.fits
    )
    return _report(summary, options, store, finished, tasks)


def _report(
    summary: dict[str, Any], options: EvalOptions, store: Store, finished: Sequence[Strategy], tasks: Sequence[Task]
) -> dict[str, Any]:
    files = {"results": str(store.results_path), "json": str(options.out / "report.json")}
    files["markdown"] = str(options.out / "report.md")
    if plotting_available():
        curve_from = max((s for s in finished if s.kind in ("sc", "match")), key=lambda s: s.samples, default=None)
        done = [t for t in tasks if any(t.id == key[1] for key in store.tasks)]
        reps = options.replicates
        complete = [
            t for t in done if all((s.name, t.id, r) in store.tasks for s in finished for r in range(1, reps + 1))
        ]
        curve = scaling_curve(store.tasks, curve_from, complete, reps) if curve_from is not None else []
        measure = next(iter(store.fits.values()), {}).get("measure", "completion")
        plot(summary, curve, COST_UNITS[measure], options.out / PLOT)
        files["plot"] = str(options.out / PLOT)
    summary["files"] = files
    _write(options.out / "report.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    _write(options.out / "report.md", markdown(summary))
    return summary

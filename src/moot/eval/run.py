"""Running (or resuming) an eval end to end: tasks, agents, every strategy, then the report files."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moot.agents import Agent, AgentError, resolve_agent
from moot.errors import UserError
from moot.eval.report import PLOT, markdown, plot, plotting_available, summarise
from moot.eval.runner import Runner, Sampling, matched_samples
from moot.eval.store import Store
from moot.eval.strategies import Strategy, parse_strategy
from moot.eval.tasks import DEFAULT_LEVEL, DEFAULT_LIMIT, Task, arithmetic, extractor, load_jsonl

ARITHMETIC = "arithmetic"


@dataclass(frozen=True)
class EvalOptions:
    tasks: str  # "arithmetic" or a JSONL file
    strategies: Sequence[str]
    agents: Mapping[str, str]  # name -> spec, in order; the first answers single and sc
    out: Path
    limit: int | None = None
    seed: int = 0
    difficulty: int = DEFAULT_LEVEL
    extract: str = "number"
    temperature: float = 0.7
    max_tokens: int = 512
    timeout_s: float = 120.0
    concurrency: int = 1
    about: dict[str, Any] = field(default_factory=dict)


def _strategies(texts: Sequence[str], agents: int) -> list[Strategy]:
    if not texts:
        raise UserError("give at least one --strategy, e.g. --strategy single --strategy sc:3.")
    strategies = [parse_strategy(text) for text in texts]
    names = [s.name for s in strategies]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UserError(f"--strategy {repeated[0]} is given twice; give each strategy once.")
    if any(s.matched for s in strategies) and not any(s.deliberates for s in strategies):
        raise UserError(
            "sc:match matches a debate's or council's tokens; add one, e.g. --strategy debate:3x2 or council:3."
        )
    if any(s.kind == "vote" for s in strategies) and agents < 2:
        raise UserError("vote needs at least two agents; name them with --agent NAME=SPEC (repeatable).")
    return strategies


def _tasks(options: EvalOptions) -> list[Task]:
    read = extractor(options.extract)
    if options.tasks == ARITHMETIC:
        return arithmetic(options.limit or DEFAULT_LIMIT, options.seed, options.difficulty)
    tasks = load_jsonl(Path(options.tasks), read)
    return tasks[: options.limit] if options.limit else tasks


def _identity(options: EvalOptions) -> dict[str, Any]:
    """What makes two runs the same experiment (the number of tasks and the strategies may grow)."""
    source = options.tasks if options.tasks == ARITHMETIC else str(Path(options.tasks).resolve())
    return {
        "tasks": source,
        "difficulty": options.difficulty if options.tasks == ARITHMETIC else None,
        "seed": options.seed,
        "extract": options.extract,
        "agents": dict(options.agents),
        "temperature": options.temperature,
        "max_tokens": options.max_tokens,
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


def run_eval(
    options: EvalOptions,
    on_start: Callable[[int], None] = lambda total: None,
    on_task_done: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """Run (or resume) the eval, write report.json, report.md and the plot, and return the summary."""
    if not options.agents:
        raise UserError("give the agents with --agents SPEC or --agent NAME=SPEC.")
    strategies = _strategies(options.strategies, len(options.agents))
    tasks = _tasks(options)
    read = extractor(options.extract)
    store = Store(options.out)
    store.open(_identity(options))
    agents = _resolve(options.agents)
    sampling = Sampling(options.temperature, options.max_tokens, options.timeout_s, options.seed)
    runner = Runner(tasks, read, agents, sampling, store, options.concurrency, on_task_done)

    async def run_all() -> list[Strategy]:
        try:
            done: list[Strategy] = []
            for strategy in sorted(strategies, key=lambda s: s.matched):  # sc:match after what it matches
                if strategy.matched:
                    matched = next(s for s in done if s.deliberates)
                    k = matched_samples(store, matched, tasks)
                    strategy = Strategy(strategy.name, "sc", samples=k)
                await runner.run(strategy)
                done.append(strategy)
            return done
        finally:
            for agent in {id(a): a for a in agents.values()}.values():
                await agent.aclose()

    on_start(sum(len(runner.pending(s)) for s in strategies))
    finished = asyncio.run(run_all())
    order = {s.name: i for i, s in enumerate(strategies)}
    finished.sort(key=lambda s: order[s.name])
    about = {
        "tasks": options.tasks + (f" (difficulty {options.difficulty})" if options.tasks == ARITHMETIC else ""),
        "seed": options.seed,
        "agents": dict(options.agents),
        "temperature": options.temperature,
        "max_tokens": options.max_tokens,
        **options.about,
    }
    summary = summarise(finished, tasks, store.tasks, about)
    files = {"results": str(store.results_path), "json": str(options.out / "report.json")}
    files["markdown"] = str(options.out / "report.md")
    if plotting_available():
        plot(summary, options.out / PLOT)
        files["plot"] = str(options.out / PLOT)
    summary["files"] = files
    _write(options.out / "report.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    _write(options.out / "report.md", markdown(summary))
    return summary

"""``moot eval``: a task set under several strategies, deliberations compared with their baselines (see moot.eval)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from moot.engine.session import parse_agent_options
from moot.eval.tasks import AUTO, DEFAULT_LEVEL, DEFAULT_LIMIT


def eval_command(
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks",
            help="'arithmetic' (generated, seeded) or a JSONL file: GSM8K's, or multiple choice with a choices list.",
        ),
    ],
    strategy: Annotated[
        list[str],
        typer.Option(
            "--strategy",
            help="single, sc:K, sc:match[=STRATEGY], vote, protocol:NAME[:KEY=VALUE,…] (council is "
            "protocol:council), or the free-text baseline debate:NxR (repeatable).",
        ),
    ],
    agents: Annotated[
        str | None, typer.Option("--agents", help="One agent SPEC for every answer (default: local).")
    ] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            help="NAME=SPEC (repeatable): the panel of vote, debates and protocols; the first answers single and sc.",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help=f"Use the first N tasks (arithmetic: {DEFAULT_LIMIT}).")
    ] = None,
    sample: Annotated[
        int | None, typer.Option("--sample", min=1, help="Use N tasks drawn at random (seeded by --shuffle-seed).")
    ] = None,
    shuffle_seed: Annotated[int, typer.Option("--shuffle-seed", help="Seeds the --sample draw.")] = 0,
    seed: Annotated[int, typer.Option("--seed", help="Seeds the generated tasks and every sample.")] = 0,
    difficulty: Annotated[
        int,
        typer.Option("--difficulty", min=1, max=5, help="Arithmetic: 1 a+b … 4 a+b*c+d-e*f up to 29 (Du et al.) … 5."),
    ] = DEFAULT_LEVEL,
    extract: Annotated[
        str,
        typer.Option(
            "--extract",
            help="How answers are read: auto (letter for multiple choice, else number), number, letter "
            "or regex:PATTERN.",
        ),
    ] = AUTO,
    match: Annotated[
        str | None,
        typer.Option(
            "--match",
            help="What sc:match holds equal: calls, completion, tokens or usd (default: usd where every "
            "price is known, else completion tokens).",
        ),
    ] = None,
    replicates: Annotated[
        int, typer.Option("--replicates", min=1, help="Run every strategy R times on each task, with other seeds.")
    ] = 1,
    temperature: Annotated[float, typer.Option("--temperature", min=0, help="Sampling temperature.")] = 0.7,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token limit of each answer.")] = 512,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per answer.")] = 120.0,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Tasks and calls at once (API endpoints), in each worker.")
    ] = 1,
    workers: Annotated[
        int,
        typer.Option(
            "--workers", min=1, max=256, help="Processes the tasks are dealt to (use one per core; default 1)."
        ),
    ] = 1,
    out: Annotated[Path, typer.Option("--out", help="Directory for results, report and plot; rerun to resume.")] = Path(
        "moot-eval"
    ),
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
) -> None:
    """Does a deliberation beat one model at equal cost? Compare strategies task by task and print the verdicts."""
    from moot.eval.run import EvalOptions, run_eval  # imports the engine: only when an eval runs

    pool = parse_agent_options(agent or []) or {"agent": agents or "local"}
    options = EvalOptions(
        tasks=tasks,
        strategies=strategy,
        agents=pool,
        out=out,
        limit=limit,
        sample=sample,
        shuffle_seed=shuffle_seed,
        seed=seed,
        difficulty=difficulty,
        extract=extract,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_s=timeout,
        concurrency=concurrency,
        workers=workers,
        match=match,
        replicates=replicates,
    )
    console = Console(stderr=True)
    if not console.is_terminal:
        lines = _ProgressLines()
        summary = run_eval(options, on_start=lines.start, on_task_done=lines.task_done)
    else:
        bar = Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console)
        with bar:
            progress_task = bar.add_task("eval", total=None)
            summary = run_eval(
                options,
                on_start=lambda total: bar.update(progress_task, total=total),
                on_task_done=lambda: bar.advance(progress_task),
            )
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False))
        return
    typer.echo(Path(summary["files"]["markdown"]).read_text(encoding="utf-8"))
    shown = ", ".join(f"{what} {path}" for what, path in summary["files"].items())
    typer.echo(f"written: {shown}" + ("" if "plot" in summary["files"] else " (no plot: pip install 'moot[eval]')"))


class _ProgressLines:
    """The progress without a terminal (a log file, a pipe, CI): a line on stderr per finished task, since an eval
    runs for minutes and a bar would show nothing there."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.done = 0
        self.started = time.monotonic()
        self.lock = threading.Lock()  # tasks may finish in worker threads

    def start(self, total: int) -> None:
        self.total = total
        typer.echo(f"eval: {total} task(s) to run", err=True)

    def task_done(self) -> None:
        with self.lock:
            self.done += 1
            typer.echo(f"eval: {self.done}/{self.total} tasks done · {time.monotonic() - self.started:.0f} s", err=True)

"""What a person sees while moot runs a debate: one live progress line, the outcome, and with
``--follow`` each accepted turn as it lands. Everything goes to stderr except ``--follow``'s turns
and the outcome, so ``--json`` output stays clean on stdout.

The live line is drawn again several times a second: its clock moves while a turn is being generated, and its
token count grows with the reply of an agent that streams (the embedded model does).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.status import Status
from rich.text import Text

from moot.agents.pricing import attempt_tokens, cache_text, logged_cost, saving_usd, usd_text
from moot.cli.log import attempt_text
from moot.core.chain import without_marks
from moot.core.run_state import RUN_HALTED, resume_text, with_record
from moot.engine.driver import Driver
from moot.engine.loop import Event, RunResult
from moot.records import read_attempts


class _Redrawn:
    """A renderable whose text is asked for at every refresh of the live line."""

    def __init__(self, text: Callable[[], str]) -> None:
        self.text = text

    def __rich__(self) -> Text:
        return Text(self.text())


def lines_console(*, stderr: bool = False) -> Console:
    """Where moot's lines go: on a terminal they wrap at its width; in a pipe or a log each stays whole on one line
    (a path or a command folded at 80 columns could not be copied from a log)."""
    console = Console(stderr=stderr, highlight=False)
    console.soft_wrap = not console.is_terminal
    return console


class Progress:
    """A rich status line fed by the engine's events (``turn k of max · who · tokens · elapsed``)."""

    def __init__(self, driver: Driver, *, follow: bool, quiet: bool, debug: bool = False) -> None:
        self.driver = driver
        self.follow = follow
        self.quiet = quiet
        self.debug = debug
        self.interactive_roles: set[str] = set()  # roles a person answers (set by the caller)
        self.err = lines_console(stderr=True)
        self.out = lines_console()
        # A resumed run counts on from what its earlier runs spent: the record's tokens, as the summary, moot ls
        # and moot show count them (every attempt in its usage log).
        self.tokens = sum(attempt_tokens(row) for row in read_attempts(driver.record_path))
        self.streaming: dict[str, int] = {}  # completion tokens so far of each reply in the making, by role
        self.final: dict[str, Any] | None = None  # the run's result as the engine's outcome event told it
        self.started = time.monotonic()
        self.status: Status | None = None
        path = driver.record_path
        self.shown = path.stat().st_size if path.is_file() else 0  # --follow prints only what is new
        self.shown_files = {p.name for p in path.iterdir()} if path.is_dir() else set()

    @property
    def live(self) -> bool:
        return not self.quiet and self.err.is_terminal

    def _start_status(self) -> None:
        self.status = self.err.status("starting…")
        self.status.start()

    def _stop_status(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def __enter__(self) -> Progress:
        self.started = time.monotonic()
        if self.live:
            self._start_status()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._stop_status()

    def _line(self, event: Event, what: str) -> Callable[[], str]:
        """The line for ``event``: its turn and speaker now, its tokens and clock whenever it is drawn."""
        limit = self.driver.summary().detail.get("max_turns")
        turn = f"turn {event.data.get('turn', '?')}" + (f" of {limit}" if limit else "")
        head = f"{turn} · {event.role or '—'} {what}"

        def text() -> str:
            tokens = self.tokens + sum(self.streaming.values())
            return f"{head} · {tokens} tokens · {time.monotonic() - self.started:.0f} s"

        return text

    def on_event(self, event: Event) -> None:
        if event.type == "tokens":
            self.streaming[event.role or ""] = int(event.data.get("tokens", 0))
            return
        if event.type == "outcome":
            self.final = dict(event.data)
        if event.type == "attempt":  # every attempt's tokens count, a refused one's too (as in the attempt log)
            self.streaming.pop(event.role or "", None)
            self.tokens += attempt_tokens(event.data)
            if self.debug:
                self.err.print(attempt_text({"role": event.role, **event.data}), markup=False, soft_wrap=True)
        if event.type == "turn_accepted" and self.follow:
            self._show_new_text()
        if self.quiet:
            return
        if event.type == "turn_started" and event.role in self.interactive_roles:
            # A person types now: nothing may draw over their input, so the live line stops until they are done.
            self._stop_status()
            return
        if event.type == "substituted":
            said = f"{event.role} failed ({event.data.get('reason')}); {event.data.get('next')} takes its place"
            self.err.print(said, markup=False, soft_wrap=True)
            return
        if event.type == "refitted":
            context = event.data.get("context_tokens")
            self.err.print(f"{event.role}'s model has a {context}-token context: its prompts and turns now fit it")
            return
        if event.type == "turn_started":
            self.streaming.pop(event.role or "", None)
            text = self._line(event, "is speaking")
        elif event.type == "turn_rejected":
            rules = ", ".join(event.data.get("rules", []))
            again = "; asking again" if event.data.get("repairing") else ""
            said = (
                f"gave an invalid turn ({rules}){again}" if rules else f"could not answer ({event.data.get('reason')})"
            )
            text = self._line(event, said)
        elif event.type == "turn_accepted":
            text = self._line(event, "spoke")
        else:
            return
        if self.status is None and self.live and event.type != "turn_rejected":
            self._start_status()
        if self.status is not None:
            self.status.update(_Redrawn(text))
        elif event.type != "turn_started":
            self.err.print(text(), markup=False)

    def say(self, text: str) -> None:
        """A line above the live one (or on its own when there is none)."""
        self.err.print(text, markup=False, soft_wrap=True)

    def _show_new_text(self) -> None:
        """Print what the record gained since last time (a file's tail, or a meeting's new files)."""
        path = self.driver.record_path
        if path.is_dir():
            for file in sorted(p for p in path.iterdir() if p.suffix == ".md" and p.name not in self.shown_files):
                self.out.print(f"[bold]{file.name}[/bold]")
                self.out.print(without_marks(file.read_text(encoding="utf-8")), markup=False)
                self.shown_files.add(file.name)
            return
        text = path.read_bytes()
        self.out.print(without_marks(text[self.shown :].decode("utf-8", "replace")), markup=False)
        self.shown = len(text)


def spent_text(result: RunResult) -> str:
    """What the run spent, as the progress line counted it. A resumed run's record spent more in all (its usage log,
    which moot ls and moot show read): then that comes first and this run's share after it."""
    tokens = result.prompt_tokens + result.completion_tokens
    run = f"{result.prompt_tokens} prompt, {result.completion_tokens} completion"
    logged = read_attempts(result.record_path)
    total, cost = sum(attempt_tokens(row) for row in logged), logged_cost(logged)
    if len(logged) <= len(result.usage) or (total, cost) == (tokens, result.cost_usd):
        return f"{tokens} tokens ({run}) in {result.elapsed_s:.1f} s · cost {usd_text(result.cost_usd)}"
    return (
        f"{total} tokens in all runs, cost {usd_text(cost)}; this run {tokens} tokens ({run}) in "
        f"{result.elapsed_s:.1f} s, cost {usd_text(result.cost_usd)}"
    )


def print_outcome(result: RunResult, *, quiet: bool = False) -> None:
    """The readable summary at the end of a run (``quiet``: its first line and the record only)."""
    out = lines_console()
    outcome = result.outcome
    name = outcome.name if outcome is not None else (RUN_HALTED if result.halted is not None else "OPEN")
    style = "green" if outcome is not None and outcome.consensus else "yellow"
    if quiet:
        out.print(Text.assemble((name, f"bold {style}"), f" {result.record_path}"))
        return
    out.print(f"[bold {style}]{name}[/] — {result.protocol}, {result.summary.turns} turn(s)")
    if outcome is not None:
        out.print(f"  {with_record(outcome.reason, result.record_path)}", markup=False)
    if outcome is None and result.halted is not None:
        out.print(f"  halted: {result.halted.get('reason')}", markup=False)
        if result.resumable:
            out.print(f"  continue with: {resume_text(result.record_path)}", markup=False)
    if outcome is not None and outcome.degraded:
        out.print(Text.assemble(("  degraded: ", "bold yellow"), outcome.degraded, "; not the whole panel's result"))
    out.print(f"  record: {result.record_path}", markup=False)
    out.print(f"  {spent_text(result)}", markup=False)
    if result.cached_tokens or result.cache_write_tokens:
        saving = saving_usd(result.cost_usd, result.uncached_cost_usd)
        out.print(f"  cache: {cache_text(result.prompt_tokens, result.cached_tokens, saving)}", markup=False)

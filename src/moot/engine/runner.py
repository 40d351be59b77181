"""Debates run inside a long-lived process (``moot mcp``): each started from plain data, run as an asyncio task
with the engine ``moot run`` uses, and watched, awaited or cancelled by its id.

A debate's id is its record's path relative to the work root (``.dialogues/cache.md``, ``.roundtable/cache``),
so the same id names it while it runs here and afterwards on disk.

:func:`prepare` is the start every in-process caller shares (``moot run --batch`` too): the record is created,
the agents are resolved and probed, and a start that fails removes the record again, so nothing is left. The
record's preparation (settings, slug, record, source index, agents) runs on a worker thread, so that the event
loop goes on serving every other client and debate meanwhile.

A server runs at most ``max_running_debates`` debates at once and one client (``session``) at most
``max_running_debates_per_session`` (moot.toml); a start counts from the moment it is admitted, so that many
starts at once cannot all pass the check before any of them runs.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from moot.agents import Agent
from moot.agents.policy import AgentPolicy
from moot.agents.registry import admit
from moot.config import Settings, load_settings
from moot.core.run_state import SetAside, remove_record, stored_agents
from moot.engine.driver import Driver
from moot.engine.loop import Event, Limits, RunResult, now_minutes
from moot.engine.session import (
    AgentChoice,
    limits_from,
    probe_agents,
    refuse_one_family,
    require_prices,
    resolve_agents,
    run_driver,
)
from moot.engine.specs import build_driver, caller_keys, named_specs
from moot.errors import AgentError, DiskFault, RecordExists, RunnerBusy, UserError

CANCELLED_REASON = "cancelled with cancel_debate"
STOPPED_REASON = "the server running it stopped"


@dataclass(frozen=True)
class Prepared:
    """A started record whose agents answered their probe: ready for :func:`run_driver`."""

    driver: Driver
    agents: dict[str, Agent]
    limits: Limits
    specs: dict[str, str]


async def prepare(
    spec: Mapping[str, Any],
    root: Path,
    started: str,
    *,
    policy: AgentPolicy | None = None,
    settings_root: Path | None = None,
    budgets: Mapping[str, float | int | None] | None = None,
) -> Prepared:
    """Create the record ``spec`` describes (a ``--batch`` line's keys) under ``root`` and ready its agents.

    ``budgets`` override the settings' limits (``{"max_tokens": …}``; ``None`` keeps the setting). A start that
    fails after the record was created (an unknown agent, a missing key, an unreachable server) removes it.
    Under ``policy`` (a door serving clients) a spec the policy refuses is refused before anything is written.
    The settings are ``root``'s moot.toml, or ``settings_root``'s for a record kept in a folder of its own.
    """
    prepared = await create(spec, root, started, policy=policy, settings_root=settings_root, budgets=budgets)
    try:
        await probe_agents(prepared.agents)
    except BaseException:  # a failed (or cancelled) probe leaves no record behind
        await asyncio.to_thread(remove_record, prepared.driver.record_path, stop_at=root)
        raise
    return prepared


async def create(
    spec: Mapping[str, Any],
    root: Path,
    started: str,
    *,
    policy: AgentPolicy | None = None,
    settings_root: Path | None = None,
    budgets: Mapping[str, float | int | None] | None = None,
) -> Prepared:
    """What :func:`prepare` does before the probe (the file work and the agents' construction), on a worker
    thread."""
    return await asyncio.to_thread(_create, spec, root, started, policy, settings_root or root, budgets or {})


def _create(
    spec: Mapping[str, Any],
    root: Path,
    started: str,
    policy: AgentPolicy | None,
    settings_root: Path,
    budgets: Mapping[str, float | int | None],
) -> Prepared:
    """What :func:`prepare` does before the probe: file work and agent construction, run on a worker thread."""
    keys = caller_keys(spec)
    _allowed(named_specs(spec), policy)
    settings = load_settings(settings_root)
    panel = keys.get("panel", {})
    asked = AgentChoice(keys.get("agent", {}), keys.get("agents"))
    driver = build_driver(spec, root, started, lambda role: panel.get(role) or asked.spec_for(role, settings))
    members = {role: panel[role] for role in driver.roles() if role in panel}
    choice = AgentChoice.for_driver(driver, {**members, **asked.per_role}, asked.every_role)
    specs = {role: choice.spec_for(role, settings) for role in driver.roles()}
    try:
        if keys.get("require_diverse"):
            refuse_one_family(specs, '"require_diverse"', 'the "members", "agent" or "agents" key')
        agents = resolve_agents(driver.roles(), choice, settings, policy)
        given = {name: value for name, value in budgets.items() if value is not None}
        limits = limits_from(settings, **{"repairs": keys.get("repairs"), **given})
        if limits.max_cost_usd is not None:
            require_prices(agents, choice, settings)
    except UserError:
        remove_record(driver.record_path, stop_at=root)
        raise
    return Prepared(driver, agents, limits, specs)


def _allowed(specs: Iterable[str], policy: AgentPolicy | None) -> None:
    """Refuse, before anything is read or written, a spec that ``policy`` (a door serving clients) does not allow."""
    if policy is None:
        return
    try:
        for named in specs:
            admit(named, policy)
    except AgentError as refused:
        raise UserError(f"{refused}.") from None


def _resumed(
    driver: Driver,
    root: Path,
    policy: AgentPolicy | None,
    agent: Mapping[str, str],
    agents: str | None,
    budgets: Mapping[str, float | int | None],
) -> Prepared:
    """What :meth:`Runner.resume` does before the probe: the agents (the record's own unless named) and limits."""
    settings = load_settings(root)
    per_role = dict(agent) if agents is not None else {**stored_agents(driver.record_path), **agent}
    choice = AgentChoice.for_driver(driver, per_role, agents)
    agents_by_role = resolve_agents(driver.roles(), choice, settings, policy)
    given = {name: value for name, value in budgets.items() if value is not None}
    limits = limits_from(settings, **given)
    if limits.max_cost_usd is not None:
        require_prices(agents_by_role, choice, settings)
    specs = {role: choice.spec_for(role, settings) for role in driver.roles()}
    return Prepared(driver, agents_by_role, limits, specs)


class RunState(StrEnum):
    running = "running"
    ended = "ended"  # the protocol reached its outcome
    halted = "halted"  # the engine stopped it without one: an agent failed, repairs or a budget ran out
    cancelled = "cancelled"  # cancel_debate (or the server shutting down) stopped it
    failed = "failed"  # an internal error; the message says which


@dataclass
class DebateRun:
    """One debate this process runs or ran. Its counters follow the engine's events as turns land."""

    id: str
    protocol: str
    record_path: Path
    driver: Driver
    started_at: str
    session: str | None = None  # the client that started it (an MCP connection), for the per-session cap
    state: RunState = RunState.running
    result: RunResult | None = None
    error: str | None = None
    turns_this_run: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    last_event: str | None = None
    version: int = 0  # counts the news (turns, halts, the end), so that a waiter misses none
    task: asyncio.Task[None] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def active(self) -> bool:
        return self.state is RunState.running

    def on_event(self, event: Event) -> None:
        """The engine's subscriber: count what landed and wake whoever waits for news."""
        if event.type == "attempt":
            self.prompt_tokens += int(event.data.get("prompt_tokens") or 0)
            self.completion_tokens += int(event.data.get("completion_tokens") or 0)
        elif event.type == "turn_accepted":
            self.turns_this_run += 1
            self.last_event = f"turn {event.data.get('turn')} by {event.role} accepted"
        elif event.type == "halted":
            self.last_event = f"halted: {event.data.get('reason')}"
        else:
            return
        self._notify()

    def _notify(self) -> None:
        self.version += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def next_change(self, seen: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for news after ``version`` ``seen``; False when nothing happened."""
        if self.version > seen:
            return True
        if not self.active:
            return False
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def finish(self, state: RunState, *, result: RunResult | None = None, error: str | None = None) -> None:
        self.state, self.result, self.error = state, result, error
        self._notify()


class Runner:
    """The debates of one work root that this process runs, by id (see the module docstring)."""

    def __init__(self, root: Path, policy: AgentPolicy | None = None) -> None:
        self.root = root.resolve()
        self.policy = policy  # what the agent specs of a client's debate may reach (None: the operator's own)
        self._runs: dict[str, DebateRun] = {}
        self._starting: Counter[str | None] = Counter()  # admitted starts still being prepared, per session
        self._creating = asyncio.Lock()  # held while a record is created or set aside (see _prepare)
        self._pending: set[Path] = set()  # records created here whose agents are being probed

    def id_of(self, record: Path) -> str:
        return record.resolve().relative_to(self.root).as_posix()

    def get(self, debate_id: str) -> DebateRun | None:
        return self._runs.get(debate_id)

    def runs(self) -> list[DebateRun]:
        return list(self._runs.values())

    async def start(
        self,
        spec: Mapping[str, Any],
        *,
        session: str | None = None,
        force: bool = False,
        under: str | None = None,
        **budgets: float | int | None,
    ) -> DebateRun:
        """Start the debate ``spec`` describes for ``session`` and return at once; it runs on in this event loop.

        An existing record of the same name is replaced only with ``force``, and never while it runs here. A start
        past the server's or the session's cap on running debates is refused before anything is prepared. With
        ``under`` (a new folder's path in the work root) the record is kept there, under this root's settings.
        """
        self._admit(session, load_settings(self.root))
        self._starting[session] += 1
        try:
            prepared = await self._prepare(spec, force, budgets, under)
        finally:
            self._starting[session] -= 1
        return self._launch(prepared, session)

    async def resume(
        self,
        record: Path,
        load: Callable[[Path], Driver],
        *,
        session: str | None = None,
        agent: Mapping[str, str] | None = None,
        agents: str | None = None,
        **budgets: float | int | None,
    ) -> DebateRun:
        """Continue the interrupted debate at ``record`` (read back by ``load``, which may repair what a crash
        left), as ``moot resume`` does: with the agent specs its runs used unless ``agent``/``agents`` name
        others, every one of them under this runner's policy, within the same caps on running debates as a start.

        The specs the record's runs used and the ones given are checked before ``load`` touches the record."""
        running = self.get(self.id_of(record))
        if running is not None and running.active:
            raise UserError(f"{running.id} is running in this server; wait for it with debate_status.")
        agent = agent or {}
        _allowed([*([agents] if agents else stored_agents(record).values()), *agent.values()], self.policy)
        self._admit(session, load_settings(self.root))
        self._starting[session] += 1
        try:
            driver = await asyncio.to_thread(load, record)
            prepared = await asyncio.to_thread(_resumed, driver, self.root, self.policy, agent, agents, budgets)
            await probe_agents(prepared.agents)
        finally:
            self._starting[session] -= 1
        return self._launch(prepared, session)

    def _launch(self, prepared: Prepared, session: str | None) -> DebateRun:
        """Run ``prepared`` as a task of this event loop, known by its record's id from now on."""
        driver = prepared.driver
        run = DebateRun(
            id=self.id_of(driver.record_path),
            protocol=driver.protocol,
            record_path=driver.record_path,
            driver=driver,
            started_at=now_minutes(),
            session=session,
        )
        self._runs[run.id] = run
        run.task = asyncio.create_task(self._run(run, prepared), name=f"moot debate {run.id}")
        return run

    def _admit(self, session: str | None, settings: Settings) -> None:
        """Refuse a start that would pass the server's or ``session``'s cap (running and starting debates)."""
        running = [run.session for run in self._runs.values() if run.active]
        if len(running) + self._starting.total() >= settings.max_running_debates:
            raise RunnerBusy(
                f"this server already runs {settings.max_running_debates} debate(s), its limit "
                "(max_running_debates in moot.toml); wait for one to end or stop one with cancel_debate, then "
                "start again."
            )
        if running.count(session) + self._starting[session] >= settings.max_running_debates_per_session:
            raise RunnerBusy(
                f"this client already runs {settings.max_running_debates_per_session} debate(s), the limit per "
                "session (max_running_debates_per_session in moot.toml); wait for one to end or stop one with "
                "cancel_debate, then start again."
            )

    async def _prepare(
        self, spec: Mapping[str, Any], force: bool, budgets: Mapping[str, float | int | None], under: str | None
    ) -> Prepared:
        if under is not None:
            root = self.root / under
            root.mkdir(parents=True)
            try:
                return await prepare(
                    spec, root, now_minutes(), policy=self.policy, settings_root=self.root, budgets=budgets
                )
            except BaseException:
                remove_record(root, stop_at=self.root)
                raise
        # Records are created (and a --force start's old one set aside) one at a time, and a record stays known
        # as starting until its run is launched: two clients starting the same debate at once can then neither
        # set aside nor delete the record the other has just created.
        async with self._creating:
            prepared, aside = await self._create(spec, force, budgets)
            path = prepared.driver.record_path
            self._pending.add(path)
        try:
            await probe_agents(prepared.agents)
        except BaseException as exc:
            async with self._creating:  # no other start creates the record between the removal and the restore
                await asyncio.to_thread(remove_record, path, stop_at=self.root)
                if aside is not None:  # the failed start leaves the old debate as it was
                    await asyncio.to_thread(aside.restore, exc)
            raise
        finally:
            self._pending.discard(path)  # the caller launches the run before it next yields
        if aside is not None:
            await asyncio.to_thread(aside.discard)
        return prepared

    async def _create(
        self, spec: Mapping[str, Any], force: bool, budgets: Mapping[str, float | int | None]
    ) -> tuple[Prepared, SetAside | None]:
        """The new record, and the old one a forced start set aside for it; called holding ``_creating``."""
        try:
            return await create(spec, self.root, now_minutes(), policy=self.policy, budgets=budgets), None
        except RecordExists as exists:
            running = self.get(self.id_of(exists.path))
            if running is not None and running.active:
                raise UserError(
                    f"{exists.path} is a debate running here ({running.id}); wait for it or cancel it first."
                ) from None
            if exists.path in self._pending:
                raise UserError(
                    f"{exists.path} is a debate another start is creating here; wait for it to start, then cancel it or start yours afresh."
                ) from None
            if not force:
                raise RecordExists(exists.path, f"{exists} To start it afresh, pass force: true.") from None
            aside = await asyncio.to_thread(SetAside, exists.path)
            try:
                prepared = await create(spec, self.root, now_minutes(), policy=self.policy, budgets=budgets)
            except BaseException as exc:
                await asyncio.to_thread(aside.restore, exc)
                raise
            aside.claim(prepared.driver.record_path)
            return prepared, aside

    async def _run(self, run: DebateRun, prepared: Prepared) -> None:
        try:
            result = await run_driver(
                prepared.driver, prepared.agents, prepared.limits, (run.on_event,), prepared.specs
            )
        except asyncio.CancelledError:
            run.finish(RunState.cancelled)
            raise
        except Exception as exc:  # a full disk, or a defect below: the run says so instead of dying silently
            fault = DiskFault.of(exc)
            if fault is not None:  # every accepted turn is durable: once the disk is fixed, the run resumes
                run.finish(RunState.failed, error=str(fault.then_do(f"call resume_debate with debate_id {run.id!r}")))
            else:
                run.finish(RunState.failed, error=f"{type(exc).__name__}: {exc}")
            return
        halted = run.last_event is not None and run.last_event.startswith("halted")
        run.finish(RunState.halted if halted else RunState.ended, result=result)

    async def cancel(self, debate_id: str, reason: str = CANCELLED_REASON) -> DebateRun:
        """Stop a running debate: every accepted turn is already durable, and the engine records where it stopped
        and ``reason``."""
        run = self._runs.get(debate_id)
        if run is None:
            raise UserError(f"no debate {debate_id!r} runs in this server; list_debates names the ones that do.")
        if run.active and run.task is not None:
            run.task.cancel(reason)
            await asyncio.wait([run.task])
        return run

    async def close(self) -> None:
        """Cancel every debate still running (the server is stopping), each recording where it stopped."""
        for run in self.runs():
            if run.active:
                await self.cancel(run.id, STOPPED_REASON)

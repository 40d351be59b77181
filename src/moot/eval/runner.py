"""Running an eval: every strategy on every task and replicate, each call recorded as it returns, resumable.

Tasks run ``concurrency`` at a time and so do calls (the calls of one sealed round are sent together).
Each call carries its own seed, derived from the run's seed and where the call stands, so samples differ
from each other and a rerun asks each call the same way.

A failed call is kept with its cost and the reason. An infrastructure failure (a timeout, a server that
answered with a transient error) leaves its task unfinished: missing data, not a wrong answer. A reply the
model spoilt (empty, unusable) is an unreadable answer. Either way the call is asked again when the eval is
run again. An agent that cannot be reached at all stops the eval: the user must fix it.

Protocol strategies run the registered protocol's own driver through moot's engine (:mod:`moot.engine`),
as ``moot run`` does, with the protocol's options built from data (:mod:`moot.engine.specs`); the answer
and the rounds are read from the record through the protocol's ``Analysis`` (:mod:`moot.plugin`).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from moot import registry
from moot.agents import Agent, AgentReply, AgentRequest
from moot.agents.base import prompt_as_text
from moot.engine.loop import Limits, now_minutes
from moot.engine.session import run_driver
from moot.engine.specs import build_driver
from moot.errors import AgentError, AgentTimeout, AgentUnavailable, TaskUnfinished, UserError
from moot.eval.costs import Cost, estimate, total
from moot.eval.store import Store
from moot.eval.strategies import Strategy, debate_prompt, first_prompt, majority
from moot.eval.tasks import Extractor, Task
from moot.plugin import Analysis, Held

INFRASTRUCTURE, MODEL, UNAVAILABLE = "infrastructure", "model", "unavailable"
REPAIRS = 2  # a protocol turn's repairs, as `moot run` allows by default


@dataclass(frozen=True)
class Sampling:
    temperature: float
    max_tokens: int
    timeout_s: float
    seed: int


def failure_kind(exc: BaseException) -> str:
    """Whose failure a failed call is: the infrastructure's (retried, missing data) or the model's (unreadable)."""
    if isinstance(exc, AgentTimeout | TimeoutError) or getattr(exc, "retryable", False):
        return INFRASTRUCTURE
    return MODEL


def analysis_of(name: str) -> Analysis:
    """The protocol's analysis, which must say how to pose a question and read the answer."""
    plugin = registry.get(name)
    analysis = plugin.analysis.load() if plugin.analysis is not None else None
    if analysis is None or analysis.answer is None or analysis.pose is None:
        raise UserError(
            f"the protocol {name} cannot be evaluated: it gives no answer to a question (its Analysis has no "
            "answer or pose); choose another protocol."
        )
    return analysis


class Runner:
    def __init__(
        self,
        tasks: Sequence[Task],
        read: Extractor,
        agents: Mapping[str, Agent],  # name -> agent, in the order given; the first answers single and sc
        specs: Mapping[str, str],  # name -> agent spec
        sampling: Sampling,
        store: Store,
        work: Path,  # where protocol records are written
        replicates: int = 1,
        concurrency: int = 1,
        on_task_done: Callable[[], None] = lambda: None,
    ) -> None:
        self.tasks = list(tasks)
        self.read = read
        self.agents = dict(agents)
        self.specs = dict(specs)
        self.names = list(agents)
        self.sampling = sampling
        self.store = store
        self.work = work
        self.replicates = replicates
        self.task_slots = asyncio.Semaphore(concurrency)
        self.call_slots = asyncio.Semaphore(concurrency)
        self.on_task_done = on_task_done
        self.missing: dict[tuple[str, str, int], str] = {}  # tasks left unfinished this run, and why

    def pending(self, strategy: Strategy) -> list[tuple[Task, int]]:
        """The (task, replicate) pairs not yet finished, finished with a failed call to ask again, or (sc:match)
        finished with openings that its deliberation has since replaced."""
        found = []
        for replicate in range(1, self.replicates + 1):
            for task in self.tasks:
                record = self.store.tasks.get((strategy.name, task.id, replicate))
                if record is None or record.get("failed_calls") or self._stale(strategy, record):
                    found.append((task, replicate))
        return found

    def _stale(self, strategy: Strategy, record: Mapping[str, Any]) -> bool:
        """Whether a sc:match task shares openings that are no longer its deliberation's (a failed opening asked
        again, a protocol run started afresh): its samples must be counted again."""
        if strategy.kind != "match" or strategy.target is None:
            return False
        deliberation = self.store.tasks.get((strategy.target, record["task"], record["replicate"]))
        if deliberation is None:
            return False
        shared: list[str | None] = record.get("samples", [])[: record.get("shared", 0)]
        return shared != _openings(deliberation)

    async def run(self, strategy: Strategy) -> None:
        await self.run_items([(strategy, task, replicate) for task, replicate in self.pending(strategy)])

    async def run_items(self, items: Sequence[tuple[Strategy, Task, int]]) -> None:
        """Run these (strategy, task, replicate) items, ``concurrency`` at a time."""
        try:
            async with asyncio.TaskGroup() as group:
                for strategy, task, replicate in items:
                    group.create_task(self._guarded(strategy, task, replicate))
        except ExceptionGroup as failed:  # the first failure (an unavailable agent) cancelled the others
            raise failed.exceptions[0] from None

    async def aclose(self) -> None:
        """Close every agent once (several names may share one)."""
        for agent in {id(a): a for a in self.agents.values()}.values():
            await agent.aclose()

    async def _guarded(self, strategy: Strategy, task: Task, replicate: int) -> None:
        async with self.task_slots:
            try:
                await self.run_task(strategy, task, replicate)
            except TaskUnfinished as missing:
                self.missing[(strategy.name, task.id, replicate)] = str(missing)
        self.on_task_done()

    def seed(self, *where: object) -> int:
        return zlib.crc32("/".join(str(part) for part in (self.sampling.seed, *where)).encode())

    # --- one task ---

    async def run_task(self, strategy: Strategy, task: Task, replicate: int) -> None:
        first = self.names[0]
        prompt = first_prompt(task.question, self.read.ask)
        extra: dict[str, Any] = {}
        if strategy.kind == "protocol":
            calls, answer, extra = await self._protocol(strategy, task, replicate)
        elif strategy.kind == "debate":
            calls, extra = await self._debate(strategy, task, replicate, prompt)
            answer = majority([held["answer"] for held in extra["rounds"][-1].values()])
        elif strategy.kind == "match":
            calls, extra = await self._matched(strategy, task, replicate, prompt)
            answer = majority(extra["samples"])
        else:
            who = [first] * strategy.samples if strategy.kind in ("single", "sc") else self.names
            keys = [f"s{i}" if strategy.kind != "vote" else f"v/{name}" for i, name in enumerate(who, start=1)]
            calls = list(
                await asyncio.gather(
                    *(
                        self._ask(strategy, task, replicate, key, name, prompt)
                        for key, name in zip(keys, who, strict=True)
                    )
                )
            )
            answer = majority([c["answer"] for c in calls])
            if strategy.kind == "sc":
                extra = {"k": strategy.samples, "samples": [c["answer"] for c in calls]}
        self._finish(strategy, task, replicate, calls, answer, extra)

    def _finish(
        self,
        strategy: Strategy,
        task: Task,
        replicate: int,
        calls: Sequence[Mapping[str, Any]],
        answer: str | None,
        extra: Mapping[str, Any],
    ) -> None:
        infrastructure = [c for c in calls if c.get("failure") == INFRASTRUCTURE]
        if infrastructure:
            raise TaskUnfinished(str(infrastructure[0]["error"]))
        cost = total(Cost.of(c) for c in calls)
        record: dict[str, Any] = {
            "kind": "task",
            "strategy": strategy.name,
            "task": task.id,
            "replicate": replicate,
            "answer": answer,
            "correct": self.read.correct(answer, task.answer),
            "known": task.answer,
            **cost.to_json(),
            "wall_s": round(sum(c["latency_s"] for c in calls), 4),
            "truncated": sum(1 for c in calls if c.get("truncated")),
            "failed_calls": sum(1 for c in calls if c.get("error")),
            **extra,
        }
        self.store.append(record)

    async def _debate(
        self, strategy: Strategy, task: Task, replicate: int, prompt: str
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        agent_of = {f"a{i + 1}": self.names[i % len(self.names)] for i in range(strategy.agents)}
        debaters = list(agent_of)
        calls: list[dict[str, Any]] = []
        texts: dict[str, str] = {}
        rounds: list[dict[str, dict[str, Any]]] = []
        # A round whose recorded calls are reused shows the answers the next round was asked about; once a call
        # is asked again (it had failed), every later round must be asked again with what it now shows.
        fresh = False
        for number in range(strategy.rounds + 1):
            prompts = {
                d: prompt
                if number == 0
                else debate_prompt(task.question, self.read.ask, texts[d], [texts[o] for o in debaters if o != d])
                for d in debaters
            }
            keys = {d: f"r{number}/{d}" for d in debaters}
            asks_again = fresh or any(not self._recorded(strategy, task, replicate, k) for k in keys.values())
            answered = await asyncio.gather(
                *(
                    self._ask(strategy, task, replicate, keys[d], agent_of[d], prompts[d], reuse=not fresh)
                    for d in debaters
                )
            )
            fresh = asks_again
            calls.extend(answered)
            texts = {d: c["text"] for d, c in zip(debaters, answered, strict=True)}
            rounds.append({d: {"answer": c["answer"], "among": None} for d, c in zip(debaters, answered, strict=True)})
        opening = total(Cost.of(c) for c in calls[: len(debaters)])
        return calls, {"rounds": rounds, "panel": agent_of, "opening": opening.to_json()}

    async def _matched(
        self, strategy: Strategy, task: Task, replicate: int, prompt: str
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Self-consistency sharing the deliberation's openings: its round-0 answers, then fresh samples."""
        assert strategy.target is not None
        deliberation = self.store.tasks.get((strategy.target, task.id, replicate))
        if deliberation is None:
            raise TaskUnfinished(f"{strategy.target} did not finish this task")
        openings = deliberation["rounds"][0] if deliberation.get("rounds") else {}
        shared = _openings(deliberation)
        panel = [deliberation["panel"][p] for p in openings] or [self.names[0]]
        fresh = range(len(shared) + 1, strategy.samples + 1)
        calls = list(
            await asyncio.gather(
                *(self._ask(strategy, task, replicate, f"s{i}", panel[(i - 1) % len(panel)], prompt) for i in fresh)
            )
        )
        shared_call = {**deliberation["opening"], "latency_s": 0.0, "answer": None}
        extra = {"k": strategy.samples, "shared": len(shared), "samples": shared + [c["answer"] for c in calls]}
        return [shared_call, *calls], extra

    def _recorded(self, strategy: Strategy, task: Task, replicate: int, key: str) -> dict[str, Any] | None:
        """The call's recorded answer, unless it failed (a failed call is asked again)."""
        recorded = self.store.calls.get((strategy.name, task.id, replicate, key))
        return recorded if recorded is not None and not recorded.get("error") else None

    async def _ask(
        self, strategy: Strategy, task: Task, replicate: int, key: str, name: str, prompt: str, reuse: bool = True
    ) -> dict[str, Any]:
        recorded = self._recorded(strategy, task, replicate, key) if reuse else None
        if recorded is not None:
            return recorded
        request = AgentRequest(
            prompt=prompt,
            max_tokens=self.sampling.max_tokens,
            temperature=self.sampling.temperature,
            timeout_s=self.sampling.timeout_s,
            role=name,
            protocol="eval",
            seed=self.seed(strategy.name, task.id, replicate, key),
        )
        where = {"kind": "call", "strategy": strategy.name, "task": task.id, "replicate": replicate, "call": key}
        async with self.call_slots:
            return await call(self.agents[name], request, self.read, name, where, self.store)

    # --- protocol strategies ---

    def panel(self, strategy: Strategy) -> list[tuple[str, str]]:
        """(participant, agent name) for each of the strategy's members: the named agents in turn, each name used
        once as it is and then numbered (``local``, ``local2``, …)."""
        seen: dict[str, int] = {}
        members = []
        for index in range(strategy.agents):
            name = self.names[index % len(self.names)]
            seen[name] = seen.get(name, 0) + 1
            members.append((name if seen[name] == 1 else f"{name}{seen[name]}", name))
        return members

    def _start(self, strategy: Strategy, task: Task, replicate: int, attempt: int) -> Path:
        """Start the protocol's record of this task (as ``moot run --batch`` would start it) and note where."""
        assert strategy.protocol is not None
        analysis = analysis_of(strategy.protocol)
        assert analysis.pose is not None
        panel = self.panel(strategy)
        question = first_prompt(task.question, self.read.ask)
        spec: dict[str, Any] = {
            "protocol": strategy.protocol,
            **analysis.pose(question, [(member, self.specs[agent]) for member, agent in panel]),
            **strategy.options,
        }
        options_type = registry.get(strategy.protocol).driver.load().options_type
        if "seed" in {f.name for f in fields(options_type)} and "seed" not in spec:
            spec["seed"] = self.seed(strategy.name, task.id, replicate, attempt)
        agent_of = dict(panel)
        root = self.work / _slug(strategy.name) / f"{_slug(task.id)}-r{replicate}-a{attempt}"
        driver = build_driver(spec, root, now_minutes(), lambda role: self.specs[agent_of.get(role, self.names[0])])
        self.store.append(
            {
                "kind": "run",
                "strategy": strategy.name,
                "task": task.id,
                "replicate": replicate,
                "attempt": attempt,
                "record": str(driver.record_path),
                "panel": agent_of,
            }
        )
        return driver.record_path

    async def _protocol(
        self, strategy: Strategy, task: Task, replicate: int
    ) -> tuple[list[dict[str, Any]], str | None, dict[str, Any]]:
        assert strategy.protocol is not None
        plugin = registry.get(strategy.protocol)
        analysis = analysis_of(strategy.protocol)
        assert analysis.answer is not None
        run = self.store.runs.get((strategy.name, task.id, replicate))
        if run is None or run.get("abandoned") or not Path(run["record"]).exists():
            attempt = (run["attempt"] + 1) if run else 1
            path = await asyncio.to_thread(self._start, strategy, task, replicate, attempt)
            run = self.store.runs[(strategy.name, task.id, replicate)]
        attempt, path, agent_of = run["attempt"], Path(run["record"]), run["panel"]
        driver = plugin.driver.load().resume(path)
        prefix = f"a{attempt}/"
        if driver.outcome() is None:
            recorded = len(self.store.calls_of(strategy.name, task.id, replicate, prefix))
            counter = itertools.count(recorded + 1)
            where = {"kind": "call", "strategy": strategy.name, "task": task.id, "replicate": replicate}
            agents: dict[str, Agent] = {
                role: Metered(self, agent_of.get(role, self.names[0]), where, prefix, counter)
                for role in driver.roles()
            }
            await run_driver(driver, agents, Limits(repairs=REPAIRS, turn_timeout_s=self.sampling.timeout_s))
        calls = self.store.calls_of(strategy.name, task.id, replicate, prefix)
        if any(c.get("error") for c in calls):  # the next run starts this task afresh
            self.store.append({**run, "abandoned": True})
        unavailable = next((c for c in calls if c.get("failure") == UNAVAILABLE), None)
        if unavailable is not None:
            raise UserError(f"agent {unavailable['agent']} is unavailable: {unavailable['error']}")
        text = analysis.answer(path)
        held = analysis.rounds(path) if analysis.rounds is not None else []
        extra = {
            "record": str(path),
            "outcome": getattr(driver.outcome(), "name", None),
            "rounds": [self._held(round_) for round_ in held],
            "panel": {**agent_of, **{p: self.names[0] for r in held for p in r if p not in agent_of}},
            "opening": _opening(calls, agent_of).to_json(),
        }
        return calls, (self.read.read(text) if text else None), extra

    def _held(self, round_: Mapping[str, Held]) -> dict[str, dict[str, Any]]:
        """A round of the record as answers read with the task's extractor."""
        read = self.read.read
        return {
            who: {
                "answer": read(held.text) if held.text else None,
                "among": None if held.among is None else [read(text) for text in held.among],
            }
            for who, held in round_.items()
        }


def _openings(deliberation: Mapping[str, Any]) -> list[str | None]:
    """A deliberation task's round-0 answers, the first samples of its matched self-consistency."""
    rounds = deliberation.get("rounds") or [{}]
    return [held["answer"] for held in rounds[0].values()]


def _opening(calls: Sequence[Mapping[str, Any]], agent_of: Mapping[str, str]) -> Cost:
    """What a protocol's openings cost: each participant's first call."""
    first: dict[str, Mapping[str, Any]] = {}
    for c in calls:
        if c.get("role") in agent_of:
            first.setdefault(c["role"], c)
    return total(Cost.of(c) for c in first.values())


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


async def call(
    agent: Agent, request: AgentRequest, read: Extractor, name: str, where: Mapping[str, Any], store: Store
) -> dict[str, Any]:
    """Ask ``agent``, record the call (its cost, its answer or why it failed), and return the record."""
    record: dict[str, Any] = {**where, "agent": name, "role": request.role}
    try:
        reply = await agent.reply(request)
    except (AgentError, TimeoutError) as exc:
        prompt = estimate(prompt_as_text(request))
        record.update(
            text="",
            answer=None,
            error=str(exc) or type(exc).__name__,
            failure=UNAVAILABLE if isinstance(exc, AgentUnavailable) else failure_kind(exc),
            **Cost(1, prompt, 0, agent.price_usd(prompt, 0), True).to_json(),
            latency_s=0.0,
            model=None,
        )
        store.append(record)
        if isinstance(exc, AgentUnavailable):  # a protocol's engine halts on it; the eval stops after the run
            raise UserError(f"agent {name} is unavailable: {exc}") from exc
        return record
    record.update(text=reply.text, answer=read.read(reply.text), **_cost(agent, request, reply).to_json())
    record.update(
        latency_s=round(reply.latency_s, 4),
        model=reply.model,
        finish_reason=reply.finish_reason,
        truncated=reply.finish_reason == "length",
    )
    store.append(record)
    return record


def _cost(agent: Agent, request: AgentRequest, reply: AgentReply) -> Cost:
    if reply.prompt_tokens or reply.completion_tokens:
        return Cost(1, reply.prompt_tokens, reply.completion_tokens, agent.reply_cost(reply)[0], False)
    prompt, completion = estimate(prompt_as_text(request)), estimate(reply.text)
    return Cost(1, prompt, completion, agent.price_usd(prompt, completion), True)


class Metered(Agent):
    """An agent of a protocol run whose every call is recorded in the eval's store, with its own seed.

    Closing it (the engine closes its agents when a run ends) leaves the shared agent open for the next task.
    """

    name = "metered"

    def __init__(
        self, runner: Runner, agent_name: str, where: Mapping[str, Any], prefix: str, counter: Iterator[int]
    ) -> None:
        self.runner = runner
        self.agent_name = agent_name
        self.inner = runner.agents[agent_name]
        self.where = where
        self.prefix = prefix
        self.counter = counter

    def bounds(self) -> Any:
        return self.inner.bounds()

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        return self.inner.price_usd(
            prompt_tokens, completion_tokens, cached_tokens=cached_tokens, cache_write_tokens=cache_write_tokens
        )

    async def reply(self, request: AgentRequest) -> AgentReply:
        key = f"{self.prefix}{next(self.counter):04d}"
        where = {**self.where, "call": key}
        if request.seed is None:
            request = request.model_copy(update={"seed": self.runner.seed(*where.values())})
        async with self.runner.call_slots:
            record = await call(self.inner, request, self.runner.read, self.agent_name, where, self.runner.store)
        if record.get("error"):
            raise AgentError(record["error"])
        return AgentReply(
            text=record["text"],
            prompt_tokens=0 if record["estimated"] else record["prompt_tokens"],
            completion_tokens=0 if record["estimated"] else record["completion_tokens"],
            latency_s=record["latency_s"],
            model=record["model"] or "unknown",
            finish_reason=record.get("finish_reason"),
        )

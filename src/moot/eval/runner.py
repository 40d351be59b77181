"""Running an eval: every strategy on every task, each call recorded as it returns, resumable.

Tasks run ``concurrency`` at a time and so do calls (the calls of one sealed round are sent together).
Each call carries its own seed, derived from the run's seed and where the call stands, so samples
differ from each other and a rerun asks each call the same way.
"""

from __future__ import annotations

import asyncio
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from moot.agents import Agent, AgentError, AgentRequest, AgentUnavailable
from moot.errors import UserError
from moot.eval.store import Store
from moot.eval.strategies import (
    Strategy,
    debate_prompt,
    first_prompt,
    majority,
    read_ranking,
    review_prompt,
    synthesis_prompt,
)
from moot.eval.tasks import Extractor, Task
from moot.protocols.council.machine import (
    Answer,
    CouncilConfig,
    CouncilState,
    Member,
    Review,
    borda,
    kendall_w,
    label,
    review_order,
    rounded_w,
)

CHARS_PER_TOKEN = 4  # the estimate for backends that report no usage (commands, scripts)


@dataclass(frozen=True)
class Sampling:
    temperature: float
    max_tokens: int
    timeout_s: float
    seed: int


class Runner:
    def __init__(
        self,
        tasks: Sequence[Task],
        read: Extractor,
        agents: Mapping[str, Agent],  # name -> agent, in the order given; the first answers single and sc
        sampling: Sampling,
        store: Store,
        concurrency: int = 1,
        on_task_done: Callable[[], None] = lambda: None,
    ) -> None:
        self.tasks = list(tasks)
        self.read = read
        self.agents = dict(agents)
        self.names = list(agents)
        self.sampling = sampling
        self.store = store
        self.task_slots = asyncio.Semaphore(concurrency)
        self.call_slots = asyncio.Semaphore(concurrency)
        self.on_task_done = on_task_done

    def pending(self, strategy: Strategy) -> list[Task]:
        return [task for task in self.tasks if (strategy.name, task.id) not in self.store.tasks]

    async def run(self, strategy: Strategy) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                for task in self.pending(strategy):
                    group.create_task(self._guarded(strategy, task))
        except ExceptionGroup as failed:  # the first failure (an unavailable agent) cancelled the others
            raise failed.exceptions[0] from None

    async def _guarded(self, strategy: Strategy, task: Task) -> None:
        async with self.task_slots:
            await self.run_task(strategy, task)
        self.on_task_done()

    # --- one task ---

    async def run_task(self, strategy: Strategy, task: Task) -> None:
        first = self.names[0]
        prompt = first_prompt(task.question, self.read.ask)
        rounds: list[dict[str, str | None]] | None = None
        council: dict[str, Any] | None = None
        if strategy.kind == "single":
            calls = [await self._ask(strategy, task, "s1", first, prompt)]
            answer = calls[0]["answer"]
        elif strategy.kind == "sc":
            keys = [f"s{i}" for i in range(1, strategy.samples + 1)]
            calls = list(await asyncio.gather(*(self._ask(strategy, task, key, first, prompt) for key in keys)))
            answer = majority([c["answer"] for c in calls])
        elif strategy.kind == "vote":
            calls = list(
                await asyncio.gather(*(self._ask(strategy, task, f"v/{name}", name, prompt) for name in self.names))
            )
            answer = majority([c["answer"] for c in calls])
        elif strategy.kind == "council":
            calls, council = await self._council(strategy, task, prompt)
            answer = council["synthesis"]
        else:
            calls, rounds = await self._debate(strategy, task, prompt)
            answer = majority(list(rounds[-1].values()))
        record: dict[str, Any] = {
            "kind": "task",
            "strategy": strategy.name,
            "task": task.id,
            "answer": answer,
            "correct": self.read.correct(answer, task.answer),
            "known": task.answer,
            "tokens": sum(c["tokens"] for c in calls),
            "tokens_estimated": any(c["estimated"] for c in calls),
            "wall_s": sum(c["latency_s"] for c in calls),
            "calls": len(calls),
        }
        if rounds is not None:
            record["rounds"] = rounds
        if council is not None:
            record["council"] = council
        if strategy.kind == "sc":
            record["k"] = strategy.samples
        self.store.append(record)

    async def _debate(
        self, strategy: Strategy, task: Task, prompt: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, str | None]]]:
        agent_of = self._agent_of(strategy, "a")
        debaters = list(agent_of)
        calls: list[dict[str, Any]] = []
        texts: dict[str, str] = {}
        rounds: list[dict[str, str | None]] = []
        for number in range(strategy.rounds + 1):
            prompts = {
                d: prompt
                if number == 0
                else debate_prompt(task.question, self.read.ask, texts[d], [texts[o] for o in debaters if o != d])
                for d in debaters
            }
            answered = await asyncio.gather(
                *(self._ask(strategy, task, f"r{number}/{d}", agent_of[d], prompts[d]) for d in debaters)
            )
            calls.extend(answered)
            texts = {d: c["text"] for d, c in zip(debaters, answered, strict=True)}
            rounds.append({d: c["answer"] for d, c in zip(debaters, answered, strict=True)})
        return calls, rounds

    def _agent_of(self, strategy: Strategy, prefix: str) -> dict[str, str]:
        """The strategy's N participants (prefix1, prefix2, …), each answering with a named agent in turn."""
        return {f"{prefix}{i + 1}": self.names[i % len(self.names)] for i in range(strategy.agents)}

    async def _council(
        self, strategy: Strategy, task: Task, prompt: str
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The Council on one task: sealed answers, anonymised reviews, the chairman (the first member).

        The rules that decide who is shown what, and the aggregate, are the protocol's own: the review
        order comes from :func:`review_order` with a seed drawn from the run's seed and the task, and
        the ranking and agreement are :func:`borda` and :func:`kendall_w`.
        """
        agent_of = self._agent_of(strategy, "m")
        members = list(agent_of)
        chairman = members[0]
        config = CouncilConfig(
            question=task.question,
            members=tuple(Member(name=m, model=agent_of[m]) for m in members),
            chairman=chairman,
            seed=zlib.crc32(f"{self.sampling.seed}/{strategy.name}/{task.id}".encode()),
        )
        stage1 = await asyncio.gather(*(self._ask(strategy, task, f"c1/{m}", agent_of[m], prompt) for m in members))
        calls = list(stage1)
        by_member = dict(zip(members, stage1, strict=True))
        answers = tuple(
            Answer(member=m, text=c["text"]) if c["answer"] is not None else Answer(member=m, failure="no answer")
            for m, c in by_member.items()
        )
        state = CouncilState(answers=answers)
        answered = [a.member for a in state.valid_answers()]
        result: dict[str, Any] = {
            "chairman": chairman,
            "answers": {m: c["answer"] for m, c in by_member.items()},
            "reviews": {},
            "ranking": [],
            "agreement": None,
            "synthesis": None,
        }
        if len(answered) < 2:  # no quorum: the council ends without a synthesis
            return calls, result
        shown = {m: review_order(config.seed, m, answered) for m in answered}
        stage2 = await asyncio.gather(
            *(
                self._ask(
                    strategy,
                    task,
                    f"c2/{m}",
                    agent_of[m],
                    review_prompt(task.question, [by_member[o]["text"] for o in shown[m]]),
                )
                for m in answered
            )
        )
        calls.extend(stage2)
        reviews = []
        for m, call in zip(answered, stage2, strict=True):
            order = read_ranking(call["text"], len(shown[m]))
            if order is None:
                reviews.append(Review(reviewer=m, shown=tuple(shown[m]), failure="no readable ranking"))
                result["reviews"][m] = None
            else:
                reviews.append(Review(reviewer=m, shown=tuple(shown[m]), ranking=tuple(label(i) for i in order)))
                result["reviews"][m] = [shown[m][i] for i in order]
        state = CouncilState(answers=answers, reviews=tuple(reviews))
        ranking = borda(config, state)
        agreement = rounded_w(kendall_w(state))
        result["ranking"] = [list(item) for item in ranking]
        result["agreement"] = agreement
        final = synthesis_prompt(
            task.question,
            self.read.ask,
            [(m, by_member[m]["text"]) for m in answered],
            [(m, order) for m, order in result["reviews"].items() if order is not None],
            ranking,
            "not measurable" if agreement is None else f"{agreement:.3f}",
        )
        synthesis = await self._ask(strategy, task, f"c3/{chairman}", agent_of[chairman], final)
        calls.append(synthesis)
        result["synthesis"] = synthesis["answer"]
        return calls, result

    async def _ask(self, strategy: Strategy, task: Task, key: str, name: str, prompt: str) -> dict[str, Any]:
        recorded = self.store.calls.get((strategy.name, task.id, key))
        if recorded is not None:
            return recorded
        seed = zlib.crc32(f"{self.sampling.seed}/{strategy.name}/{task.id}/{key}".encode())
        request = AgentRequest(
            prompt=prompt,
            max_tokens=self.sampling.max_tokens,
            temperature=self.sampling.temperature,
            timeout_s=self.sampling.timeout_s,
            role=name,
            protocol="eval",
            seed=seed,
        )
        record: dict[str, Any] = {"kind": "call", "strategy": strategy.name, "task": task.id, "call": key}
        async with self.call_slots:
            try:
                reply = await self.agents[name].reply(request)
            except AgentUnavailable as exc:
                raise UserError(f"agent {name} is unavailable: {exc}") from exc
            except AgentError as exc:
                record.update(text="", answer=None, error=str(exc), tokens=0, estimated=False, latency_s=0.0)
                self.store.append(record)
                return record
        tokens = reply.prompt_tokens + reply.completion_tokens
        estimated = tokens == 0
        if estimated:
            tokens = math.ceil((len(prompt) + len(reply.text)) / CHARS_PER_TOKEN)
        record.update(
            text=reply.text,
            answer=self.read.read(reply.text),
            tokens=tokens,
            estimated=estimated,
            latency_s=round(reply.latency_s, 4),
        )
        self.store.append(record)
        return record


def opening_calls(strategy: Strategy) -> list[str]:
    """The calls of a debate's or council's sealed first answers: the question alone, as single and sc ask it."""
    if strategy.kind == "council":
        return [f"c1/m{i}" for i in range(1, strategy.agents + 1)]
    return [f"r0/a{i}" for i in range(1, strategy.agents + 1)]


def matched_samples(store: Store, matched: Strategy, tasks: Sequence[Task]) -> int:
    """K for sc:match: the debate's or council's mean tokens per task over the mean tokens of one opening answer."""
    per_task: list[int] = [store.tasks[(matched.name, t.id)]["tokens"] for t in tasks]
    openings: list[int] = [
        store.calls[(matched.name, t.id, key)]["tokens"] for t in tasks for key in opening_calls(matched)
    ]
    one_answer = sum(openings) / len(openings)
    if one_answer <= 0:
        return 1
    return max(1, round(sum(per_task) / len(per_task) / one_answer))

"""What `moot eval` holds equal and what it asks again: the unit of cost matching, dollars, and stale answers.

In-process, with function agents standing in for paid models (their prices are what a paid API would charge).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from moot.agents import AgentReply, FunctionAgent
from moot.agents.base import AgentRequest
from moot.errors import AgentBadReply
from moot.eval.costs import Cost
from moot.eval.report import scaling_curve
from moot.eval.run import fit
from moot.eval.runner import Runner, Sampling, call
from moot.eval.store import Store
from moot.eval.strategies import matched, parse_strategy
from moot.eval.tasks import NUMBER, Task, arithmetic

TASKS = [Task("t1", "What is the result of 1+1?", "2"), Task("t2", "What is the result of 2+2?", "4")]


class Priced(FunctionAgent):
    """A function agent priced like a paid model: $3 per million prompt tokens, $10 per million completion tokens."""

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        return (prompt_tokens * 3 + completion_tokens * 10) / 1e6


PANEL = {"m1": "cheap", "m2": "dear", "m3": "dear"}


class Dear(Priced):
    """Four times the price: $4 per million prompt tokens, $16 per million completion tokens."""

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        return 4 * (super().price_usd(prompt_tokens, completion_tokens) or 0.0)


def _task(strategy: str, task: str, cost: Cost, **extra: Any) -> dict[str, Any]:
    return {"kind": "task", "strategy": strategy, "task": task, "replicate": 1, **cost.to_json(), **extra}


def _store_with_a_council(tmp_path: Path, usd: tuple[float | None, float | None, float | None]) -> Store:
    """A council of 3 that cost 7 calls, 2,000 prompt and 200 completion tokens per task, its openings 3 calls,
    600 and 60; a single answer 1 call, 100 and 20. ``usd``: the council's, its openings' and a single's price."""
    store = Store(tmp_path)
    store.open({})
    council, openings, single = usd
    for task in TASKS:
        rounds = [{"m1": {"answer": "2", "among": None}, "m2": {"answer": "3", "among": None}, "m3": {}}]
        opening = Cost(3, 600, 60, openings)
        store.append(_task("protocol:council", task.id, Cost(7, 2000, 200, council), opening=opening.to_json(),
                           rounds=rounds, panel=PANEL))  # fmt: skip
        store.append(_task("single", task.id, Cost(1, 100, 20, single)))
    return store


@pytest.mark.parametrize(
    ("requested", "usd", "measure", "k"),
    [
        # Dollars where every price is known: 3 openings + ($0.01 − $0.003) / $0.0005 = 3 + 14.
        (None, (0.01, 0.003, 0.0005), "usd", 17),
        # No price known (a command, a script) or nothing paid (a local model): completion tokens, 3 + 140 / 20.
        (None, (None, None, None), "completion", 10),
        (None, (0.0, 0.0, 0.0), "completion", 10),
        # Prompt and completion tokens counted alike only when asked for: 3 + 1,540 / 120.
        ("tokens", (0.01, 0.003, 0.0005), "tokens", 16),
        ("calls", (0.01, 0.003, 0.0005), "calls", 7),
        # Dollars asked for where a price is unknown cannot be matched: completion tokens instead.
        ("usd", (None, None, None), "completion", 10),
    ],
)
def test_k_is_fitted_in_dollars_where_prices_are_known_else_in_completion_tokens(
    tmp_path: Path, requested: str | None, usd: tuple[float | None, ...], measure: str, k: int
) -> None:
    store = _store_with_a_council(tmp_path, usd)  # type: ignore[arg-type]
    strategy = matched("protocol:council")
    assert fit(store, strategy, TASKS, 1, requested) == k
    assert (store.fits[strategy.name]["measure"], store.fits[strategy.name]["k"]) == (measure, k)
    # Frozen: a costlier council later does not change K, in this run or the next.
    store.append(_task("protocol:council", "t1", Cost(70, 20000, 2000, None), opening=Cost(3).to_json(), rounds=[]))
    assert fit(store, strategy, TASKS, 1, requested) == k
    reopened = Store(tmp_path)
    reopened.open({})
    assert fit(reopened, strategy, TASKS, 1, requested) == k


def test_further_samples_are_priced_at_the_agent_that_gives_them(tmp_path: Path) -> None:
    # A single answer (100 prompt and 20 completion tokens) costs $0.0005 at "cheap" and $0.002 at "dear". The
    # further samples go to the openings' agents in turn, cheap, dear, dear, cheap, dear: $0.007 after five.
    store = _store_with_a_council(tmp_path, (0.01, 0.003, 0.0005))
    agents = {"cheap": Priced(lambda r: ""), "dear": Dear(lambda r: "")}
    strategy = matched("protocol:council")
    assert fit(store, strategy, TASKS, 1, None, agents) == 8  # not 17, as if every sample cost the first's price
    assert store.fits[strategy.name]["fitted_cost"] == pytest.approx(0.01)


def test_a_call_costs_its_price_and_a_failed_one_what_was_sent(tmp_path: Path) -> None:
    def answer(request: AgentRequest) -> AgentReply:
        return AgentReply(text="Answer: 2", prompt_tokens=1000, completion_tokens=500, latency_s=0.1, model="m")

    def fail(request: AgentRequest) -> AgentReply:
        raise AgentBadReply("the model sent nothing usable")

    store = Store(tmp_path)
    store.open({})
    where = {"kind": "call", "strategy": "single", "task": "t1", "replicate": 1, "call": "s1"}
    request = AgentRequest(prompt="x" * 4000)  # 1,000 tokens at four characters a token
    done = asyncio.run(call(Priced(answer), request, NUMBER, "paid", where, store))
    assert done["usd"] == pytest.approx(0.008) and not done["estimated"]
    failed = asyncio.run(call(Priced(fail), request, NUMBER, "paid", {**where, "call": "s2"}, store))
    assert failed["error"] and failed["answer"] is None and failed["failure"] == "model"
    assert failed["prompt_tokens"] >= 1000 and failed["completion_tokens"] == 0
    assert failed["usd"] == pytest.approx(3 * failed["prompt_tokens"] / 1e6)


def _debater(name: str, asked: list[tuple[str, str]], broken: set[str]) -> FunctionAgent:
    """Answers one too many (``b``: 98) and, shown other answers, adopts the first; fails while in ``broken``."""

    def reply(request: AgentRequest) -> str:
        prompt = str(request.prompt)
        asked.append((name, prompt))
        if name in broken:
            raise AgentBadReply("the model sent nothing usable")
        if "One agent's answer" in prompt:
            return "I agree. " + prompt.split("One agent's answer:\n```\n")[1].split("\n```")[0]
        return "Answer: 98" if name == "b" else "Answer: 3"

    return FunctionAgent(reply)


def test_a_failed_opening_asked_again_renews_the_rounds_and_the_matched_samples_that_used_it(tmp_path: Path) -> None:
    asked: list[tuple[str, str]] = []
    broken = {"b"}
    agents = {name: _debater(name, asked, broken) for name in ("a", "b")}
    store = Store(tmp_path)
    store.open({})
    tasks = arithmetic(1, seed=1, level=1)
    runner = Runner(tasks, NUMBER, agents, {"a": "fn", "b": "fn"}, Sampling(0.7, 64, 10, 0), store, tmp_path / "r")
    debate, sc = parse_strategy("debate:2x1"), replace(matched("debate:2x1"), samples=3)
    key = ("debate:2x1", tasks[0].id, 1)

    async def both() -> None:
        await runner.run(debate)
        await runner.run(sc)

    asyncio.run(both())
    assert store.tasks[key]["failed_calls"] == 2  # b's opening, then b's round 1
    assert store.tasks[(sc.name, tasks[0].id, 1)]["samples"][:2] == ["3", None]
    broken.clear()
    asyncio.run(both())
    record = store.tasks[key]
    assert [{d: h["answer"] for d, h in r.items()} for r in record["rounds"]] == [
        {"a1": "3", "a2": "98"},
        {"a1": "98", "a2": "3"},  # each adopts what it was shown: round 1 saw b's new opening
    ]
    a_in_round_1 = [prompt for name, prompt in asked if name == "a" and "One agent's answer" in prompt]
    assert len(a_in_round_1) == 2 and "Answer: 98" in a_in_round_1[1]  # asked again, now showing b's answer
    matched_record = store.tasks[(sc.name, tasks[0].id, 1)]
    assert matched_record["samples"] == ["3", "98", "3"]  # the openings as they now are, then its own sample
    plain = [name for name, prompt in asked if "One agent's answer" not in prompt]
    assert plain.count("a") == 2  # a's opening once, sc's own third sample once: neither asked again


def test_the_scaling_curve_is_the_majority_of_the_first_k_samples() -> None:
    records = {
        ("sc:5", "t1", 1): {"samples": ["1", "2", "2", "1", "1"], "known": "1"},
        ("sc:5", "t2", 1): {"samples": ["2", "2", None, "1", "1"], "known": "2"},
    }
    tasks = [Task("t1", "q", "1"), Task("t2", "q", "2")]
    assert scaling_curve(records, parse_strategy("sc:5"), tasks, 1) == [(1, 1.0), (3, 0.5), (5, 1.0)]

"""What a debate will cost before it runs (``moot run --dry-run``): calls, tokens and price, per role.

An upper estimate, asking no agent: the driver's call plan (:meth:`Driver.call_plan`, the calls of a debate
that runs its course) says who is asked when; a call's prompt is that role's first prompt plus one full turn
of history per earlier call (within the role's context); its completion is the whole turn budget. Repairs come
on top and are not counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from moot.agents.base import Agent
from moot.agents.pricing import total_usd
from moot.agents.tokens import estimate_tokens
from moot.engine.driver import Driver
from moot.engine.loop import Engine, Limits


@dataclass(frozen=True)
class RoleEstimate:
    role: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None: the price table does not know this role's model


def estimate(driver: Driver, agents: Mapping[str, Agent], limits: Limits) -> list[RoleEstimate]:
    """Each role's calls, tokens and price, in the order the plan first asks them (roles it never asks last)."""
    Engine(driver, agents, limits)  # sets each role's turn bounds, as a run would; nothing is asked
    plan = driver.call_plan()
    slots: dict[str, list[int]] = {}
    for index, role in enumerate(plan):
        slots.setdefault(role, []).append(index)
    for role in driver.roles():
        slots.setdefault(role, [])
    first = driver.next_speaker() or (plan[0] if plan else driver.roles()[0])
    found = []
    for role, indices in slots.items():
        calls = len(indices)
        try:
            request = driver.request_for(role)
        except Exception:  # a role that cannot be asked yet (a moderator): size it as the first speaker
            request = driver.request_for(first)
        budget = request.max_tokens or driver.bounds(role).turn_tokens(0)
        base = estimate_tokens((request.system or "") + request.prompt)
        context = driver.bounds(role).context_tokens - budget
        prompts = [min(context, base + index * budget) for index in indices]
        completion = calls * budget
        costs = [agents[role].price_usd(prompt, budget) for prompt in prompts]
        found.append(RoleEstimate(role, calls, sum(prompts), completion, total_usd(costs) if costs else 0.0))
    return found

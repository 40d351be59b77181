"""What a debate will cost before it runs (``moot run --dry-run``): calls, tokens and price, per role.

An upper estimate, asking no agent: each role speaks its share of the protocol's turn limit; a call's prompt
is that role's first prompt plus one full turn of history per earlier call (within the role's context);
its completion is the whole turn budget. Repairs come on top and are not counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from moot.agents.base import Agent
from moot.agents.pricing import total_usd
from moot.engine.driver import Driver
from moot.engine.loop import Engine, Limits
from moot.protocols.duel.driver import estimate_tokens


@dataclass(frozen=True)
class RoleEstimate:
    role: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None: the price table does not know this role's model


def max_calls(driver: Driver) -> int:
    """The protocol's turn limit: the calls a debate that runs its course makes (repairs aside)."""
    detail = driver.summary().detail
    if "max_turns" in detail:
        return int(detail["max_turns"])
    return int(detail["max_rounds"]) * len(detail["speaker_order"]) + 1  # roundtable: speeches, then minutes


def estimate(driver: Driver, agents: Mapping[str, Agent], limits: Limits) -> list[RoleEstimate]:
    Engine(driver, agents, limits)  # sets each role's turn bounds, as a run would; nothing is asked
    roles = driver.roles()
    rotation = [str(role) for role in driver.summary().detail.get("speaker_order", roles)]
    once = [role for role in roles if role not in rotation]  # a moderator speaks once, at the end
    first = driver.next_speaker() or rotation[0]
    if first in rotation:
        rotation = rotation[rotation.index(first) :] + rotation[: rotation.index(first)]
    total = max_calls(driver)
    spoken = total - len(once)
    slots = {role: list(range(position, spoken, len(rotation))) for position, role in enumerate(rotation)}
    slots.update({role: [spoken + index] for index, role in enumerate(once)})
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

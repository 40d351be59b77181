"""What a debate will cost before it runs (``moot run --dry-run``): calls, tokens and price, per role.

Nothing is asked. The driver's planned calls (:meth:`Driver.planned_calls`: who is asked when, and what each
prompt carries of the earlier replies) are sized from the protocol's own requests:

- **expected**: a call's prompt is its role's first request as the driver builds it (system, prompt and reply
  schema, at :func:`typical_tokens`), plus the typical length of each earlier reply it carries; a reply's
  typical length follows from its schema (:func:`typical_reply_tokens`: a turn's main text is about 300 words),
  within its turn budget. Where the role's model server caches prompt prefixes, a call whose prompt extends an
  earlier one with the same reply schema reads that one's prefix from the cache (from 1,024 tokens, in
  128-token steps, as OpenAI and Anthropic do) and writes the rest; the price is at the cache rates.
- **at most**: every reply uses its whole turn budget and every call's prompt grows by a full budget per
  earlier call, with no cache.
- **contingent** calls, made only on a condition (``PlannedCall.when``: an auto panel's reviews and synthesis,
  asked only if the vote splits), are in the upper bound but not in the expected figures; their expected figures
  are given apart, per condition.

Repairs come on top of both and are not counted. A person's turns ask no model: no tokens, $0.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from moot.agents.base import Agent, AgentRequest
from moot.agents.pricing import total_usd
from moot.agents.tokens import estimate_tokens, typical_tokens
from moot.engine.driver import Driver
from moot.engine.loop import Engine, Limits

# What a capable model writes for one text field of a turn (the dry run's documented assumption).
LONG_TEXT_TOKENS = 400  # a turn's main text: about 300 words
SHORT_TEXT_TOKENS = 40  # a text that is short, patterned, or inside a list or object: a sentence or two
VALUE_TOKENS = 3  # a choice, a number, a yes or no
CACHE_MIN_TOKENS = 1024  # a prefix the providers cache: at least this long (OpenAI; Anthropic's Sonnet models)
CACHE_STEP_TOKENS = 128  # read in steps of this many tokens (OpenAI)


@dataclass(frozen=True)
class Contingent:
    """The expected figures of the calls made only if ``when`` happens (see the module docstring)."""

    when: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float | None


@dataclass(frozen=True)
class RoleEstimate:
    role: str
    calls: int  # expected: the calls made on no condition
    prompt_tokens: int  # expected
    completion_tokens: int  # expected
    cached_tokens: int  # of the expected prompt tokens, read from the provider's cache
    cost_usd: float | None  # expected, at the cache rates; None: the agent's price is unknown
    max_prompt_tokens: int  # at most: full budgets, no cache
    max_completion_tokens: int
    max_cost_usd: float | None
    person: bool = False  # a person answers: no model is asked
    max_calls: int | None = None  # at most, when contingent calls make it more than ``calls``
    contingent: tuple[Contingent, ...] = ()  # the role's contingent calls, per condition


@dataclass
class _Call:
    role: str
    when: str | None = None
    prompt: int = 0
    completion: int = 0
    cached: int = 0
    written: int = 0


def typical_reply_tokens(schema: Mapping[str, Any] | None) -> int:
    """The tokens of a typical reply that matches ``schema``: one main text (the first free text at its top level)
    of ``LONG_TEXT_TOKENS``, every other text ``SHORT_TEXT_TOKENS``, within its ``maxLength``; a text whose
    schema defaults to empty left empty; one item in a list (its ``minItems`` when more, none when it allows
    none or defaults to empty). Without a schema, one main text."""
    if schema is None:
        return LONG_TEXT_TOKENS
    return round(_value_tokens(schema, schema.get("$defs", {}), 0, [False]))


def _value_tokens(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int, main: list[bool]) -> float:
    if "$ref" in schema:
        return _value_tokens(defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {}), defs, depth, main)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return _value_tokens(options[0], defs, depth, main)
    if "enum" in schema or schema.get("type") in ("boolean", "integer", "number"):
        return VALUE_TOKENS
    if schema.get("type") == "object":
        properties = schema.get("properties", {})
        keys = sum(typical_tokens(json.dumps(name)) + 1 for name in properties)
        return 2 + keys + sum(_value_tokens(sub, defs, depth + 1, main) for sub in properties.values())
    if schema.get("type") == "array":
        wanted = 0 if schema.get("default") == [] else max(int(schema.get("minItems", 1)), 1)
        items = min(wanted, int(schema.get("maxItems", wanted)))
        return 2 + items * _value_tokens(schema.get("items", {"type": "string"}), defs, depth + 1, main)
    return _text_tokens(schema, depth, main)


def _text_tokens(schema: Mapping[str, Any], depth: int, main: list[bool]) -> float:
    """A text field: empty when its schema defaults to empty, the reply's main text, or a short one."""
    if schema.get("default") == "" or schema.get("maxLength") == 0:
        return 2
    short = depth > 1 or main[0] or "pattern" in schema or "short" in str(schema.get("description", "")).lower()
    main[0] = main[0] or not short
    limit = schema.get("maxLength")
    tokens = SHORT_TEXT_TOKENS if short else LONG_TEXT_TOKENS
    return 2 + (min(tokens, int(limit) / 4) if limit else tokens)


def _first_requests(driver: Driver, roles: list[str], first: str) -> dict[str, AgentRequest]:
    requests = {}
    for role in roles:
        try:
            requests[role] = driver.request_for(role)
        except Exception:  # a role that cannot be asked yet (a moderator): size it as the first speaker
            requests[role] = driver.request_for(first)
    return requests


def _request_text(request: AgentRequest) -> str:
    """What a request sends: its system message, its prompt and its reply schema."""
    schema = json.dumps(request.json_schema) if request.json_schema is not None else ""
    return (request.system or "") + request.prompt + schema


def _instruction_tokens(request: AgentRequest) -> int:
    """The per-turn instruction after the request's stable prefix: what a cache never reads."""
    return typical_tokens(request.prompt_parts()[1]) if request.prefix_stable else 0


def expected_calls(driver: Driver, requests: Mapping[str, AgentRequest]) -> list[_Call]:
    """Each planned call's expected prompt, completion, cached and written tokens (see the module docstring)."""
    plan = driver.planned_calls()
    replies: list[int] = []
    found: list[_Call] = []
    last_of_schema: dict[str, int] = {}  # a reply schema's latest call (the roles that share it share a prefix)
    stables: dict[int, int] = {}  # a call's stable prefix, in tokens
    for index, planned in enumerate(plan):
        request = requests[planned.role]
        bounds = driver.bounds(planned.role)
        budget = request.max_tokens or bounds.turn_tokens(0)
        schema = planned.schema if planned.schema is not None else request.json_schema
        replies.append(min(budget, typical_reply_tokens(schema)))
        reads = range(index) if planned.reads is None else planned.reads
        cut = planned.read_tokens if planned.read_tokens is not None else budget
        carried = sum(min(replies[earlier], cut) for earlier in reads)
        call = _Call(
            planned.role,
            planned.when,
            min(bounds.context_tokens - budget, typical_tokens(_request_text(request)) + carried),
        )
        call.completion = replies[-1]
        key = json.dumps(schema, sort_keys=True)
        if bounds.prefix_cache and request.prefix_ends is not None:
            # What the next request of this schema begins with: the request's own stable prefix, and the
            # transcript when the prompt carries it all (a prompt that shows the latest turn shows it last).
            stable = typical_tokens(_request_text(request)) - _instruction_tokens(request)
            stable += carried if planned.reads is None else 0
            earlier = last_of_schema.get(key)
            if earlier is not None and stables[earlier] >= CACHE_MIN_TOKENS:
                call.cached = min(stable, stables[earlier]) // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS
            call.written = max(0, stable - call.cached) if stable >= CACHE_MIN_TOKENS else 0
            stables[index] = stable
            last_of_schema[key] = index
        found.append(call)
    return found


def estimate(driver: Driver, agents: Mapping[str, Agent], limits: Limits) -> list[RoleEstimate]:
    """Each role's calls, tokens and price, expected and at most, in the order the plan first asks them (roles
    it never asks last)."""
    Engine(driver, agents, limits)  # sets each role's turn bounds, as a run would; nothing is asked
    plan = driver.call_plan()
    first = driver.next_speaker() or (plan[0] if plan else driver.roles()[0])
    roles = list(dict.fromkeys([*plan, *driver.roles()]))
    requests = _first_requests(driver, roles, first)
    calls = expected_calls(driver, requests)
    found = []
    for role in roles:
        agent, asked = agents[role], [call for call in calls if call.role == role]
        mine = [call for call in asked if call.when is None]
        most_calls = len(asked) if len(asked) != len(mine) else None
        conditions = dict.fromkeys(call.when for call in asked if call.when is not None)
        if agent.interactive:
            found.append(RoleEstimate(role, len(mine), 0, 0, 0, 0.0, 0, 0, 0.0, True, most_calls))
            continue
        most_prompt, most_completion, most_cost = _at_most(driver, agent, role, requests[role], plan)
        expected = _figures(agent, "", mine)
        contingent = tuple(_figures(agent, when, [c for c in asked if c.when == when]) for when in conditions)
        found.append(
            RoleEstimate(
                role,
                len(mine),
                expected.prompt_tokens,
                expected.completion_tokens,
                expected.cached_tokens,
                expected.cost_usd,
                most_prompt,
                most_completion,
                most_cost,
                max_calls=most_calls,
                contingent=contingent,
            )
        )
    return found


def _figures(agent: Agent, when: str, calls: list[_Call]) -> Contingent:
    """The expected figures of ``calls`` (made if ``when`` happens; "" for the calls made on no condition)."""
    costs = [
        agent.price_usd(c.prompt, c.completion, cached_tokens=c.cached, cache_write_tokens=c.written) for c in calls
    ]
    return Contingent(
        when,
        len(calls),
        sum(c.prompt for c in calls),
        sum(c.completion for c in calls),
        sum(c.cached for c in calls),
        total_usd(costs) if costs else 0.0,
    )


def contingent_totals(found: list[RoleEstimate]) -> list[Contingent]:
    """Per condition, the expected figures of every role's calls made only on it, in the order they first come."""
    totals: dict[str, list[Contingent]] = {}
    for row in found:
        for part in row.contingent:
            totals.setdefault(part.when, []).append(part)
    return [
        Contingent(
            when,
            sum(p.calls for p in parts),
            sum(p.prompt_tokens for p in parts),
            sum(p.completion_tokens for p in parts),
            sum(p.cached_tokens for p in parts),
            total_usd([p.cost_usd for p in parts]),
        )
        for when, parts in totals.items()
    ]


def _at_most(
    driver: Driver, agent: Agent, role: str, request: AgentRequest, plan: list[str]
) -> tuple[int, int, float | None]:
    """The upper bound: the role's first prompt plus a full turn budget per earlier call, every reply its whole
    budget, no cache."""
    indices = [index for index, asked in enumerate(plan) if asked == role]
    budget = request.max_tokens or driver.bounds(role).turn_tokens(0)
    base = estimate_tokens(_request_text(request))
    context = driver.bounds(role).context_tokens - budget
    prompts = [min(context, base + index * budget) for index in indices]
    costs = [agent.price_usd(prompt, budget) for prompt in prompts]
    return sum(prompts), len(indices) * budget, total_usd(costs) if costs else 0.0


TOTALS = (
    "calls",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "cost_usd",
    "max_prompt_tokens",
    "max_completion_tokens",
    "max_cost_usd",
)


def estimate_json(
    protocol: str, found: list[RoleEstimate], specs: Mapping[str, str], max_cost_usd: float | None
) -> dict[str, Any]:
    """The dry run as ``--json`` prints it: per role and in total, the expected figures and the upper bound."""
    roles = [{**dataclasses.asdict(row), "agent": specs[row.role]} for row in found]
    total = {
        key: (total_usd([row[key] for row in roles]) if key.endswith("usd") else sum(row[key] for row in roles))
        for key in TOTALS
    }
    total["max_calls"] = sum(row.max_calls or row.calls for row in found)
    return {
        "dry_run": True,
        "protocol": protocol,
        "assumptions": {"main_text_tokens": LONG_TEXT_TOKENS, "short_text_tokens": SHORT_TEXT_TOKENS},
        "roles": roles,
        "total": total,
        "contingent": [dataclasses.asdict(part) for part in contingent_totals(found)],
        "max_cost_budget_usd": max_cost_usd,
    }

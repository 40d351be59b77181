"""Running a driver end to end: pick agents for its roles, apply budgets, run, release the agents.

Used alike by ``moot run``, ``moot resume`` and ``moot run --batch``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from moot.agents import Agent, resolve_agent
from moot.agents.family import one_family
from moot.agents.policy import AgentPolicy
from moot.config import Settings, check_roles
from moot.engine.driver import Driver
from moot.engine.loop import Engine, Limits, RunResult, Subscriber
from moot.errors import AgentError, UserError


@dataclass(frozen=True)
class AgentChoice:
    """--agent ROLE=SPEC (per role) and --agents SPEC (every role), over the project's settings."""

    per_role: Mapping[str, str] = field(default_factory=dict)
    every_role: str | None = None

    @classmethod
    def for_driver(cls, driver: Driver, per_role: Mapping[str, str], every_role: str | None) -> AgentChoice:
        """The choice for ``driver``'s record: a record that names its participants' models (the Council's) is
        run with them unless --agents names one for every role; --agent ROLE=SPEC overrides either."""
        recorded: dict[str, str] = {} if every_role else getattr(driver, "agent_specs", dict)()
        return cls({**recorded, **per_role}, every_role)

    def spec_for(self, role: str, settings: Settings) -> str:
        return settings.agent_for(role, dict(self.per_role), self.every_role)


def parse_agent_options(values: list[str]) -> dict[str, str]:
    """``["critic=openai:gpt-4o", ...]`` -> ``{"critic": "openai:gpt-4o"}``, with a clear error otherwise."""
    chosen: dict[str, str] = {}
    for value in values:
        role, sep, spec = value.partition("=")
        if not sep or not role.strip() or not spec.strip():
            raise UserError(f"--agent {value!r} is not ROLE=SPEC; write it like --agent critic=local.")
        chosen[role.strip()] = spec.strip()
    return chosen


def parse_member(value: str) -> tuple[str, str]:
    """``--member NAME=SPEC`` -> (name, spec), with a clear error otherwise."""
    name, sep, spec = value.partition("=")
    if not sep or not name.strip() or not spec.strip():
        raise UserError(f"--member {value!r} is not NAME=SPEC; write it like --member alice=openai:gpt-4o-mini.")
    return name.strip(), spec.strip()


def resolve_agents(
    roles: list[str], choice: AgentChoice, settings: Settings, policy: AgentPolicy | None = None
) -> dict[str, Agent]:
    """One agent per distinct spec, shared by the roles that use it (one model load, one script); under
    ``policy`` (a door serving clients) every spec, moot.toml's too, must be one it allows."""
    unknown = sorted(set(choice.per_role) - set(roles))
    if unknown:
        raise UserError(
            f"--agent names role(s) {', '.join(unknown)} that this debate lacks; its roles are {', '.join(roles)}."
        )
    check_roles(settings, roles)
    by_spec: dict[str, Agent] = {}
    agents: dict[str, Agent] = {}
    for role in roles:
        spec = choice.spec_for(role, settings)
        if spec not in by_spec:
            try:
                by_spec[spec] = resolve_agent(spec, policy)
            except AgentError as exc:
                raise UserError(str(exc)) from exc
            by_spec[spec].price = settings.prices.get(spec, by_spec[spec].price)
        agents[role] = by_spec[spec]
    return agents


def require_prices(agents: Mapping[str, Agent], choice: AgentChoice, settings: Settings) -> None:
    """A cost budget needs every agent's price: refuse, before anything runs, an agent whose price is unknown."""
    unknown = sorted(
        {choice.spec_for(role, settings) for role, agent in agents.items() if agent.price_usd(1, 1) is None}
    )
    if unknown:
        raise UserError(
            f"--max-cost needs each agent's price, and the price table does not know {', '.join(unknown)}; "
            "give it one in moot.toml's [prices], or use --max-tokens as the budget instead."
        )


def refuse_one_family(specs: Mapping[str, str], option: str, fix: str) -> None:
    """``option`` (``--require-diverse``, a batch line's ``"require_diverse"``) refuses a panel whose every member is
    of one model family: one sentence naming the fix (``fix``: where the members' agents are named)."""
    family = one_family(dict(specs))
    if family is not None:
        raise UserError(
            f"{option} refuses this panel: every member is of one model family ({family}); give some "
            f"members a model of another family ({fix}) or drop {option}."
        )


def limits_from(settings: Settings, **overrides: float | int | None) -> Limits:
    values = {
        "repairs": settings.repairs,
        "turn_timeout_s": settings.turn_timeout_s,
        "max_tokens": settings.max_tokens,
        "max_wall_s": settings.max_wall_s,
        "max_turn_tokens": settings.max_turn_tokens,
        "max_cost_usd": settings.max_cost_usd,
    }
    values.update({key: value for key, value in overrides.items() if value is not None})
    values["turn_timeout_stretches"] = (
        overrides.get("turn_timeout_s") is None and "turn_timeout_s" not in settings.model_fields_set
    )
    return Limits(**values)  # type: ignore[arg-type]


def distinct(agents: Mapping[str, Agent]) -> list[Agent]:
    """Each agent once, however many roles share it."""
    return list({id(a): a for a in agents.values()}.values())


async def probe_agents(agents: Mapping[str, Agent]) -> None:
    """One reachability check per agent before anything is written; a failure is the user's to fix."""
    try:
        for agent in distinct(agents):
            await agent.probe()
    except AgentError as exc:
        for agent in distinct(agents):
            await agent.aclose()
        raise UserError(f"{exc}.") from exc


async def run_driver(
    driver: Driver,
    agents: Mapping[str, Agent],
    limits: Limits,
    subscribers: tuple[Subscriber, ...] = (),
    specs: Mapping[str, str] | None = None,
) -> RunResult:
    """Run ``driver`` to its outcome, then close every agent once. ``specs`` are kept for ``moot resume``."""
    try:
        return await Engine(driver, agents, limits, subscribers, specs=specs).run()
    finally:
        for agent in distinct(agents):
            await agent.aclose()

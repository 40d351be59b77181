"""Per-project defaults from ``moot.toml`` or ``[tool.moot]`` in ``pyproject.toml``.

Example ``moot.toml``::

    agents = "local"              # the agent spec every role gets unless --agent/--agents says otherwise
    repairs = 2                   # how often an invalid turn goes back to its author
    turn_timeout_s = 300
    max_turn_tokens = 2000        # completion tokens per turn (default: each agent's own bounds)
    max_cost_usd = 0.50           # budget in USD per debate (prices from the genai-prices table)

    [agent]                       # per-role agent specs
    critic = "openai:gpt-4o-mini"

    [panel]                       # moot serve --openai: who answers a question, in order (the first chairs)
    ada = "openai:gpt-4o-mini"
    bo = "anthropic:claude-haiku-4-5"

    [prices]                      # USD per million tokens, per agent spec: wins over the genai-prices table
    "cmd:./my-agent" = { input = 3.0, output = 15.0 }
    "openai:my-model@https://gateway.example/v1" = { input = 0.4, output = 1.6, cached_input = 0.1 }

Command-line flags win over the file; the file wins over moot's defaults.

What the clients of a door (``moot mcp``) may ask of this machine besides the configured models; nothing by
default, and the door's ``--allow-agent`` / ``--allow-server`` flags add to it::

    allow_agents = ["script"]     # backends that run a program, read a file or the terminal, or are plugins
    allow_servers = ["http://127.0.0.1:8080/v1", "https://gateway.example/v1=GATEWAY_KEY"]  # =ENV: its key
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from moot.agents.pricing import TokenPrice
from moot.errors import ConfigError


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # moot mcp: how many debates the server runs (or is starting) at once, in all and per MCP session; a start
    # past either is refused. Each debate may start agent processes or call paid APIs.
    max_running_debates: int = Field(default=8, ge=1)
    max_running_debates_per_session: int = Field(default=4, ge=1)

    agents: str = "local"
    agent: dict[str, str] = Field(default_factory=dict)
    # moot serve --openai: the members a question goes to (name -> agent spec), in order; the first chairs.
    panel: dict[str, str] = Field(default_factory=dict)
    repairs: int = Field(default=2, ge=0, le=10)
    turn_timeout_s: float = Field(default=300.0, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_wall_s: float | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, ge=0)  # needs a known price for every agent
    max_turn_tokens: int | None = Field(default=None, gt=0)  # per turn, for every agent; else each agent's bounds
    # agent spec -> its price per million tokens, for an agent the genai-prices table cannot price
    prices: dict[str, TokenPrice] = Field(default_factory=dict)
    allow_agents: tuple[str, ...] = ()  # backends a door's clients may name: cmd, acp, script, local (a path), …
    allow_servers: tuple[str, ...] = ()  # model server URLs a door's clients may name (URL=ENV_NAME: its key)

    def agent_for(self, role: str, overrides: dict[str, str], every_role: str | None) -> str:
        """The spec for ``role``: --agent ROLE=SPEC, then --agents, then [agent], then ``agents``."""
        if role in overrides:
            return overrides[role]
        if every_role is not None:
            return every_role
        return self.agent.get(role, self.agents)


def _closest(name: str, known: Iterable[str]) -> str:
    """``; did you mean 'critic'?`` for a near miss, else the list of what is known."""
    names = sorted(known)
    match = difflib.get_close_matches(name.rsplit(".", 1)[-1], names, n=1)
    if match:
        return f"; did you mean {match[0]!r}?"
    return f"; the known ones are {', '.join(names)}"


def check_roles(settings: Settings, roles: Iterable[str]) -> None:
    """A role in ``[agent]`` that is a near miss of one of this debate's roles is a typo, not another debate's role.

    Roles of other debates (``advocate`` while running a critique) stay allowed: one moot.toml serves them all.
    """
    wanted = set(roles)
    for role in settings.agent:
        if role in wanted:
            continue
        match = difflib.get_close_matches(role, sorted(wanted), n=1, cutoff=0.75)
        if match:
            raise ConfigError(
                f"the [agent] table of moot.toml (or [tool.moot.agent]) names role {role!r}, which this debate "
                f"lacks; did you mean {match[0]!r}?"
            )


def _table(path: Path) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; fix or remove the file.") from exc
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError, a number too long, nesting too deep
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix the syntax.") from exc
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        table = tool.get("moot") if isinstance(tool, dict) else None
        return table if isinstance(table, dict) else None
    return data


def load_settings(root: Path) -> Settings:
    """Settings from ``root/moot.toml``, else ``root/pyproject.toml [tool.moot]``, else defaults."""
    for name in ("moot.toml", "pyproject.toml"):
        path = root / name
        if not path.is_file():
            continue
        table = _table(path)
        if table is None:
            continue
        try:
            return Settings.model_validate(table)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(top level)"
            if first["type"] == "extra_forbidden":
                raise ConfigError(
                    f"{path}: unknown setting {where!r}{_closest(where, Settings.model_fields)}."
                ) from exc
            raise ConfigError(f"{path}: setting {where!r} is invalid ({first['msg']}); fix it or remove it.") from exc
    return Settings()

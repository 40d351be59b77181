"""What every door that serves clients shares: a token on every HTTP request, and the agent policy its operator
opened.

- **A token on every HTTP request, loopback included.** Loopback is not one user's: every account on the machine
  reaches it. ``moot mcp --transport http`` and ``moot serve`` take the operator's token or draw a random one,
  which they print at start, and compare tokens in constant time.
- **The agent policy** (:mod:`moot.agents.policy`): the backends and model servers the door's clients may ask
  for, from its flags (``--allow-agent``, ``--allow-server``) and the work root's moot.toml (``allow_agents``,
  ``allow_servers``); nothing else by default.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from moot.agents.policy import AgentPolicy, allowed_backends, model_server
from moot.agents.registry import backend_names
from moot.config import load_settings
from moot.errors import UserError

TOKEN_BYTES = 24  # 192 random bits, 32 URL-safe characters

# The flags that open a door's policy further, for every door's command.
AllowAgentOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-agent",
        metavar="BACKEND",
        help="Let this door's debates use agents of this backend, which run a program, read a file or the terminal, "
        "or are a plugin: cmd, acp, script, local (a GGUF path), human, a plugin's name (repeatable; also "
        "allow_agents in moot.toml).",
    ),
]
AllowServerOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-server",
        metavar="URL[=ENV]",
        help="Let this door's debates use this model server (openai:MODEL@URL); with =ENV it gets $ENV as its key, "
        "else no key of this machine (repeatable; also allow_servers in moot.toml).",
    ),
]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def door_token(given: str | None) -> tuple[str, bool]:
    """The token every request must carry: ``given``, else a random one; and whether it was drawn here (then
    the door prints it, since nobody else knows it)."""
    if given:
        return given, False
    return secrets.token_urlsafe(TOKEN_BYTES), True


def same_token(given: str, token: str) -> bool:
    """A comparison that takes as long whatever ``given`` is (any text: compared as UTF-8 bytes)."""
    return secrets.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode("utf-8", "surrogateescape"))


def agent_policy(door: str, root: Path, *, agents: Sequence[str] = (), servers: Sequence[str] = ()) -> AgentPolicy:
    """The policy ``door`` runs its clients' debates under: what its flags allow (``agents``, ``servers``) and
    what the work root's moot.toml allows, together; a wrong entry is one sentence naming where it is."""
    settings = load_settings(root)
    known = backend_names()
    environ = dict(os.environ)
    try:
        backends = allowed_backends(agents, "--allow-agent", known) | allowed_backends(
            settings.allow_agents, "allow_agents in moot.toml", known
        )
        listed = [model_server(entry, "--allow-server", environ) for entry in servers]
        listed += [model_server(entry, "allow_servers in moot.toml", environ) for entry in settings.allow_servers]
    except ValueError as wrong:
        raise UserError(f"{wrong}.") from None
    keys = {server.key_env: environ[server.key_env] for server in listed if server.key_env}
    return AgentPolicy(door=door, backends=backends, servers=tuple(dict.fromkeys(listed)), environ=keys)

"""Agent spec strings to agents, importing only the backend that is asked for.

A spec is ``NAME`` or ``NAME:REST``. Built-in backends and plugins have the same shape: a factory
``callable(rest: str) -> Agent``. Plugins register one through the entry-point group
``moot.agents``, e.g. in their pyproject.toml::

    [project.entry-points."moot.agents"]
    mybackend = "my_package.moot_plugin:make_agent"

A built-in name always wins over a plugin of the same name.

Each built-in declares what it reaches on the machine (:class:`~moot.agents.policy.Reach`); a plugin reaches
whatever its code does. A door that serves clients resolves specs under an
:class:`~moot.agents.policy.AgentPolicy`, which is asked before a backend is imported or built.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Protocol, cast

from moot.agents.acp_catalog import ACP_INSTALL, KNOWN_ACP_AGENTS, installed_path
from moot.agents.base import Agent
from moot.agents.local import INSTALL_HINT, default_weights
from moot.agents.policy import Admission, AgentPolicy, Reach, split_model_url
from moot.errors import AgentError, AgentUnavailable, UnknownAgentSpec

ENTRY_POINT_GROUP = "moot.agents"

AgentFactory = Callable[[str], Agent]


class _KeyedFactory(Protocol):
    """The factory of a backend that reaches a model server its spec names: the key is the policy's to give."""

    def __call__(self, rest: str, *, api_key: str) -> Agent: ...


def _always(reach: Reach) -> Callable[[str], Reach]:
    return lambda rest: reach


def _local_reach(rest: str) -> Reach:
    return Reach.FILE if rest.strip() else Reach.MODEL  # local alone is the embedded model


def _openai_reach(rest: str) -> Reach:
    return Reach.SERVER if split_model_url(rest)[1] else Reach.MODEL


@dataclass(frozen=True)
class _Builtin:
    forms: str  # how to write it, for messages and listings
    factory: str  # "module:function", imported on first use
    reach: Callable[[str], Reach]  # what the spec's rest makes it reach on the server's machine
    install: str = ""  # what to install when its SDK is missing


_OPENAI_INSTALL = "pip install 'moot[openai]'"
_ANTHROPIC_INSTALL = "pip install 'moot[anthropic]'"

_BUILTINS: dict[str, _Builtin] = {
    "local": _Builtin("local, local:PATH.gguf", "moot.agents.local:from_spec", _local_reach, INSTALL_HINT),
    "openai": _Builtin(
        "openai:MODEL[@BASE_URL]", "moot.agents.openai_compat:from_spec", _openai_reach, _OPENAI_INSTALL
    ),
    "ollama": _Builtin(
        "ollama:MODEL", "moot.agents.openai_compat:ollama_from_spec", _always(Reach.MODEL), _OPENAI_INSTALL
    ),
    "anthropic": _Builtin(
        "anthropic:MODEL", "moot.agents.anthropic_agent:from_spec", _always(Reach.MODEL), _ANTHROPIC_INSTALL
    ),
    "cmd": _Builtin("cmd:COMMAND", "moot.agents.cmd:from_spec", _always(Reach.PROGRAM)),
    "human": _Builtin("human", "moot.agents.human:from_spec", _always(Reach.TERMINAL)),
    "script": _Builtin("script:FILE", "moot.agents.script:from_spec", _always(Reach.FILE)),
    "acp": _Builtin("acp:COMMAND", "moot.agents.acp:from_spec", _always(Reach.PROGRAM), ACP_INSTALL),
}


@dataclass(frozen=True)
class BackendStatus:
    """One line of ``moot agents``: can this backend be used right now, and if not, why."""

    name: str
    forms: str
    ready: bool
    detail: str
    plugin: str | None = None  # the entry point's target for plugins
    install: str | None = None  # the command that installs what it lacks, when that is all it lacks


def resolve_agent(spec: str, policy: AgentPolicy | None = None) -> Agent:
    """The agent a spec names; UnknownAgentSpec for a spec that names nothing known.

    Under ``policy`` (a door serving clients) a spec it does not allow is refused (AgentNotAllowed) before its
    backend is imported, and a model server the spec names is reached as the policy admits it.
    """
    name, rest = _split(spec)
    admission = admit(spec, policy) if policy is not None else None
    factory = _factory(name, spec)
    try:
        if admission is not None and admission.api_key is not None:
            agent = cast(_KeyedFactory, factory)(admission.rest, api_key=admission.api_key)
        else:
            agent = factory(rest)
    except AgentError:
        raise
    except Exception as exc:  # a plugin's own bug must not surface as a traceback
        raise AgentUnavailable(f"agent backend '{name}' failed to start ({exc}): fix or uninstall the plugin") from exc
    if not isinstance(agent, Agent):
        raise AgentUnavailable(
            f"agent backend '{name}' returned {type(agent).__name__}, not an Agent: fix its moot.agents entry point"
        )
    return agent


def admit(spec: str, policy: AgentPolicy) -> Admission | None:
    """How ``policy`` lets ``spec`` be built, or AgentNotAllowed; None for a spec that names no backend (resolving
    it says so). Nothing is imported, started or connected to."""
    name, rest = _split(spec)
    builtin = _BUILTINS.get(name)
    if builtin is not None:
        return policy.admit(name, rest, builtin.reach(rest))
    if name in _plugins():
        return policy.admit(name, rest, Reach.PLUGIN)
    return None


def backend_names() -> list[str]:
    """Every backend's name, built-ins first, then plugins: what an allow-list may name."""
    return [*_BUILTINS, *_plugins()]


def _split(spec: str) -> tuple[str, str]:
    name, _, rest = spec.strip().partition(":")
    return name.strip(), rest


def valid_forms() -> list[str]:
    """Every spec form known now, built-ins first, then plugins."""
    return [builtin.forms for builtin in _BUILTINS.values()] + [f"{name}[:…]" for name in _plugins()]


def list_backends() -> list[BackendStatus]:
    """Readiness of every backend, checked without importing SDKs or loading models."""
    statuses = [_builtin_status(name, builtin) for name, builtin in _BUILTINS.items()]
    statuses += _known_acp_statuses()
    for name, point in _plugins().items():
        statuses.append(BackendStatus(name, f"{name}[:…]", True, f"plugin {point.value}", plugin=point.value))
    return statuses


def _factory(name: str, spec: str) -> AgentFactory:
    if name in _BUILTINS:
        builtin = _BUILTINS[name]
        module_name, _, function = builtin.factory.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:  # the backend's SDK is missing
            raise AgentUnavailable(
                f"the {name} backend needs {exc.name}, which is not installed: run {builtin.install}"
            ) from exc
        factory: AgentFactory = getattr(module, function)
        return factory
    point = _plugins().get(name)
    if point is None:
        raise UnknownAgentSpec(f"unknown agent spec '{spec}': use one of {', '.join(valid_forms())}")
    try:
        loaded: AgentFactory = point.load()
    except Exception as exc:
        raise AgentUnavailable(
            f"agent plugin '{name}' ({point.value}) cannot be loaded ({exc}): reinstall or uninstall it"
        ) from exc
    return loaded


def _plugins() -> dict[str, EntryPoint]:
    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP) if point.name not in _BUILTINS}


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _builtin_status(name: str, builtin: _Builtin) -> BackendStatus:
    ready, detail = _READINESS[name]()
    missing = not ready and builtin.install in detail  # its readiness names the install that it lacks
    return BackendStatus(name, builtin.forms, ready, detail, install=builtin.install if missing else None)


def _local_readiness() -> tuple[bool, str]:
    if not _installed("llama_cpp"):
        return False, f"llama-cpp-python is not installed: run {INSTALL_HINT}"
    try:
        weights = default_weights()
    except AgentUnavailable as exc:
        return False, str(exc)
    return True, f"SmolLM2-135M-Instruct at {weights}"


def _openai_readiness() -> tuple[bool, str]:
    if not _installed("openai"):
        return False, f"the openai SDK is not installed: run {_OPENAI_INSTALL}"
    if os.environ.get("OPENAI_API_KEY"):
        return True, "OPENAI_API_KEY is set"
    if os.environ.get("OPENAI_BASE_URL"):
        return True, f"no key, using the server at OPENAI_BASE_URL={os.environ['OPENAI_BASE_URL']}"
    return False, "OPENAI_API_KEY is not set: export it, or use openai:MODEL@URL for a local server"


def _ollama_readiness() -> tuple[bool, str]:
    if not _installed("openai"):
        return False, f"the openai SDK is not installed: run {_OPENAI_INSTALL}"
    from moot.agents.ollama import ollama_host, ollama_models

    return ollama_models(ollama_host())


def _anthropic_readiness() -> tuple[bool, str]:
    if not _installed("anthropic"):
        return False, f"the anthropic SDK is not installed: run {_ANTHROPIC_INSTALL}"
    if os.environ.get("ANTHROPIC_API_KEY"):
        return True, "ANTHROPIC_API_KEY is set"
    return False, "ANTHROPIC_API_KEY is not set: export your Anthropic API key"


def _human_readiness() -> tuple[bool, str]:
    if sys.stdin.isatty():
        return True, "stdin is a terminal"
    return False, "stdin is not a terminal: run moot in a terminal to take part in person"


def _acp_readiness() -> tuple[bool, str]:
    if not _installed("acp"):
        return False, f"the agent-client-protocol SDK is not installed: run {ACP_INSTALL}"
    return True, "runs a coding agent over the Agent Client Protocol, one session per role"


def _known_acp_statuses() -> list[BackendStatus]:
    """One line per ACP agent moot knows by name: on PATH or not, and how to install it."""
    statuses = []
    for known in KNOWN_ACP_AGENTS:
        path = installed_path(known)
        detail = f"installed at {path}" if path else f"'{known.command}' is not on PATH: {known.install}"
        install = None if path else known.install
        statuses.append(BackendStatus(f"acp {known.command}", known.spec, path is not None, detail, install=install))
    return statuses


_READINESS: dict[str, Callable[[], tuple[bool, str]]] = {
    "local": _local_readiness,
    "openai": _openai_readiness,
    "ollama": _ollama_readiness,
    "anthropic": _anthropic_readiness,
    "cmd": lambda: (True, "runs any command: prompt on stdin, turn on stdout"),
    "human": _human_readiness,
    "script": lambda: (True, "replays prepared replies: a JSON array or JSON lines (docs/agents.md)"),
    "acp": _acp_readiness,
}

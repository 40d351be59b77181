"""Participants: anything that can answer a turn, behind one async interface.

The public surface is what this module exports (pinned by a test). Backend classes that need an
SDK (OpenAIAgent, AnthropicAgent, AcpAgent) or llama.cpp (LocalAgent) are imported only when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from moot.agents.base import Agent, AgentReply, AgentRequest, RetryPolicy, call_with_retries
from moot.agents.registry import ENTRY_POINT_GROUP, BackendStatus, list_backends, resolve_agent, valid_forms
from moot.agents.script import FunctionAgent, ScriptAgent, ScriptedReply
from moot.errors import AgentBadReply, AgentError, AgentTimeout, AgentUnavailable, UnknownAgentSpec

if TYPE_CHECKING:
    from moot.agents.acp import AcpAgent
    from moot.agents.anthropic_agent import AnthropicAgent
    from moot.agents.cmd import CommandAgent
    from moot.agents.human import HumanAgent
    from moot.agents.local import LocalAgent
    from moot.agents.openai_compat import OllamaAgent, OpenAIAgent

_LAZY = {
    "AcpAgent": "moot.agents.acp",
    "AnthropicAgent": "moot.agents.anthropic_agent",
    "CommandAgent": "moot.agents.cmd",
    "HumanAgent": "moot.agents.human",
    "LocalAgent": "moot.agents.local",
    "OllamaAgent": "moot.agents.openai_compat",
    "OpenAIAgent": "moot.agents.openai_compat",
}

__all__ = [
    "ENTRY_POINT_GROUP",
    "AcpAgent",
    "Agent",
    "AgentBadReply",
    "AgentError",
    "AgentReply",
    "AgentRequest",
    "AgentTimeout",
    "AgentUnavailable",
    "AnthropicAgent",
    "BackendStatus",
    "CommandAgent",
    "FunctionAgent",
    "HumanAgent",
    "LocalAgent",
    "OllamaAgent",
    "OpenAIAgent",
    "RetryPolicy",
    "ScriptAgent",
    "ScriptedReply",
    "UnknownAgentSpec",
    "call_with_retries",
    "list_backends",
    "resolve_agent",
    "valid_forms",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'moot.agents' has no attribute {name!r}")

"""The participant interface: one request in, one reply out, and the errors in between.

Every backend (local model, OpenAI-compatible server, Anthropic, a command, a person, a script)
is an :class:`Agent` with a single coroutine, :meth:`Agent.reply`. What a backend can do is told
by class attributes, so the engine can ask without calling it.

Exceptions::

    AgentError                 a participant could not produce a usable reply
    ├── AgentUnavailable       it cannot be reached or set up: server down, key or model missing
    ├── AgentTimeout           no reply within the request's timeout_s
    ├── AgentBadReply          a reply arrived but is unusable (empty, missing the forced tool call)
    ├── AgentContextExceeded   the prompt did not fit the model's context, whose size the server reported
    └── UnknownAgentSpec       the spec string names no backend or is malformed (also a ValueError)

``AgentError.retryable`` marks transient failures (timeouts, connection errors, HTTP 429 and 5xx);
:func:`call_with_retries` retries exactly those with exponential backoff and jitter.
"""

from __future__ import annotations

import asyncio
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")

# A reachability probe before a run. A server that takes the connection but answers later is busy (a local
# model server generating for someone else answers nothing until it is done), not down: see ``busy_server``.
PROBE_TIMEOUT_S = 5.0


class AgentRequest(BaseModel):
    """What the engine asks of a participant for one turn."""

    model_config = ConfigDict(frozen=True)

    prompt: str
    system: str | None = None
    # The turn model's JSON Schema: backends that can constrain decoding do; the others show it.
    json_schema: dict[str, Any] | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0)
    # For backends that sample with a seed: independent samples of one prompt need different seeds.
    seed: int | None = None
    timeout_s: float = Field(default=120.0, gt=0)
    role: str = ""  # who is speaking, e.g. "critic"
    protocol: str = ""  # e.g. "critique"


class AgentReply(BaseModel):
    """One participant's answer, with what it cost."""

    model_config = ConfigDict(frozen=True)

    text: str
    prompt_tokens: int = 0  # 0 where the backend reports no usage (commands, people, scripts)
    completion_tokens: int = 0
    latency_s: float
    model: str  # the resolved model id, e.g. "gpt-4o-mini-2024-07-18" or "local:SmolLM2-135M-Instruct.Q4_1"
    attempts: int = 1
    finish_reason: str | None = None  # "stop", "length" (truncated by max_tokens), "tool_use", ...


class AgentError(Exception):
    """A participant could not produce a usable reply; the message is one sentence naming the fix."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s  # what the server asked for (Retry-After), if anything
        self.attempts = 1


class AgentUnavailable(AgentError):
    """The participant cannot be reached or set up: unreachable server, missing key, missing model."""


class AgentTimeout(AgentError):
    """No reply within the request's ``timeout_s``."""


class AgentBadReply(AgentError):
    """A reply arrived but cannot be used."""


class AgentContextExceeded(AgentError):
    """The server refused the prompt as longer than the model's context of ``context_tokens``; the agent's
    :meth:`Agent.bounds` already know it, so a request built to them fits."""

    def __init__(self, message: str, *, context_tokens: int) -> None:
        super().__init__(message)
        self.context_tokens = context_tokens


class UnknownAgentSpec(AgentError, ValueError):
    """The agent spec string names no known backend or is malformed."""


DEFAULT_TURN_TOKENS = 4096  # completion tokens per turn for a full-size model: several paragraphs, full lists
DEFAULT_CONTEXT_TOKENS = 32_768  # prompts are fitted into this (long sources and histories are cut)
COMPACT_CONTEXT_TOKENS = 4096  # a model with no more context than this is a small one: compact turns


@dataclass(frozen=True)
class TurnBounds:
    """What one participant's turns must fit; the drivers size each request and its schema by it.

    ``compact`` is for small models (the embedded one, any local GGUF): their drivers' own short token
    budgets and character caps on text fields, so the JSON of a turn ends before max_tokens cuts it.
    Everyone else gets only the protocol seed's limits and these generous defaults.
    """

    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    max_tokens: int | None = None  # completion tokens per turn; None: the driver's default for this size
    compact: bool = False

    def turn_tokens(self, compact_default: int) -> int:
        """The completion budget of a turn whose small-model budget is ``compact_default``."""
        return self.max_tokens or (compact_default if self.compact else DEFAULT_TURN_TOKENS)

    @classmethod
    def for_context(cls, context_tokens: int) -> TurnBounds:
        """The bounds of a model with this context window: compact turns for a small one."""
        return cls(context_tokens=context_tokens, compact=context_tokens <= COMPACT_CONTEXT_TOKENS)


class Agent(ABC):
    """A participant. Subclasses implement :meth:`reply`; capabilities are class attributes."""

    name: ClassVar[str] = "agent"  # the spec prefix, e.g. "openai"
    turn_bounds: ClassVar[TurnBounds] = TurnBounds()  # what its turns must fit (see TurnBounds)
    supports_schema: ClassVar[bool] = False  # enforces request.json_schema (grammar, json_schema, forced tool)
    needs_network: ClassVar[bool] = False
    interactive: ClassVar[bool] = False  # a person answers

    @abstractmethod
    async def reply(self, request: AgentRequest) -> AgentReply:
        """Answer one turn or raise an :class:`AgentError`."""

    def bounds(self) -> TurnBounds:
        """What its turns must fit now: the backend's :attr:`turn_bounds`, or what it learnt of its model."""
        return self.turn_bounds

    def price_usd(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """What a call with these token counts costs in USD: 0 for local models, None when unknown."""
        return None

    async def probe(self) -> None:
        """One cheap check that the participant can be reached, before a record is created.

        Raises :class:`AgentUnavailable` naming the fix. The default checks nothing: local backends
        are checked when they are built; network backends ask their server once, without a completion.
        """
        return None

    async def aclose(self) -> None:
        """Release connections or processes; the default has nothing to release."""
        return None

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; ``sleep`` and ``random`` are injectable for tests."""

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)
    random: Callable[[], float] = field(default=random.random, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def delay_s(self, failed_attempts: int, retry_after_s: float | None = None) -> float:
        """Delay before the next attempt: half fixed, half random ("equal jitter"), capped.

        Half of the exponential step is kept so delays really grow; the random half spreads
        clients that failed together. A server's Retry-After is honoured when it is longer.
        """
        step = min(self.max_delay_s, self.base_delay_s * 2.0 ** (failed_attempts - 1))
        delay = step / 2 + self.random() * step / 2
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, self.max_delay_s))
        return delay


NO_RETRY = RetryPolicy(max_attempts=1)


async def call_with_retries(attempt: Callable[[], Awaitable[T]], policy: RetryPolicy) -> tuple[T, int]:
    """Run ``attempt`` until it succeeds, retrying retryable AgentErrors; return (result, attempts).

    The error that ends the loop carries ``attempts`` and says how many were made.
    """
    made = 0
    while True:
        made += 1
        try:
            return await attempt(), made
        except AgentError as err:
            if not err.retryable or made >= policy.max_attempts:
                err.attempts = made
                if made > 1:
                    err.args = (f"{err.args[0]} (gave up after {made} attempts)", *err.args[1:])
                raise
            await policy.sleep(policy.delay_s(made, err.retry_after_s))


def schema_instruction(schema: dict[str, Any]) -> str:
    """The format instruction for participants that read the schema instead of being held to it."""
    return "Reply with one JSON object and nothing else; it must match this JSON Schema:\n" + json.dumps(
        schema, indent=2, ensure_ascii=False
    )


def chat_messages(request: AgentRequest, *, extra_system: str | None = None) -> list[dict[str, str]]:
    """The request as chat messages: an optional system message, then the user prompt."""
    system = "\n\n".join(part for part in (request.system, extra_system) if part)
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": request.prompt})
    return messages


def prompt_as_text(request: AgentRequest) -> str:
    """The whole request as one text, for participants that read plain text (commands, people)."""
    parts = [request.system, request.prompt]
    if request.json_schema is not None:
        parts.append(schema_instruction(request.json_schema))
    return "\n\n".join(part for part in parts if part)

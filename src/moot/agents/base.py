"""The participant interface: one request in, one reply out, and the errors in between.

Every backend (local model, OpenAI-compatible server, Anthropic, a command, a person, a script)
is an :class:`Agent` with a single coroutine, :meth:`Agent.reply`. What a backend can do is told
by class attributes, so the engine can ask without calling it.

Its errors are :class:`moot.errors.AgentError` and the kinds drawn under it there (unavailable, timeout,
bad reply, context exceeded, unknown spec). ``AgentError.retryable`` marks transient failures (timeouts,
connection errors, HTTP 429 and 5xx); :func:`call_with_retries` retries exactly those with exponential backoff
and jitter.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from moot.agents.pricing import TokenPrice
from moot.errors import AgentError

T = TypeVar("T")

# A reachability probe before a run. A server that takes the connection but answers later is busy (a local
# model server generating for someone else answers nothing until it is done), not down: see ``busy_server``.
PROBE_TIMEOUT_S = 5.0


class AgentRequest(BaseModel):
    """What the engine asks of a participant for one turn.

    **Caching.** A deliberation sends each role a growing transcript every turn, and providers read a prefix
    they have already seen at a discount. A driver that builds its requests *prefix-stable* says so with
    ``prefix_ends``; the contract, for every request of one ``cache_key`` (the requests that share a prefix):

    - ``system`` holds the rules and the fixed context, the same text on every request;
    - ``prompt[:prefix_ends[-1]]`` is the stable prefix: fixed context and then the transcript so far, in
      append-only order, so that the next request's prefix starts with this one's. ``prefix_ends`` are the
      offsets where its parts end (a turn each, say): the next request cuts its prefix at the same places
      and adds parts after them;
    - ``prompt[prefix_ends[-1]:]`` is the per-turn instruction (a repair appends its notes there);
    - ``json_schema`` stays the same across the key's requests where the driver can keep it so (a hosted
      model's schema comes before the messages in the provider's prefix).

    ``prefix_ends=None`` (the default) marks nothing: such a request is sent as it always was. An empty
    tuple marks only ``system`` as stable. Build a marked request with :meth:`with_prefix`. The built-in
    drivers build their turns' requests so; the schema stays the same, and the roles share a prefix, for a
    role whose agent reports :attr:`TurnBounds.prefix_cache`.

    What the backends do with it: Anthropic's requests carry a ``cache_control`` breakpoint on ``system`` and
    one at the end of the prefix, whose parts become content blocks; OpenAI caches every prompt's prefix on
    its own, and gets ``cache_key`` as its ``prompt_cache_key`` so that requests sharing a prefix meet the same
    cache. The engine gives a request without a ``cache_key`` its role's in the debate (:func:`debate_cache_key`);
    a driver whose roles share one prefix (the rules in ``system``, the role named in the instruction) gives
    them one key. Anthropic reads tools, then system, then messages as one prefix, so the forced tool of a
    prefix-stable request names no speaker.
    """

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
    prefix_ends: tuple[int, ...] | None = None  # where the stable prefix's parts end in prompt (see above)
    cache_key: str | None = None  # the requests that meet one provider cache (default: a role of a debate)

    @model_validator(mode="after")
    def _prefix_inside_prompt(self) -> AgentRequest:
        ends = self.prefix_ends or ()
        if any(end <= before for before, end in zip((0, *ends), ends, strict=False)) or any(
            end > len(self.prompt) for end in ends
        ):
            raise ValueError("prefix_ends must rise strictly and stay within the prompt")
        return self

    @classmethod
    def with_prefix(cls, parts: Sequence[str], instruction: str, **fields: Any) -> AgentRequest:
        """A prefix-stable request: ``parts`` (fixed context, then each turn of the transcript, in order) make
        the stable prefix, ``instruction`` follows; ``fields`` are the other fields (``system`` included)."""
        kept = [part for part in parts if part]
        return cls(
            prompt="".join(kept) + instruction, prefix_ends=tuple(itertools.accumulate(map(len, kept))), **fields
        )

    @property
    def prefix_stable(self) -> bool:
        """Whether the driver built this request to the caching contract above."""
        return self.prefix_ends is not None

    def prompt_parts(self) -> tuple[list[str], str]:
        """The stable prefix's parts (empty when nothing is marked) and the instruction after them.

        A copy whose prompt changed (``model_copy`` does not validate) keeps only the ends still inside it.
        """
        parts, start = [], 0
        for end in self.prefix_ends or ():
            if start < end <= len(self.prompt):
                parts.append(self.prompt[start:end])
                start = end
        return parts, self.prompt[start:]


class AgentReply(BaseModel):
    """One participant's answer, with what it cost.

    ``prompt_tokens`` counts the whole prompt, whatever the provider's cache did with it; ``cached_tokens`` of
    them were read from the provider's cache and ``cache_write_tokens`` written to it (both priced at the
    price table's cache rates, see :meth:`Agent.price_usd`).
    """

    model_config = ConfigDict(frozen=True)

    text: str
    prompt_tokens: int = 0  # 0 where the backend reports no usage (commands, people, scripts)
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens read from the provider's cache
    cache_write_tokens: int = 0  # prompt tokens written to it (Anthropic charges these above the input price)
    latency_s: float
    model: str  # the resolved model id, e.g. "gpt-4o-mini-2024-07-18" or "local:SmolLM2-135M-Instruct.Q4_1"
    attempts: int = 1
    finish_reason: str | None = None  # "stop", "length" (truncated by max_tokens), "tool_use", ...


DEFAULT_TURN_TOKENS = 4096  # completion tokens per turn for a full-size model: several paragraphs, full lists
DEFAULT_CONTEXT_TOKENS = 32_768  # prompts are fitted into this (long sources and histories are cut)
COMPACT_CONTEXT_TOKENS = 4096  # a model with no more context than this is a small one: compact turns


@dataclass(frozen=True)
class TurnBounds:
    """What one participant's turns must fit; the drivers size each request and its schema by it.

    ``compact`` is for small models (the embedded one, any local GGUF): their drivers' own short token
    budgets and character caps on text fields, so the JSON of a turn ends before max_tokens cuts it.
    Everyone else gets only the protocol seed's limits and these generous defaults.

    ``prefix_cache`` is for a model server that reads a prompt's prefix it has seen from a cache, the reply
    schema first (OpenAI's and Anthropic's APIs, and the servers behind the OpenAI-compatible agent): its
    drivers keep a role's schema the same across its turns and build every role's requests on one prefix
    (see :class:`AgentRequest`). Everyone else (a grammar-decoded small model, a person's form, a command)
    gets a schema narrowed to what is legal now.
    """

    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    max_tokens: int | None = None  # completion tokens per turn; None: the driver's default for this size
    compact: bool = False
    prefix_cache: bool = False

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
    # The price moot.toml's [prices] gives this agent's spec (set when the agent is chosen); wins over the table.
    price: TokenPrice | None = None

    @abstractmethod
    async def reply(self, request: AgentRequest) -> AgentReply:
        """Answer one turn or raise an :class:`AgentError`."""

    def bounds(self) -> TurnBounds:
        """What its turns must fit now: the backend's :attr:`turn_bounds`, or what it learnt of its model."""
        return self.turn_bounds

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        """What a call with these token counts costs in USD: 0 for local models, None when unknown.

        ``cached_tokens`` and ``cache_write_tokens`` are parts of ``prompt_tokens`` (see :class:`AgentReply`),
        priced at the cache rates. They are passed only for replies that report them, so a backend whose
        replies never do may keep the two-argument form. The default is the configured :attr:`price`.
        """
        return (
            None
            if self.price is None
            else self.price.usd(prompt_tokens, completion_tokens, cached_tokens=cached_tokens)
        )

    def reply_cost(self, reply: AgentReply) -> tuple[float | None, float | None]:
        """What ``reply`` cost in USD, and what the same call would have cost with no provider cache."""
        uncached = self.price_usd(reply.prompt_tokens, reply.completion_tokens)
        if not (reply.cached_tokens or reply.cache_write_tokens):
            return uncached, uncached
        cost = self.price_usd(
            reply.prompt_tokens,
            reply.completion_tokens,
            cached_tokens=reply.cached_tokens,
            cache_write_tokens=reply.cache_write_tokens,
        )
        return cost, uncached

    def expected_seconds(self, request: AgentRequest) -> float | None:
        """How long ``request`` may take at the speed this agent measured on this machine, or ``None`` (unknown).

        moot's default turn timeout stretches to twice this (``Limits.turn_timeout_stretches``): an agent that
        computes its reply here (the embedded model) is slow on a busy machine, not stuck. A model behind an
        API says nothing, and keeps the timeout as set.
        """
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


def debate_cache_key(debate: str, role: str) -> str:
    """The provider cache key of ``role`` in ``debate`` (its record's path): stable across the debate's runs,
    and a digest, so that it tells the provider neither."""
    return "moot-" + hashlib.sha256(f"{debate}\n{role}".encode()).hexdigest()[:32]


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

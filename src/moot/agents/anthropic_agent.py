"""Anthropic's Messages API through the official SDK.

A schema becomes one tool whose ``input_schema`` is the turn's schema, and ``tool_choice`` forces
the model to call it; the reply text is that call's input as JSON. The installed SDK's
``messages.create`` takes no temperature, so ``request.temperature`` is not sent.

A prefix-stable request (see :class:`~moot.agents.base.AgentRequest`) is sent with two of the four
``cache_control`` breakpoints the API allows: on the system block, and on the last part of the prompt's
stable prefix. Each part is a content block of its own, so that the breakpoint of the role's previous
request falls on a block boundary of this one, where Anthropic looks for it (up to 20 blocks back). The
usage's ``input_tokens`` counts only what follows the last cache hit or write; the reply's prompt tokens are
all three counts together.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

import anthropic

from moot.agents._http import LoopClient, RequestDeadline, busy_server, error_for_status
from moot.agents.base import (
    PROBE_TIMEOUT_S,
    Agent,
    AgentReply,
    AgentRequest,
    RetryPolicy,
    TurnBounds,
    call_with_retries,
)
from moot.agents.pricing import table_price_usd
from moot.errors import AgentBadReply, AgentUnavailable, UnknownAgentSpec

if TYPE_CHECKING:
    import httpx2
    from anthropic.types import Message, MessageParam, TextBlockParam

TURN_TOOL = "submit_turn"
DEFAULT_MAX_TOKENS = 1024  # the Messages API requires max_tokens


class AnthropicAgent(Agent):
    """A Claude model."""

    name = "anthropic"
    turn_bounds = TurnBounds(prefix_cache=True)
    supports_schema = True
    needs_network = True

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise AgentUnavailable("ANTHROPIC_API_KEY is not set: export your Anthropic API key")
        self.model = model
        self.retry = retry or RetryPolicy()
        # Retries are ours (counted in the reply), so the SDK's own are off.
        self._clients = LoopClient(
            lambda: anthropic.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=0, http_client=http_client)
        )
        self.where = str(self._clients.first.base_url).rstrip("/")

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        if self.price is not None:
            return super().price_usd(prompt_tokens, completion_tokens, cached_tokens=cached_tokens)
        return table_price_usd(
            self.model,
            prompt_tokens,
            completion_tokens,
            cached_tokens=cached_tokens,
            cache_write_tokens=cache_write_tokens,
            provider="anthropic",
        )

    async def probe(self) -> None:
        """List one model: it costs nothing and proves both the connection and the key."""
        try:
            await self._clients.get().with_options(timeout=PROBE_TIMEOUT_S).models.list(limit=1)
        except anthropic.APIConnectionError as exc:  # also the probe's timeout
            if not busy_server(exc):
                raise AgentUnavailable(f"cannot reach {self.where}: check the network connection") from exc
        except anthropic.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise AgentUnavailable(
                    f"{self.where} refused the key (HTTP {exc.status_code}): check ANTHROPIC_API_KEY"
                ) from exc

    async def reply(self, request: AgentRequest) -> AgentReply:
        start = time.perf_counter()
        deadline = RequestDeadline(request)
        message, attempts = await call_with_retries(lambda: self._create(request, deadline), self.retry)
        text = self._text(message, forced_tool=request.json_schema is not None)
        usage = message.usage
        read, written = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
        return AgentReply(
            text=text,
            prompt_tokens=usage.input_tokens + read + written,
            completion_tokens=usage.output_tokens,
            cached_tokens=read,
            cache_write_tokens=written,
            latency_s=time.perf_counter() - start,
            model=message.model,
            attempts=attempts,
            finish_reason=message.stop_reason,
        )

    async def aclose(self) -> None:
        await self._clients.close()

    async def _create(self, request: AgentRequest, deadline: RequestDeadline) -> Message:
        waited = deadline.next_timeout(self.where)
        options: dict[str, Any] = {"timeout": waited}
        if request.system:
            stable = request.prefix_stable
            options["system"] = [_text_block(request.system, stable)] if stable else request.system
        if request.json_schema is not None:
            # The tool comes first in the cached prefix: a prefix-stable request's names no speaker, so that roles
            # whose requests share a prefix share the cache too (the instruction says who speaks).
            speaker = f" as {request.role}" if request.role and not request.prefix_stable else ""
            debate = f" in the {request.protocol} deliberation" if request.protocol else ""
            options["tools"] = [
                {
                    "name": TURN_TOOL,
                    "description": f"Submit your turn{speaker}{debate}.",
                    "input_schema": request.json_schema,
                }
            ]
            options["tool_choice"] = {"type": "tool", "name": TURN_TOOL}
        user: MessageParam = {"role": "user", "content": _content(request)}
        try:
            message: Message = await self._clients.get().messages.create(
                model=self.model,
                max_tokens=request.max_tokens or DEFAULT_MAX_TOKENS,
                messages=[user],
                **options,
            )
            return message
        except anthropic.APITimeoutError as exc:
            raise deadline.timed_out(self.where, waited) from exc
        except anthropic.APIConnectionError as exc:
            raise AgentUnavailable(f"cannot reach {self.where}: check the network connection", retryable=True) from exc
        except anthropic.APIStatusError as exc:
            raise error_for_status(
                exc.status_code,
                exc.message,
                where=self.where,
                model=self.model,
                key_env="ANTHROPIC_API_KEY",
                headers=exc.response.headers,
            ) from exc

    def _text(self, message: Message, *, forced_tool: bool) -> str:
        if forced_tool:
            for block in message.content:
                if block.type == "tool_use" and block.name == TURN_TOOL:
                    return json.dumps(block.input, ensure_ascii=False)
            raise AgentBadReply(
                f"model '{self.model}' answered without calling the {TURN_TOOL} tool "
                f"(stop reason {message.stop_reason}): raise max_tokens or retry"
            )
        text = "".join(block.text for block in message.content if block.type == "text")
        if not text:
            raise AgentBadReply(
                f"model '{self.model}' returned an empty reply (stop reason {message.stop_reason}): "
                "raise max_tokens or rephrase the prompt"
            )
        return text


def _text_block(text: str, breakpoint: bool) -> TextBlockParam:
    block: TextBlockParam = {"type": "text", "text": text}
    if breakpoint:
        block["cache_control"] = {"type": "ephemeral"}  # the default five minutes, which the table's write rate prices
    return block


def _content(request: AgentRequest) -> str | list[TextBlockParam]:
    """The user message: the prompt as it is, or a prefix-stable one's parts with a breakpoint after the last."""
    parts, instruction = request.prompt_parts()
    if not parts:
        return request.prompt
    blocks = [_text_block(part, index == len(parts) - 1) for index, part in enumerate(parts)]
    return [*blocks, _text_block(instruction, False)] if instruction else blocks


def from_spec(rest: str) -> AnthropicAgent:
    """``anthropic:MODEL``."""
    model = rest.strip()
    if not model:
        raise UnknownAgentSpec("anthropic needs a model name: use anthropic:MODEL, e.g. anthropic:claude-sonnet-4-6")
    return AnthropicAgent(model)

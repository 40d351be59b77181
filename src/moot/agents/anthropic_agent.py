"""Anthropic's Messages API through the official SDK.

A schema becomes one tool whose ``input_schema`` is the turn's schema, and ``tool_choice`` forces
the model to call it; the reply text is that call's input as JSON. The installed SDK's
``messages.create`` takes no temperature, so ``request.temperature`` is not sent.
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
    AgentBadReply,
    AgentReply,
    AgentRequest,
    AgentUnavailable,
    RetryPolicy,
    UnknownAgentSpec,
    call_with_retries,
)
from moot.agents.pricing import table_price_usd

if TYPE_CHECKING:
    import httpx2
    from anthropic.types import Message

TURN_TOOL = "submit_turn"
DEFAULT_MAX_TOKENS = 1024  # the Messages API requires max_tokens


class AnthropicAgent(Agent):
    """A Claude model."""

    name = "anthropic"
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

    def price_usd(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        return table_price_usd(self.model, prompt_tokens, completion_tokens, provider="anthropic")

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
        return AgentReply(
            text=text,
            prompt_tokens=message.usage.input_tokens,
            completion_tokens=message.usage.output_tokens,
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
            options["system"] = request.system
        if request.json_schema is not None:
            speaker = f" as {request.role}" if request.role else ""
            debate = f" in the {request.protocol} deliberation" if request.protocol else ""
            options["tools"] = [
                {
                    "name": TURN_TOOL,
                    "description": f"Submit your turn{speaker}{debate}.",
                    "input_schema": request.json_schema,
                }
            ]
            options["tool_choice"] = {"type": "tool", "name": TURN_TOOL}
        try:
            message: Message = await self._clients.get().messages.create(
                model=self.model,
                max_tokens=request.max_tokens or DEFAULT_MAX_TOKENS,
                messages=[{"role": "user", "content": request.prompt}],
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


def from_spec(rest: str) -> AnthropicAgent:
    """``anthropic:MODEL``."""
    model = rest.strip()
    if not model:
        raise UnknownAgentSpec("anthropic needs a model name: use anthropic:MODEL, e.g. anthropic:claude-sonnet-4-6")
    return AnthropicAgent(model)

"""Any OpenAI-compatible chat-completions server: OpenAI itself, llama.cpp's server, vLLM, Ollama.

A schema is sent as ``response_format={"type": "json_schema", ...}``. Servers that refuse that form
(llama-cpp-python's server answers 500) get ``{"type": "json_object", "schema": ...}`` instead, the
form llama.cpp turns into a grammar, plus the schema in the system message. A prompt longer than the model's
context (a small local model) is refused with the context's size, and moot sizes its prompts and turns to
it. Both are remembered (:mod:`moot.agents.server_memory`), so no later request, of this debate, another one
or another run, is one the server is known to refuse.

OpenAI caches every prompt's prefix on its own (1,024 tokens or more); a request to OpenAI carries the
request's ``cache_key`` as ``prompt_cache_key``, so that requests sharing a prefix meet the cache they fill. The
usage's ``prompt_tokens_details`` says how many prompt tokens came from the cache (OpenAI, and servers such as
vLLM and llama.cpp that report it) and, where the provider charges for it, how many were written to it.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

import httpx2  # openai's own HTTP client
import openai
from openai.types.chat import ChatCompletion

from moot.agents import server_memory
from moot.agents._http import LoopClient, RequestDeadline, busy_server, error_for_status
from moot.agents._lanes import LanedTransport
from moot.agents.base import (
    DEFAULT_CONTEXT_TOKENS,
    PROBE_TIMEOUT_S,
    Agent,
    AgentReply,
    AgentRequest,
    RetryPolicy,
    TurnBounds,
    call_with_retries,
    chat_messages,
    schema_instruction,
)
from moot.agents.ollama import ollama_host
from moot.agents.policy import NO_KEY, split_model_url
from moot.agents.pricing import runs_locally, table_price_usd
from moot.errors import AgentBadReply, AgentContextExceeded, AgentError, AgentUnavailable, UnknownAgentSpec

OPENAI_URL = "https://api.openai.com/v1"


class OpenAIAgent(Agent):
    """A model behind ``/v1/chat/completions``."""

    name = "openai"
    turn_bounds = TurnBounds(prefix_cache=True)
    supports_schema = True
    needs_network = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url == OPENAI_URL:
                raise AgentUnavailable(
                    "OPENAI_API_KEY is not set: export your key, or pass openai:MODEL@URL to use a local server"
                )
            key = NO_KEY  # local servers ignore the key, but the SDK insists on one
        self.retry = retry or RetryPolicy()

        def client() -> openai.AsyncOpenAI:
            # Many debates at once against one server stay cheap per request (see _lanes). Retries are ours
            # (counted in the reply), so the SDK's own are off.
            http = http_client or openai.DefaultAsyncHttpxClient(transport=LanedTransport())
            return openai.AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0, http_client=http)

        self._clients = LoopClient(client)

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        if self.price is not None:
            return super().price_usd(prompt_tokens, completion_tokens, cached_tokens=cached_tokens)
        if runs_locally(self.base_url):
            return 0.0
        provider = "openai" if self.base_url == OPENAI_URL else None  # elsewhere the table matches by URL
        return table_price_usd(
            self.model,
            prompt_tokens,
            completion_tokens,
            cached_tokens=cached_tokens,
            cache_write_tokens=cache_write_tokens,
            provider=provider,
            api_url=self.base_url,
        )

    def bounds(self) -> TurnBounds:
        """Full-size turns, unless the server reported a smaller context for this model."""
        known = server_memory.context_tokens(self.base_url, self.model)
        return (
            TurnBounds.for_context(known) if known is not None and known < DEFAULT_CONTEXT_TOKENS else self.turn_bounds
        )

    @property
    def json_schema_refused(self) -> bool:
        """Whether this agent's server is known to refuse the json_schema response format."""
        return server_memory.refuses_json_schema(self.base_url)

    async def reply(self, request: AgentRequest) -> AgentReply:
        start = time.perf_counter()
        deadline = RequestDeadline(request)
        completion, attempts = await call_with_retries(lambda: self._complete(request, deadline), self.retry)
        if not completion.choices:
            raise AgentBadReply(f"{self.base_url} answered with no choices: check the server's logs")
        choice = completion.choices[0]
        text = choice.message.content
        if not text:
            raise AgentBadReply(
                f"model '{self.model}' returned an empty reply (finish reason {choice.finish_reason}): "
                "raise max_tokens or rephrase the prompt"
            )
        usage = completion.usage
        if usage and choice.finish_reason == "length" and usage.completion_tokens < (request.max_tokens or 0):
            # Cut before its max_tokens: the model ran out of context (llama.cpp and others stop there silently,
            # refusing only a prompt that alone is too long), so prompt and completion are the whole context.
            filled = usage.prompt_tokens + usage.completion_tokens
            if filled < self.bounds().context_tokens:
                server_memory.remember_context(self.base_url, self.model, filled)
        details = usage.prompt_tokens_details if usage else None
        return AgentReply(
            text=text,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            cached_tokens=_count(details, "cached_tokens"),
            cache_write_tokens=_count(details, "cache_write_tokens"),
            latency_s=time.perf_counter() - start,
            model=completion.model or self.model,
            attempts=attempts,
            finish_reason=choice.finish_reason,
        )

    async def aclose(self) -> None:
        await self._clients.close()

    async def _complete(self, request: AgentRequest, deadline: RequestDeadline) -> ChatCompletion:
        schema = request.json_schema
        if schema is not None and not self.json_schema_refused:
            response_format = {"type": "json_schema", "json_schema": {"name": "turn", "schema": schema}}
            try:
                return await self._create(request, deadline, chat_messages(request), response_format)
            except openai.APIStatusError as exc:
                if not _refuses_json_schema(exc):
                    raise self._error(exc) from exc
                server_memory.remember_json_schema_refusal(self.base_url)
        try:
            if schema is None:
                return await self._create(request, deadline, chat_messages(request), None)
            fallback = {"type": "json_object", "schema": schema}
            # The server holds the reply to the schema as a grammar; the schema's text helps a model read the
            # fields, but a small context has no room for it (the embedded model gets the grammar alone too).
            extra = None if self.bounds().compact else schema_instruction(schema)
            return await self._create(request, deadline, chat_messages(request, extra_system=extra), fallback)
        except openai.APIStatusError as exc:
            raise self._error(exc) from exc

    async def _create(
        self,
        request: AgentRequest,
        deadline: RequestDeadline,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None,
    ) -> ChatCompletion:
        waited = deadline.next_timeout(self.base_url)
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.seed is not None:
            body["seed"] = request.seed
        if response_format is not None:
            body["response_format"] = response_format
        if request.cache_key is not None and self.base_url == OPENAI_URL:  # another server may refuse the field
            body["prompt_cache_key"] = request.cache_key
        try:
            # The SDK's documented request for a body already in wire form: chat.completions.create would walk
            # the messages through its typed transform first, which costs more CPU than the rest of the request.
            completion = await self._clients.get().post(
                "/chat/completions", cast_to=ChatCompletion, body=body, options={"timeout": waited}
            )
        except json.JSONDecodeError as exc:  # the SDK parses a JSON content type without catching
            raise AgentBadReply(
                f"{self.base_url} answered with a body that is not JSON ({exc.msg}): check the server or a proxy before it",
                retryable=True,
            ) from exc
        except openai.APITimeoutError as exc:
            raise deadline.timed_out(self.base_url, waited) from exc
        except openai.APIConnectionError as exc:
            if isinstance(exc.__cause__, httpx2.RemoteProtocolError):  # reached, but the answer broke off
                raise AgentUnavailable(
                    f"{self.base_url} closed the connection before a whole answer ({exc.__cause__}): "
                    "check the server's log, or a proxy before it",
                    retryable=True,
                ) from exc
            raise AgentUnavailable(self._unreachable(), retryable=True) from exc
        # Any other content type comes back as text; the SDK builds its models without validating them.
        if not (isinstance(completion, ChatCompletion) and _has_messages(completion)):
            raise AgentBadReply(
                f"{self.base_url} answered with something other than a chat completion: check the URL and the server",
                retryable=True,
            )
        return completion

    def _unreachable(self) -> str:
        if self.base_url == OPENAI_URL:
            return f"cannot reach {self.base_url}: check the network, or pass openai:MODEL@URL for a local server"
        return f"cannot reach {self.base_url}: start the server there, or correct the URL"

    async def probe(self) -> None:
        """List the server's models once: any HTTP answer but a refused key means it is there."""
        try:
            await self._clients.get().with_options(timeout=PROBE_TIMEOUT_S).models.list()
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise self._error(exc) from exc
        except openai.APIConnectionError as exc:  # also the probe's timeout
            if not busy_server(exc):
                raise AgentUnavailable(self._unreachable()) from exc
        except openai.APIResponseValidationError:
            pass  # it answered, with something other than a model list: reachable

    def _error(self, exc: openai.APIStatusError) -> AgentError:
        context = _reported_context(exc)
        if context is not None:
            if context < self.bounds().context_tokens:  # news: a context already known is not written again
                server_memory.remember_context(self.base_url, self.model, context)
            return AgentContextExceeded(
                f"{self.base_url} refused the prompt as longer than the {context}-token context of '{self.model}': "
                "moot sizes the next prompts to it",
                context_tokens=context,
            )
        return error_for_status(
            exc.status_code,
            exc.message,
            where=self.base_url,
            model=self.model,
            key_env="OPENAI_API_KEY",
            headers=exc.response.headers,
        )


class OllamaAgent(OpenAIAgent):
    """An Ollama server through its OpenAI-compatible API; only the reported name differs."""

    name = "ollama"

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        return 0.0  # a local model server


# OpenAI's, vLLM's and llama-cpp-python's wording: "This model's maximum context length is 2048 tokens. ..."
_CONTEXT_LENGTH = re.compile(r"maximum context length is (\d+) tokens")


def _reported_context(exc: openai.APIStatusError) -> int | None:
    """The context window a refusal of a too-long prompt names, if that is what this error is."""
    found = _CONTEXT_LENGTH.search(str(exc.message)) if exc.status_code == 400 else None
    return int(found.group(1)) if found else None


def _refuses_json_schema(exc: openai.APIStatusError) -> bool:
    """Whether an error answer is about the json_schema response format rather than anything else.

    llama-cpp-python's server answers such a request with HTTP 500 naming ``response_format``.
    """
    if exc.status_code not in (400, 415, 422, 500):
        return False
    said = f"{exc.message} {json.dumps(exc.body, default=str)}".lower()
    return "response_format" in said or "json_schema" in said


def from_spec(rest: str, *, api_key: str | None = None) -> OpenAIAgent:
    """``openai:MODEL`` or ``openai:MODEL@http://HOST:PORT/v1``; ``api_key`` (a door's policy gives it) replaces
    $OPENAI_API_KEY."""
    model, url = split_model_url(rest)
    if not model:
        raise UnknownAgentSpec("openai needs a model name: use openai:MODEL[@BASE_URL], e.g. openai:gpt-4o-mini")
    return OpenAIAgent(model, base_url=url, api_key=api_key)


def ollama_from_spec(rest: str) -> OllamaAgent:
    """``ollama:MODEL``: an OpenAI-compatible server on Ollama's port, no key needed."""
    model = rest.strip()
    if not model:
        raise UnknownAgentSpec("ollama needs a model name: use ollama:MODEL, e.g. ollama:llama3.2")
    return OllamaAgent(model, base_url=f"{ollama_host()}/v1", api_key="ollama")


def _count(details: object, name: str) -> int:
    """A token count of the usage's details, 0 where the server reports none (or not as a whole number)."""
    value = getattr(details, name, None)
    return value if isinstance(value, int) and value > 0 else 0


def _has_messages(completion: ChatCompletion) -> bool:
    """Whether the completion has the shape :meth:`OpenAIAgent.reply` reads (a list of choices with messages)."""
    choices: object = completion.choices
    return isinstance(choices, list) and all(hasattr(getattr(c, "message", None), "content") for c in choices)

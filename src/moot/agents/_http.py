"""HTTP status codes to the agent error tree, shared by the OpenAI and Anthropic backends."""

from __future__ import annotations

from collections.abc import Mapping

from moot.agents.base import AgentError, AgentTimeout, AgentUnavailable


def one_line(text: str, limit: int = 200) -> str:
    """Collapse whitespace and keep the end short enough for a one-sentence message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from a Retry-After header given in seconds (HTTP dates are ignored)."""
    value = (headers or {}).get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def error_for_status(
    status: int,
    detail: str,
    *,
    where: str,
    model: str,
    key_env: str,
    headers: Mapping[str, str] | None = None,
) -> AgentError:
    """The AgentError for an HTTP error answer; 408, 429 and 5xx are retryable."""
    detail = one_line(detail)
    if status == 401:
        return AgentUnavailable(f"{where} rejected the API key (HTTP 401): set {key_env} to a valid key")
    if status == 403:
        return AgentUnavailable(f"{where} refused access (HTTP 403, {detail}): check the key's permissions for {model}")
    if status == 404:
        return AgentUnavailable(
            f"model '{model}' was not found at {where} (HTTP 404): check the name or pull the model"
        )
    if status == 408:
        return AgentTimeout(f"{where} timed out the request (HTTP 408): retry later or raise timeout_s", retryable=True)
    if status == 429:
        return AgentError(
            f"{where} is rate limiting requests (HTTP 429): wait and retry, or run fewer debates at once",
            retryable=True,
            retry_after_s=retry_after_s(headers),
        )
    if status >= 500:
        return AgentError(
            f"{where} failed with HTTP {status} ({detail}): retry later",
            retryable=True,
            retry_after_s=retry_after_s(headers),
        )
    return AgentError(f"{where} refused the request with HTTP {status} ({detail}): fix the request or the model")

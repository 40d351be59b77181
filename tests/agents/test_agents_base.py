"""The request/reply models and the retry helper."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from moot.agents import AgentRequest, RetryPolicy, call_with_retries
from moot.errors import AgentError, AgentTimeout


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    low = RetryPolicy(base_delay_s=1, max_delay_s=8, random=lambda: 0.0)
    high = RetryPolicy(base_delay_s=1, max_delay_s=8, random=lambda: 1.0)
    assert [low.delay_s(n) for n in range(1, 6)] == [0.5, 1, 2, 4, 4]
    assert [high.delay_s(n) for n in range(1, 6)] == [1, 2, 4, 8, 8]  # capped at max_delay_s
    assert low.delay_s(1, retry_after_s=3) == 3  # the server asked for longer
    assert low.delay_s(1, retry_after_s=60) == 8  # but never beyond the cap


def test_only_retryable_errors_are_retried() -> None:
    calls: list[int] = []
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise AgentTimeout("slow: wait", retryable=True)
        return "done"

    policy = RetryPolicy(max_attempts=5, sleep=sleep, random=lambda: 0.0)
    assert asyncio.run(call_with_retries(flaky, policy)) == ("done", 3)
    assert delays == [0.25, 0.5]

    async def broken() -> str:
        calls.append(1)
        raise AgentError("bad request: fix it")

    calls.clear()
    with pytest.raises(AgentError) as caught:
        asyncio.run(call_with_retries(broken, policy))
    assert len(calls) == 1 and caught.value.attempts == 1
    assert str(caught.value) == "bad request: fix it"  # no "gave up" note for a single attempt


def test_request_rejects_nonsense_and_is_frozen() -> None:
    with pytest.raises(ValidationError):
        AgentRequest(prompt="x", max_tokens=0)
    with pytest.raises(ValidationError):
        AgentRequest(prompt="x", timeout_s=0)
    request = AgentRequest(prompt="x")
    with pytest.raises(ValidationError):
        request.prompt = "y"  # type: ignore[misc]
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)

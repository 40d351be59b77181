"""What a model call costs in USD, from pydantic's ``genai-prices`` table.

The table ships inside the package and is never fetched at run time. A model the table does not know has
an unknown price (``None``), never a guess; models run locally cost nothing. Prompt tokens the provider read
from its cache, or wrote to it, are priced at the table's cache rates where it has them (a model without
them pays its input price for every prompt token).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field


class TokenPrice(BaseModel):
    """A price you give an agent in moot.toml's ``[prices]`` (USD per million tokens), for an agent the table
    cannot price (a command, a model it lacks, a gateway's own rates); it wins over the table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)  # prompt tokens read from a cache (default: input)

    def usd(self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0) -> float:
        """The price of one call with these token counts (``cached_tokens`` are part of ``prompt_tokens``)."""
        cached = min(cached_tokens, prompt_tokens)
        read = self.input if self.cached_input is None else self.cached_input
        return ((prompt_tokens - cached) * self.input + cached * read + completion_tokens * self.output) / 1e6


def table_price_usd(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    *,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
    provider: str | None = None,
    api_url: str | None = None,
) -> float | None:
    """The price of one call to ``model`` with these token counts, or None when the table lacks the model.

    ``cached_tokens`` (read from the cache) and ``cache_write_tokens`` are parts of ``prompt_tokens``.
    """
    from genai_prices import Usage, calc_price

    cached = min(cached_tokens, prompt_tokens)  # the table refuses more cached tokens than prompt tokens
    usage = Usage(
        input_tokens=prompt_tokens,
        cache_read_tokens=cached,
        cache_write_tokens=min(cache_write_tokens, prompt_tokens - cached),
        output_tokens=completion_tokens,
    )
    try:
        if provider is not None:
            price = calc_price(usage, model, provider_id=provider)
        else:
            price = calc_price(usage, model, provider_api_url=api_url)
    except LookupError:
        return None
    return float(price.total_price)


def runs_locally(url: str) -> bool:
    """Whether ``url`` points at this machine (a model server on loopback costs nothing)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def total_usd(costs: list[float | None]) -> float | None:
    """The sum of some calls' prices, unknown when any of them is."""
    return None if any(cost is None for cost in costs) else sum(cost for cost in costs if cost is not None)


def usd_text(cost: float | None) -> str:
    """A price for people: ``$0.0123``, ``$0`` for free, ``unknown`` when the table lacks a model."""
    if cost is None:
        return "unknown"
    return "$0" if cost == 0 else f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def saving_usd(cost: float | None, uncached: float | None) -> float | None:
    """What the provider's cache saved: the uncached price less the price paid (unknown if either is)."""
    return None if cost is None or uncached is None else uncached - cost


def cache_text(prompt_tokens: int, cached_tokens: int, saving: float | None) -> str:
    """What caching did, for people: ``12,000 of 15,000 prompt tokens from cache, saving $0.0321``.

    A negative saving is what writing the cache cost above the input price, before any read paid it back.
    """
    text = f"{cached_tokens:,} of {prompt_tokens:,} prompt tokens from cache"
    if not saving:
        return text
    return f"{text}, saving {usd_text(saving)}" if saving > 0 else f"{text}, {usd_text(-saving)} more for cache writes"


def attempt_tokens(row: Mapping[str, Any]) -> int:
    """The tokens one attempt of the usage log spent, prompt and completion (a failed call's are 0)."""
    return int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0)


def logged_cost(rows: Iterable[Mapping[str, Any]]) -> float | None:
    """The price of the attempts in a usage log as the run that made them counted it: the sum of every reply's
    price, unknown when any is. A call that got no reply (its agent failed) has no ``cost_usd`` and adds nothing,
    as it adds nothing to the run's own count."""
    return total_usd([row.get("cost_usd") for row in rows if "cost_usd" in row])


def logged_cache_text(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """:func:`cache_text` of attempts as the usage log holds them, or None when no prompt met the cache.

    A row written before the log kept the uncached price counts as uncached.
    """
    prompt = cached = written = 0
    costs: list[float | None] = []
    uncached: list[float | None] = []
    for row in rows:
        prompt += int(row.get("prompt_tokens") or 0)
        cached += int(row.get("cached_tokens") or 0)
        written += int(row.get("cache_write_tokens") or 0)
        if "cost_usd" in row:  # a call without a reply has no price (logged_cost)
            costs.append(row.get("cost_usd"))
            uncached.append(row.get("uncached_cost_usd", row.get("cost_usd")))
    if not (cached or written):
        return None
    return cache_text(prompt, cached, saving_usd(total_usd(costs), total_usd(uncached)))

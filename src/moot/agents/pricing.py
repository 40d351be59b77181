"""What a model call costs in USD, from pydantic's ``genai-prices`` table.

The table ships inside the package and is never fetched at run time. A model the table does not know has
an unknown price (``None``), never a guess; models run locally cost nothing.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def table_price_usd(
    model: str, prompt_tokens: int, completion_tokens: int, *, provider: str | None = None, api_url: str | None = None
) -> float | None:
    """The price of one call to ``model`` with these token counts, or None when the table lacks the model."""
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=prompt_tokens, output_tokens=completion_tokens)
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

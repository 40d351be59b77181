"""What an eval's calls cost, in the four units ``--match`` can hold equal: calls, completion tokens, tokens, USD.

A call's tokens are the backend's own counts; a backend that reports none (a command, a script) is estimated
at four characters a token, and the figure is marked estimated. A failed call costs what was sent: its prompt's
tokens, estimated, and no completion. USD is the agent's price for those tokens (``Agent.price_usd``), None
where the price table does not know the model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4
MEASURES = ("calls", "completion", "tokens", "usd")
USD, COMPLETION = "usd", "completion"


def estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Cost:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float | None = 0.0  # None: some call's price is unknown
    estimated: bool = False  # some call's tokens are estimated from its characters

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Cost) -> Cost:
        usd = None if self.usd is None or other.usd is None else self.usd + other.usd
        return Cost(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            usd,
            self.estimated or other.estimated,
        )

    def value(self, measure: str) -> float | None:
        """This cost in one unit of ``--match``."""
        if measure == "calls":
            return float(self.calls)
        if measure == COMPLETION:
            return float(self.completion_tokens)
        if measure == "tokens":
            return float(self.tokens)
        return self.usd

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "usd": self.usd,
            "estimated": self.estimated,
        }

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Cost:
        """The cost of a recorded call (or of a task, whose record holds the same keys)."""
        return cls(
            int(record.get("calls", 1)),
            int(record["prompt_tokens"]),
            int(record["completion_tokens"]),
            record["usd"],
            bool(record["estimated"]),
        )


def total(costs: Iterable[Cost]) -> Cost:
    result = Cost()
    for cost in costs:
        result = result + cost
    return result


def mean(costs: list[Cost], measure: str) -> float | None:
    values = [cost.value(measure) for cost in costs]
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(values)


def measure_for(requested: str | None, costs: list[Cost]) -> str:
    """The unit ``--match`` holds equal: the one requested, else USD where every price is known and something was
    paid, else completion tokens (local models and scripts cost nothing, so dollars cannot be matched)."""
    if requested is not None:
        return requested
    usd = mean(costs, USD)
    return USD if usd is not None and usd > 0 else COMPLETION

"""The statistics of ``moot eval``: accuracy with a Wilson interval, and McNemar's paired test.

Plain math, no SciPy: both are a few lines, and the tests check them against published values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
# Below this many discordant pairs the chi-square approximation is poor; the exact binomial test is used.
EXACT_BELOW = 25


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a proportion (Wilson 1927; Newcombe 1998, method 3)."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denominator = 1 + z * z / n
    # The interval holds p exactly; rounding alone could leave 6/6 with an upper bound of 0.9999999999999999.
    return (max(0.0, min(p, (centre - spread) / denominator)), min(1.0, max(p, (centre + spread) / denominator)))


@dataclass(frozen=True)
class McNemar:
    """Paired outcomes of two strategies on the same tasks.

    ``only_baseline``: tasks the baseline got right and the other wrong; ``only_other``: the reverse.
    """

    only_baseline: int
    only_other: int
    p_value: float
    test: str  # "exact binomial" or "chi-square (continuity-corrected)"


def mcnemar(baseline: Sequence[bool], other: Sequence[bool]) -> McNemar:
    """McNemar's test (two-sided) of ``other`` against ``baseline``, task by task."""
    if len(baseline) != len(other):
        raise ValueError("McNemar's test needs the same tasks on both sides")
    b = sum(1 for x, y in zip(baseline, other, strict=True) if x and not y)
    c = sum(1 for x, y in zip(baseline, other, strict=True) if y and not x)
    n = b + c
    if n == 0:
        return McNemar(b, c, 1.0, "exact binomial")
    if n < EXACT_BELOW:
        tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
        return McNemar(b, c, min(1.0, 2 * tail), "exact binomial")
    statistic = (abs(b - c) - 1) ** 2 / n
    # The chi-square distribution with one degree of freedom: P(X > s) = erfc(sqrt(s / 2)).
    return McNemar(b, c, math.erfc(math.sqrt(statistic / 2)), "chi-square (continuity-corrected)")

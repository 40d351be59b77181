"""The statistics of ``moot eval``, plain math with no SciPy; docs/metrics.md gives each one's source.

- :func:`wilson`: a proportion's 95% interval (Wilson 1927; Newcombe 1998, method 3).
- :func:`mcnemar`: the paired test of two strategies' right/wrong outcomes on the same tasks (McNemar 1947;
  exact binomial below 25 discordant pairs).
- :func:`compare`: a paired difference (strategy − baseline) with its 95% interval (Newcombe 1998's method 10
  for one outcome per task; the paired t interval over per-task means with replicates, as Miller 2024
  recommends), its p-value, and the minimum detectable effect at this n.
- :func:`holm`: Holm's step-down adjustment of a family of p-values (Holm 1979).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
Z80 = 0.8416212335729143  # its 80% quantile: power 0.8
# Below this many discordant pairs the chi-square approximation is poor; the exact binomial test is used.
EXACT_BELOW = 25
ALPHA = 0.05


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


def newcombe_paired(both: int, only_first: int, only_second: int, neither: int) -> tuple[float, float]:
    """The 95% interval of p1 − p2 for paired proportions: Newcombe 1998 (Stat. Med. 17:2635), method 10.

    Each margin gets its Wilson interval; the two are combined with the correlation of the pairs (phi).
    """
    n = both + only_first + only_second + neither
    if n == 0:
        return (-1.0, 1.0)
    p1, p2 = (both + only_first) / n, (both + only_second) / n
    l1, u1 = wilson(both + only_first, n)
    l2, u2 = wilson(both + only_second, n)
    margins = (both + only_first) * (only_second + neither) * (both + only_second) * (only_first + neither)
    phi = (both * neither - only_first * only_second) / math.sqrt(margins) if margins else 0.0
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    epsilon = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return (max(-1.0, p1 - p2 - delta), min(1.0, p1 - p2 + epsilon))


# --- Student's t, for per-task means over replicates ------------------------------------------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (Numerical Recipes, betacf)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-12:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1 - x) / b


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    return _incomplete_beta(df / 2, 0.5, df / (df + t * t))


def t_quantile(df: int, level: float = 0.975) -> float:
    """The ``level`` quantile of Student's t, by bisection on its tail."""
    low, high = 0.0, 1000.0
    for _ in range(200):
        middle = (low + high) / 2
        if t_two_sided_p(middle, df) / 2 > 1 - level:
            low = middle
        else:
            high = middle
    return (low + high) / 2


# --- a paired comparison -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """A strategy against a baseline on the same tasks: ``difference`` is strategy − baseline accuracy."""

    n: int
    difference: float
    ci95: tuple[float, float]
    p_value: float
    test: str
    mde: float  # the smallest true difference this n detects at p < 0.05 four times in five
    sd: float  # the standard deviation of the per-task differences
    only_strategy: float  # tasks (or replicate-weighted tasks) only the strategy got right
    only_baseline: float

    def tasks_for(self, effect: float) -> int | None:
        """The tasks needed to detect ``effect`` (e.g. 0.05) at this spread of differences; None when unknown."""
        if self.sd <= 0:
            return None
        return math.ceil(((Z95 + Z80) * self.sd / effect) ** 2)


def compare(strategy: Sequence[float], baseline: Sequence[float], binary: bool) -> Comparison:
    """The paired comparison of per-task scores (right 1, wrong 0, or a task's mean over its replicates).

    ``binary`` (one outcome per task): Newcombe's interval and McNemar's test. Otherwise the paired t interval
    and test over per-task differences. The minimum detectable effect is (z.975 + z.8) × sd / √n either way.
    """
    if len(strategy) != len(baseline):
        raise ValueError("a paired comparison needs the same tasks on both sides")
    n = len(strategy)
    differences = [s - b for s, b in zip(strategy, baseline, strict=True)]
    mean = sum(differences) / n if n else 0.0
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / (n - 1)) if n > 1 else 0.0
    only_s = sum(max(d, 0.0) for d in differences)
    only_b = sum(max(-d, 0.0) for d in differences)
    # With no discordant task the spread is unknown; one discordant task is the smallest it can be.
    floor = math.sqrt(1 / n) if n else 1.0
    mde = (Z95 + Z80) * max(sd, floor) / math.sqrt(n) if n else 1.0
    if binary:
        pairs = [(bool(s), bool(b)) for s, b in zip(strategy, baseline, strict=True)]
        both = sum(1 for s, b in pairs if s and b)
        neither = sum(1 for s, b in pairs if not s and not b)
        ci = newcombe_paired(both, int(only_s), int(only_b), neither)
        test = mcnemar([b for _, b in pairs], [s for s, _ in pairs])
        return Comparison(n, mean, ci, test.p_value, f"McNemar, {test.test}", mde, sd, only_s, only_b)
    if n < 2 or sd == 0:
        return Comparison(n, mean, (mean, mean), 1.0 if mean == 0 else 0.0, "paired t", mde, sd, only_s, only_b)
    se = sd / math.sqrt(n)
    half = t_quantile(n - 1) * se
    p = t_two_sided_p(mean / se, n - 1)
    return Comparison(n, mean, (mean - half, mean + half), p, "paired t", mde, sd, only_s, only_b)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979): the k-th smallest times (m − k + 1), kept monotone."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def verdict(comparison: Comparison, adjusted_p: float, baseline: str) -> str:
    """One line: "beats X", "loses to X", or "no detectable difference from X at n = …"."""
    if adjusted_p < ALPHA and comparison.difference > 0:
        return f"beats {baseline}"
    if adjusted_p < ALPHA and comparison.difference < 0:
        return f"loses to {baseline}"
    return (
        f"no detectable difference from {baseline} at n = {comparison.n} "
        f"(could detect ±{comparison.mde * 100:.0f} points)"
    )

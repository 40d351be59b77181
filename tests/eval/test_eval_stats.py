"""The eval's statistics against published values, and a summary over outcomes known in advance."""

from __future__ import annotations

import math

import pytest

from moot.errors import UserError
from moot.eval.report import markdown, summarise
from moot.eval.stats import mcnemar, wilson
from moot.eval.strategies import majority, parse_strategy
from moot.eval.tasks import Task


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857-872, Table II, method 3 (Wilson score, no correction).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_matches_newcombe(successes: int, n: int, low: float, high: float) -> None:
    got_low, got_high = wilson(successes, n)
    assert got_low == pytest.approx(low, abs=6e-5) and got_high == pytest.approx(high, abs=6e-5)


def test_mcnemar_exact_for_few_discordant_pairs_and_chi_square_for_many() -> None:
    # 1 vs 9 discordant pairs: two-sided exact binomial p = 2 * (1 + 10) / 2**10.
    few = mcnemar([True] * 1 + [False] * 9 + [True] * 5, [False] * 1 + [True] * 9 + [True] * 5)
    assert (few.only_baseline, few.only_other, few.test) == (1, 9, "exact binomial")
    assert few.p_value == pytest.approx(22 / 1024)
    # 20 vs 10: chi-square with continuity correction, (|20 - 10| - 1)^2 / 30 = 2.7, P(chi2_1 > 2.7) = 0.1003.
    many = mcnemar([True] * 20 + [False] * 10, [False] * 20 + [True] * 10)
    assert many.test.startswith("chi-square") and many.p_value == pytest.approx(0.10035, abs=1e-4)
    assert mcnemar([True, False], [True, False]).p_value == 1.0  # no discordant pair: no evidence of a difference
    assert math.isclose(mcnemar([True] * 6, [False] * 6).p_value, 2 / 64)


def test_majority_ignores_unreadable_answers_and_breaks_ties_by_order() -> None:
    assert majority(["3", None, "4", "4"]) == "4"
    assert majority(["5", "3", "3", "5"]) == "5"
    assert majority([None, None]) is None


@pytest.mark.parametrize(
    ("text", "kind", "samples", "agents", "rounds"),
    [
        ("single", "single", 1, 1, 0),
        ("sc:5", "sc", 5, 1, 0),
        ("debate:3x2", "debate", 1, 3, 2),
        ("debate:4×1", "debate", 1, 4, 1),
    ],
)
def test_strategies_parse(text: str, kind: str, samples: int, agents: int, rounds: int) -> None:
    strategy = parse_strategy(text)
    assert (strategy.kind, strategy.samples, strategy.agents, strategy.rounds) == (kind, samples, agents, rounds)


@pytest.mark.parametrize("text", ["sc:0", "debate:1x2", "debate:3", "best-of:3"])
def test_bad_strategies_name_the_fix(text: str) -> None:
    with pytest.raises(UserError, match=r"e\.g\."):
        parse_strategy(text)


def test_summary_of_known_outcomes() -> None:
    tasks = [Task(str(i), f"q{i}", "1") for i in range(10)]
    strategies = [parse_strategy("sc:3"), parse_strategy("debate:2x1")]
    results = {}
    for i, task in enumerate(tasks):
        results[("sc:3", task.id)] = {"answer": "1", "correct": i < 6, "tokens": 30, "wall_s": 1.0, "k": 3}
        # sc is right on tasks 0..5, the debate on 4..9, where a2 moves from 2 to a1's 1.
        rounds = [
            {"a1": "1" if i >= 4 else "2", "a2": "2"},
            {"a1": "1" if i >= 4 else "2", "a2": "1" if i >= 4 else "2"},
        ]
        results[("debate:2x1", task.id)] = {
            "answer": "1" if i >= 4 else "2",
            "correct": i >= 4,
            "tokens": 100 + i,
            "wall_s": 2.0,
            "rounds": rounds,
            "known": "1",
        }
    about = {"tasks": "t", "seed": 0, "agents": {"agent": "x"}, "temperature": 0.7, "max_tokens": 9}
    summary = summarise(strategies, tasks, results, about)
    sc, debate = summary["strategies"]
    assert summary["baseline"] == "sc:3" and summary["n_tasks"] == 10
    assert (sc["accuracy"], sc["n"], sc["mean_tokens"], sc["mcnemar"]) == (0.6, 10, 30, None)
    assert sc["ci95"] == list(wilson(6, 10))
    assert debate["accuracy"] == 0.6 and debate["mean_tokens"] == pytest.approx(104.5)
    # sc alone right on tasks 0..3, the debate alone on 6..9: 4 vs 4 discordant pairs.
    assert debate["mcnemar"]["only_baseline_correct"] == 4 and debate["mcnemar"]["only_this_correct"] == 4
    assert debate["mcnemar"]["p_value"] == 1.0
    # on tasks 4..9 a2 moved from 2 (wrong) to 1 (right), toward a1: six incorrect->correct flips.
    assert debate["flips"] == {"correct_to_incorrect": 0, "incorrect_to_correct": 6}
    assert debate["conformity"]["toward_majority"] == 6
    table = markdown(summary)
    assert "| debate:2x1 | 60.0% [31.3%, 83.2%] | 104 | 2.0 | 0 / 6 | 4:4, p = 1 |" in table

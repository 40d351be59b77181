"""The eval's statistics against published values, and a summary over outcomes known in advance."""

from __future__ import annotations

import math

import pytest

from moot.errors import UserError
from moot.eval.report import summarise
from moot.eval.stats import compare, holm, mcnemar, newcombe_paired, t_quantile, t_two_sided_p, verdict, wilson
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
        ("council", "protocol", 1, 3, 0),
        ("protocol:agora:max_turns=9,members=4", "protocol", 1, 4, 0),
    ],
)
def test_strategies_parse(text: str, kind: str, samples: int, agents: int, rounds: int) -> None:
    strategy = parse_strategy(text)
    assert (strategy.kind, strategy.samples, strategy.agents, strategy.rounds) == (kind, samples, agents, rounds)


def test_protocol_options_are_data() -> None:
    strategy = parse_strategy('protocol:agora:positions=[["a","x, y"],["b","z"]],sealed=true,max_turns=9')
    assert strategy.options == {"positions": [["a", "x, y"], ["b", "z"]], "sealed": True, "max_turns": 9}
    assert parse_strategy("council:5").name == "protocol:council:members=5"
    assert parse_strategy("sc:match=council").target == "protocol:council"


@pytest.mark.parametrize("text", ["sc:0", "debate:1x2", "debate:3", "best-of:3", "protocol:council:members=x"])
def test_bad_strategies_name_the_fix(text: str) -> None:
    with pytest.raises(UserError, match=r"e\.g\."):
        parse_strategy(text)


def test_t_distribution_matches_its_table() -> None:
    assert t_quantile(10) == pytest.approx(2.2281, abs=1e-4) and t_quantile(29) == pytest.approx(2.0452, abs=1e-4)
    assert t_two_sided_p(2.0, 10) == pytest.approx(0.07339, abs=1e-5)


def test_holm_adjusts_step_down_and_stays_monotone() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5]) == [0.5] and holm([0.4, 0.4]) == [0.8, 0.8]


def test_paired_difference_interval_holds_the_estimate_and_narrows_with_agreement() -> None:
    low, high = newcombe_paired(both=10, only_first=5, only_second=2, neither=13)
    assert low < 3 / 30 < high and low >= -1 and high <= 1
    # The same margins with more agreement between the pairs give a narrower interval (phi enters the formula).
    wide = newcombe_paired(both=5, only_first=10, only_second=7, neither=8)
    assert (high - low) < (wide[1] - wide[0])


def test_a_comparison_reports_its_minimum_detectable_effect_and_tasks_for_5_points() -> None:
    mine = [1.0] * 60 + [0.0] * 40
    theirs = [1.0] * 50 + [0.0] * 10 + [1.0] * 10 + [0.0] * 30  # 10 tasks each way: no difference
    result = compare(mine, theirs, binary=True)
    assert result.difference == 0 and result.p_value == 1.0 and result.test.startswith("McNemar")
    sd = math.sqrt(20 / 99)  # per-task differences: 10 of +1, 10 of -1, 80 of 0
    assert result.mde == pytest.approx((1.959964 + 0.841621) * sd / 10, abs=1e-4)
    assert result.tasks_for(0.05) == math.ceil(((1.959964 + 0.841621) * sd / 0.05) ** 2)
    assert verdict(result, 1.0, "single") == "no detectable difference from single at n = 100 (could detect ±13 points)"
    better = compare([1.0] * 30 + [0.0] * 10, [0.0] * 30 + [0.0] * 10, binary=True)
    assert verdict(better, better.p_value, "single") == "beats single"
    replicated = compare([0.5, 1.0, 0.5, 1.0], [0.0, 0.5, 0.5, 0.5], binary=False)
    assert replicated.test == "paired t" and replicated.ci95[0] < replicated.difference < replicated.ci95[1]


def _held(answers: dict[str, str | None], among: list[str] | None = None) -> dict[str, dict[str, object]]:
    return {who: {"answer": answer, "among": among} for who, answer in answers.items()}


def test_accuracy_per_round_is_the_majority_given_in_that_round_and_a_councils_last_is_its_synthesis() -> None:
    # m1 alone was right; every reviewer ranked 9 first; the chairman (m1) wrote 7 in the synthesis: right.
    # The answers held after the synthesis (m1's 7, m2's and m3's 9) have 9 as their majority: not the answer.
    rounds = [
        _held({"m1": "7", "m2": "9", "m3": "9"}),
        {**_held({"m1": "9"}, ["9", "9"]), **_held({"m2": "9", "m3": "9"}, ["7", "9"])},
        _held({"m1": "7"}),
    ]
    cost = {"calls": 7, "prompt_tokens": 70, "completion_tokens": 7, "usd": None, "estimated": True, "wall_s": 1.0}
    council = {**cost, "answer": "7", "correct": True, "known": "7", "rounds": rounds, "panel": {}}
    single = {**cost, "calls": 1, "answer": "9", "correct": False, "known": "7"}
    results = {("single", "t1", 1): single, ("protocol:council", "t1", 1): council}
    strategies = [parse_strategy("single"), parse_strategy("protocol:council")]
    # A second council failed in its synthesis: its reviewers' majority was right (one review unreadable), but it
    # gave no answer.
    reviews = _held({"m1": "7", "m2": "7", "m3": None})
    failed = {**council, "answer": None, "correct": False, "rounds": [rounds[0], reviews]}
    results.update({("single", "t2", 1): single, ("protocol:council", "t2", 1): failed})
    tasks = [Task("t1", "q", "7"), Task("t2", "q", "7")]
    summary = summarise(strategies, tasks, 1, results, {}, {})
    row = summary["strategies"][1]
    assert [r["accuracy"] for r in row["rounds"]] == [0.0, 0.5, 0.5] and row["accuracy"] == 0.5
    assert [r["unreadable_rate"] for r in row["rounds"]] == [0.0, 1 / 6, 0.0] and row["unreadable_rate"] == 0.5
    assert row["round0_vote_accuracy"] == 0.0

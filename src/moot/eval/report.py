"""What an eval shows: per strategy accuracy (Wilson 95%), tokens, time, flips, and McNemar against the baseline.

The summary is one JSON object (``moot eval --json`` prints it; report.json keeps it); report.md and the
plot of accuracy against tokens are drawn from it. The plot needs matplotlib (``pip install 'moot[eval]'``);
everything else works without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from moot.eval.stats import mcnemar, wilson
from moot.eval.strategies import Strategy, majority
from moot.eval.tasks import Task
from moot.metrics import CORRECT_TO_INCORRECT, INCORRECT_TO_CORRECT, Conformity, answers_by_round, council_answers

PLOT = "accuracy-tokens.svg"
PLOT_INSTALL = "pip install 'moot[eval]'"


def _strategy_summary(strategy: Strategy, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    n = len(records)
    correct = sum(1 for r in records if r["correct"])
    low, high = wilson(correct, n)
    summary: dict[str, Any] = {
        "name": strategy.name,
        "n": n,
        "correct": correct,
        "accuracy": correct / n if n else 0.0,
        "ci95": [low, high],
        "mean_tokens": sum(r["tokens"] for r in records) / n if n else 0.0,
        "tokens_estimated": any(r.get("tokens_estimated") for r in records),
        "mean_wall_s": sum(r["wall_s"] for r in records) / n if n else 0.0,
        "unanswered": sum(1 for r in records if r["answer"] is None),
        "flips": None,
        "conformity": None,
    }
    if strategy.kind == "sc":
        summary["k"] = records[0]["k"] if records else strategy.samples
    if strategy.kind == "debate":
        _conformity(summary, [answers_by_round(r["rounds"], answer=r["known"]) for r in records])
    if strategy.kind == "council":
        analyses = [council_answers(r["council"], answer=r["known"]) for r in records]
        _conformity(summary, analyses)
        councils = [r["council"] for r in records if r["council"]["synthesis"] is not None]
        summary["conformity"]["toward_chairman"] = sum(1 for a in analyses for c in a.changes if c.toward_chairman)
        summary["conformity"]["synthesis_is_top_ranked"] = sum(
            1 for c in councils if c["synthesis"] == c["answers"][c["ranking"][0][0]]
        )
        summary["conformity"]["synthesis_is_first_majority"] = sum(
            1 for c in councils if c["synthesis"] == majority(list(c["answers"].values()))
        )
        summary["no_quorum"] = sum(1 for r in records if not r["council"]["ranking"])
    return summary


def _conformity(summary: dict[str, Any], analyses: Sequence[Conformity]) -> None:
    """The flips and conformity of a strategy whose agents see each other's answers, summed over its tasks."""
    summary["flips"] = {
        "correct_to_incorrect": sum(a.flips(CORRECT_TO_INCORRECT) for a in analyses),
        "incorrect_to_correct": sum(a.flips(INCORRECT_TO_CORRECT) for a in analyses),
    }
    summary["conformity"] = {
        "changes": sum(len(a.changes) for a in analyses),
        "toward_majority": sum(1 for a in analyses for c in a.changes if c.toward_majority),
        "collapsed_tasks": sum(1 for a in analyses if a.collapsed),
        "unanimous_at_end": sum(1 for a in analyses if a.final_distinct == 1),
    }


def baseline_of(strategies: Sequence[Strategy]) -> Strategy:
    """The first self-consistency strategy, else the first strategy."""
    return next((s for s in strategies if s.kind == "sc"), strategies[0])


def summarise(
    strategies: Sequence[Strategy],
    tasks: Sequence[Task],
    results: Mapping[tuple[str, str], Mapping[str, Any]],
    about: Mapping[str, Any],
) -> dict[str, Any]:
    """The eval's summary over the tasks every strategy finished."""
    done = [t for t in tasks if all((s.name, t.id) in results for s in strategies)]
    baseline = baseline_of(strategies)
    base_correct = [bool(results[(baseline.name, t.id)]["correct"]) for t in done]
    rows = []
    for strategy in strategies:
        records = [results[(strategy.name, t.id)] for t in done]
        row = _strategy_summary(strategy, records)
        if strategy is not baseline:
            test = mcnemar(base_correct, [bool(r["correct"]) for r in records])
            row["mcnemar"] = {
                "against": baseline.name,
                "only_baseline_correct": test.only_baseline,
                "only_this_correct": test.only_other,
                "p_value": test.p_value,
                "test": test.test,
            }
        else:
            row["mcnemar"] = None
        rows.append(row)
    return {**about, "n_tasks": len(done), "baseline": baseline.name, "strategies": rows}


def _ci(row: Mapping[str, Any]) -> str:
    low, high = row["ci95"]
    return f"{row['accuracy']:.1%} [{low:.1%}, {high:.1%}]"


def markdown(summary: Mapping[str, Any]) -> str:
    agents = ", ".join(f"{name}={spec}" for name, spec in summary["agents"].items())
    lines = [
        f"# moot eval: {summary['tasks']}",
        "",
        f"{summary['n_tasks']} tasks · seed {summary['seed']} · agents {agents} · "
        f"temperature {summary['temperature']} · max {summary['max_tokens']} tokens per answer",
        "",
        f"| strategy | accuracy [Wilson 95%] | mean tokens | mean time (s) | flips c→i / i→c | McNemar vs {summary['baseline']} |",
        "| --- | --- | ---: | ---: | --- | --- |",
    ]
    for row in summary["strategies"]:
        name = row["name"] + (f" (K={row['k']})" if "k" in row and not row["name"].endswith(f":{row['k']}") else "")
        flips = (
            "—"
            if row["flips"] is None
            else f"{row['flips']['correct_to_incorrect']} / {row['flips']['incorrect_to_correct']}"
        )
        test = row["mcnemar"]
        versus = (
            "baseline"
            if test is None
            else f"{test['only_baseline_correct']}:{test['only_this_correct']}, p = {test['p_value']:.3g}"
        )
        tokens = f"{row['mean_tokens']:.0f}" + ("*" if row["tokens_estimated"] else "")
        lines.append(f"| {name} | {_ci(row)} | {tokens} | {row['mean_wall_s']:.1f} | {flips} | {versus} |")
    lines += [
        "",
        "McNemar a:b counts the tasks only the baseline got right (a) and only this strategy got right (b).",
        "Flips count debate agents and council members changing a correct answer to an incorrect one (c→i) "
        "and the reverse (i→c).",
    ]
    if any(row["tokens_estimated"] for row in summary["strategies"]):
        lines.append("\\* estimated as characters / 4: the agents report no token usage.")
    return "\n".join(lines) + "\n"


def plotting_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot(summary: Mapping[str, Any], path: Path) -> None:
    """Accuracy (with its Wilson interval) against mean tokens per task, one point per strategy, as SVG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    for row in summary["strategies"]:
        low, high = row["ci95"]
        accuracy = row["accuracy"]
        axes.errorbar(row["mean_tokens"], accuracy, yerr=[[accuracy - low], [high - accuracy]], fmt="o", capsize=4)
        axes.annotate(row["name"], (row["mean_tokens"], accuracy), textcoords="offset points", xytext=(6, 4))
    axes.set_xlabel("mean tokens per task")
    axes.set_ylabel("accuracy (Wilson 95% interval)")
    axes.set_ylim(0, 1)
    axes.set_title(f"{summary['tasks']}, {summary['n_tasks']} tasks")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, format="svg")
    pyplot.close(figure)

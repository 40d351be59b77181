"""What an eval shows: per strategy accuracy and cost, the verdict table, voting against discussion, and flips.

The summary is one JSON object (``moot eval --json`` prints it; report.json keeps it); report.md and the plot
are drawn from it. Every deliberation is compared, task by task, with ``single``, its best single member, the
vote of its own round-0 answers, and the self-consistency matched to its cost: a paired difference with its
95% interval, a p-value Holm-adjusted over the whole table, the minimum detectable effect at this n, and a
one-line verdict. docs/metrics.md defines every figure and says where each definition comes from.

The plot needs matplotlib (``pip install 'moot[eval]'``); everything else works without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from moot.eval.costs import MEASURES, Cost, mean
from moot.eval.stats import compare, holm, verdict, wilson
from moot.eval.strategies import Strategy, majority
from moot.eval.tasks import Task
from moot.metrics import FlipTally, HeldAnswers, answers_by_round, flip_tally, present_then_lost

PLOT = "eval.svg"
PLOT_INSTALL = "pip install 'moot[eval]'"
EFFECT = 0.05  # the difference docs/metrics.md sizes experiments for: 5 points

Records = Mapping[tuple[str, str, int], Mapping[str, Any]]
Scores = dict[str, list[list[bool]]]  # name -> per task, its replicates' outcomes


def _held(record: Mapping[str, Any]) -> list[HeldAnswers]:
    return [{who: (h["answer"], h["among"]) for who, h in round_.items()} for round_ in record.get("rounds") or []]


def _right_by_round(rounds: Sequence[HeldAnswers], known: str, final: bool, count: int) -> list[bool]:
    """Whether the majority of the answers given in each of ``count`` rounds is right; in the rounds a deliberation
    did not reach (it ended sooner, or failed), whether its answer (``final``) is. The last round of a council
    is its chairman's synthesis alone."""
    right = [majority([now for now, _ in round_.values()]) == known for round_ in rounds]
    return right[:count] + [final] * (count - len(right))


def _costs(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    costs = [Cost.of(r) for r in records]
    return {
        "calls": mean(costs, "calls"),
        "prompt_tokens": sum(c.prompt_tokens for c in costs) / len(costs) if costs else 0.0,
        "completion_tokens": mean(costs, "completion"),
        "tokens": mean(costs, "tokens"),
        "usd": mean(costs, "usd"),
        "estimated": any(c.estimated for c in costs),
    }


def _row(strategy: Strategy, records: Sequence[Mapping[str, Any]], missing: int) -> dict[str, Any]:
    n = len(records)
    correct = sum(1 for r in records if r["correct"])
    low, high = wilson(correct, n)
    cost = _costs(records)
    calls = sum(r["calls"] for r in records)
    row: dict[str, Any] = {
        "name": strategy.name,
        "label": strategy.label,
        "kind": strategy.kind,
        "added": strategy.added,
        "n": n,
        "correct": correct,
        "accuracy": correct / n if n else 0.0,
        "ci95": [low, high],
        "cost": cost,
        "mean_tokens": cost["tokens"],
        "tokens_estimated": cost["estimated"],
        "mean_wall_s": sum(r["wall_s"] for r in records) / n if n else 0.0,
        "unanswered": sum(1 for r in records if r["answer"] is None),
        "unreadable_rate": sum(1 for r in records if r["answer"] is None) / n if n else 0.0,
        "truncated_calls": sum(r.get("truncated", 0) for r in records),
        "truncated_rate": sum(r.get("truncated", 0) for r in records) / calls if calls else 0.0,
        "failed_calls": sum(r.get("failed_calls", 0) for r in records),
        "missing": missing,
    }
    if strategy.kind in ("sc", "match"):
        row["k"] = records[0]["k"] if records else strategy.samples
    return row


def _deliberation(row: dict[str, Any], records: Sequence[Mapping[str, Any]]) -> None:
    """Accuracy and unreadable answers per round, the round-0 vote, flips (overall and per model), losses."""
    count = max((len(r.get("rounds") or []) for r in records), default=0)
    per_round = [[0, 0, 0] for _ in range(count)]  # right majorities, unreadable answers, answers
    tally, by_model = FlipTally(), dict[str, FlipTally]()
    lost = present = 0
    for record in records:
        rounds = _held(record)
        for index, right in enumerate(_right_by_round(rounds, record["known"], bool(record["correct"]), count)):
            per_round[index][0] += right
        for index, round_ in enumerate(rounds):
            per_round[index][1] += sum(1 for now, _ in round_.values() if now is None)
            per_round[index][2] += len(round_)
        for who, flips in flip_tally(rounds, record["known"]).items():
            tally.add(flips)
            by_model.setdefault(record["panel"].get(who, who), FlipTally()).add(flips)
        outcome = present_then_lost(rounds, record["known"], record["answer"])
        present += outcome is not None
        lost += bool(outcome)
    n = len(records)
    row["rounds"] = [
        {"round": i, "accuracy": right / n if n else 0.0, "unreadable_rate": bad / of if of else 0.0, "answers": of}
        for i, (right, bad, of) in enumerate(per_round)
    ]
    row["flips"] = {**tally.to_json(), "per_model": {m: t.to_json() for m, t in by_model.items()}}
    row["lost"] = {"present": present, "lost": lost, "rate": lost / present if present else None}
    conformity = [answers_by_round([{w: h[0] for w, h in r.items()} for r in _held(rec)]) for rec in records]
    row["conformity"] = {
        "changes": sum(len(c.changes) for c in conformity),
        "toward_majority": sum(1 for c in conformity for change in c.changes if change.toward_majority),
        "collapsed_tasks": sum(1 for c in conformity if c.collapsed),
        "unanimous_at_end": sum(1 for c in conformity if c.final_distinct == 1),
    }


def _derived(strategy: Strategy, records: Mapping[tuple[str, int], Mapping[str, Any]]) -> dict[str, dict[Any, bool]]:
    """A deliberation's own baselines, per (task, replicate): the vote of its round-0 answers, and each agent's
    round-0 answer (its first participant's) as that agent's single answer."""
    vote: dict[Any, bool] = {}
    members: dict[str, dict[Any, bool]] = {}
    for key, record in records.items():
        rounds = record.get("rounds") or []
        openings = rounds[0] if rounds else {}
        vote[key] = majority([h["answer"] for h in openings.values()]) == record["known"]
        for who, held in openings.items():
            agent = record["panel"].get(who, who)
            members.setdefault(agent, {}).setdefault(key, held["answer"] == record["known"])
    return {"vote": vote, **{f"member:{agent}": outcomes for agent, outcomes in members.items()}}


def _scores(outcomes: Mapping[tuple[str, int], bool], tasks: Sequence[Task], replicates: int) -> list[float]:
    return [sum(outcomes[(t.id, r)] for r in range(1, replicates + 1)) / replicates for t in tasks]


def _comparison(
    name: str, baseline: str, kind: str, mine: list[float], theirs: list[float], replicates: int
) -> dict[str, Any]:
    result = compare(mine, theirs, binary=replicates == 1)
    return {
        "deliberation": name,
        "baseline": baseline,
        "kind": kind,
        "n": result.n,
        "difference": result.difference,
        "ci95": list(result.ci95),
        "p_value": result.p_value,
        "test": result.test,
        "mde": result.mde,
        "tasks_for_5_points": result.tasks_for(EFFECT),
        "only_deliberation": result.only_strategy,
        "only_baseline": result.only_baseline,
        "_comparison": result,
    }


def _verdicts(
    strategies: Sequence[Strategy], outcomes: Mapping[str, Mapping[tuple[str, int], bool]], done: Sequence[Task], r: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The verdict table (Holm-adjusted over all its rows) and the voting/discussion split of each deliberation."""
    scores = {name: _scores(o, done, r) for name, o in outcomes.items()}
    rows: list[dict[str, Any]] = []
    split: list[dict[str, Any]] = []
    for strategy in (s for s in strategies if s.deliberates):
        mine = scores[strategy.name]
        vote = scores[f"{strategy.name}/vote"]
        members = {
            k.removeprefix(f"{strategy.name}/member:"): v
            for k, v in scores.items()
            if k.startswith(f"{strategy.name}/member:")
        }
        baselines: list[tuple[str, str, list[float]]] = []
        if "single" in scores:
            baselines.append(("single", "single", scores["single"]))
        if members:
            best = max(members, key=lambda agent: sum(members[agent]))
            baselines.append((f"best member ({best})", "best member", members[best]))
        baselines.append(("its round-0 vote", "round-0 vote", vote))
        matched = next((s for s in strategies if s.kind == "match" and s.target == strategy.name), None)
        if matched is not None:
            baselines.append((matched.name, "matched self-consistency", scores[matched.name]))
        rows += [_comparison(strategy.name, name, kind, mine, theirs, r) for name, kind, theirs in baselines]
        parts = {"deliberation": strategy.name, "discussion": _comparison(strategy.name, "", "", mine, vote, r)}
        if "single" in scores:
            parts["voting"] = _comparison(strategy.name, "", "", vote, scores["single"], r)
        if matched is not None:
            parts["more_votes"] = _comparison(strategy.name, "", "", scores[matched.name], vote, r)
        split.append(parts)
    for row, adjusted in zip(rows, holm([row["p_value"] for row in rows]), strict=True):
        row["p_holm"] = adjusted
        row["verdict"] = verdict(row["_comparison"], adjusted, row["baseline"])
    for item in [*rows, *(part for s in split for part in s.values() if isinstance(part, dict))]:
        item.pop("_comparison", None)
    return rows, split


def summarise(
    strategies: Sequence[Strategy],
    tasks: Sequence[Task],
    replicates: int,
    results: Records,
    about: Mapping[str, Any],
    fits: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """The eval's summary over the tasks every strategy finished in every replicate."""
    reps = range(1, replicates + 1)
    done = [t for t in tasks if all((s.name, t.id, r) in results for s in strategies for r in reps)]
    outcomes: dict[str, dict[tuple[str, int], bool]] = {}
    rows: list[dict[str, Any]] = []
    for strategy in strategies:
        chosen = {(t.id, r): results[(strategy.name, t.id, r)] for t in done for r in reps}
        missing = sum(1 for t in tasks for r in reps if (strategy.name, t.id, r) not in results)
        row = _row(strategy, list(chosen.values()), missing)
        outcomes[strategy.name] = {key: bool(record["correct"]) for key, record in chosen.items()}
        if strategy.deliberates:
            _deliberation(row, list(chosen.values()))
            derived = _derived(strategy, chosen)
            outcomes.update({f"{strategy.name}/{name}": o for name, o in derived.items()})
            row["round0_vote_accuracy"] = sum(derived["vote"].values()) / len(chosen) if chosen else 0.0
        if strategy.kind == "match" and strategy.name in fits:
            row["match"] = _match(fits[strategy.name], row, rows)
        rows.append(row)
    verdicts, split = _verdicts(strategies, outcomes, done, replicates)
    return {**about, "n_tasks": len(done), "strategies": rows, "verdicts": verdicts, "split": split}


def _match(fit: Mapping[str, Any], row: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The fitted K and what the matched self-consistency spent against its deliberation, in the fit's unit."""
    target = next((r for r in rows if r["name"] == fit["target"]), None)
    unit = {"calls": "calls", "completion": "completion_tokens", "tokens": "tokens", "usd": "usd"}[fit["measure"]]
    mine, theirs = row["cost"][unit], target["cost"][unit] if target else None
    ratio = mine / theirs if mine is not None and theirs else None
    return {**{k: v for k, v in fit.items() if k not in ("kind", "strategy")}, "realised_ratio": ratio}


# --- Markdown -----------------------------------------------------------------------------------------


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _points(value: float) -> str:
    return f"{value * 100:+.1f}"


def _cost_text(cost: Mapping[str, Any]) -> str:
    star = "*" if cost["estimated"] else ""

    def shown(value: float | None, form: str, mark: str = "") -> str:
        return "—" if value is None else format(value, form) + mark

    return " | ".join(
        (
            shown(cost["calls"], ".1f"),
            shown(cost["completion_tokens"], ".0f", star),
            shown(cost["tokens"], ".0f", star),
            "—" if cost["usd"] is None else f"${cost['usd']:.4f}",
        )
    )


def markdown(summary: Mapping[str, Any]) -> str:
    agents = ", ".join(f"{name}={spec}" for name, spec in summary["agents"].items())
    lines = [
        f"# moot eval: {summary['tasks']}",
        "",
        f"{summary['n_tasks']} tasks × {summary['replicates']} replicate(s) · seed {summary['seed']} · agents "
        f"{agents} · temperature {summary['temperature']} · max {summary['max_tokens']} tokens per answer · "
        f"moot {', '.join(summary['moot_versions'])}",
        "",
        "| strategy | accuracy [Wilson 95%] | calls | completion tok. | tokens | USD | unreadable | truncated calls "
        "| missing |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in summary["strategies"]:
        name = row["label"] + (f" (K={row['k']})" if "k" in row and not row["name"].endswith(f":{row['k']}") else "")
        low, high = row["ci95"]
        lines.append(
            f"| {name} | {_pct(row['accuracy'])} [{_pct(low)}, {_pct(high)}] | {_cost_text(row['cost'])} "
            f"| {_pct(row['unreadable_rate'])} | {row['truncated_calls']} | {row['missing']} |"
        )
    lines += _verdict_lines(summary) + _split_lines(summary) + _round_lines(summary) + _notes(summary)
    return "\n".join(lines) + "\n"


def _verdict_lines(summary: Mapping[str, Any]) -> list[str]:
    if not summary["verdicts"]:
        return []
    lines = [
        "",
        "## Verdicts",
        "",
        "| deliberation | against | difference [95%] | p (Holm) | detectable at this n | tasks for 5 points | verdict |",
        "| --- | --- | --- | --- | ---: | ---: | --- |",
    ]
    for row in summary["verdicts"]:
        low, high = row["ci95"]
        needed = row["tasks_for_5_points"] or "—"
        lines.append(
            f"| {row['deliberation']} | {row['baseline']} | {_points(row['difference'])} [{_points(low)}, "
            f"{_points(high)}] | {row['p_value']:.3g} ({row['p_holm']:.3g}) | ±{row['mde'] * 100:.0f} points "
            f"| {needed} | {row['verdict']} |"
        )
    return lines


def _split_lines(summary: Mapping[str, Any]) -> list[str]:
    lines = ["", "## Voting or discussion", ""] if summary["split"] else []
    for item in summary["split"]:
        parts = []
        for key, what in (
            ("voting", "voting (round-0 vote − single)"),
            ("discussion", "discussion (final − round-0 vote)"),
            ("more_votes", "more votes at equal cost (matched self-consistency − round-0 vote)"),
        ):
            if key in item:
                low, high = item[key]["ci95"]
                parts.append(f"{what} {_points(item[key]['difference'])} [{_points(low)}, {_points(high)}] points")
        lines.append(f"- **{item['deliberation']}**: " + "; ".join(parts) + ".")
    return lines


def _round_lines(summary: Mapping[str, Any]) -> list[str]:
    rows = [row for row in summary["strategies"] if row.get("rounds")]
    if not rows:
        return []
    lines = ["", "## Rounds and flips", ""]
    for row in rows:
        rounds = ", ".join(
            f"round {r['round']} {_pct(r['accuracy'])} ({_pct(r['unreadable_rate'])} unreadable)" for r in row["rounds"]
        )
        flips = row["flips"]
        lost = row["lost"]
        lines.append(
            f"- **{row['label']}**: majority right after {rounds}. Flips: correct→incorrect "
            f"{flips['correct_to_incorrect']}/{flips['from_correct']}, correct→unreadable "
            f"{flips['correct_to_unreadable']}/{flips['from_correct']}, incorrect→correct "
            f"{flips['incorrect_to_correct']}/{flips['from_other']}"
            + (f" ({flips['unavoidable']} unavoidable left out)" if flips["unavoidable"] else "")
            + f". A right answer was held and then lost on {lost['lost']} of the {lost['present']} tasks that had one."
        )
    return lines


def _notes(summary: Mapping[str, Any]) -> list[str]:
    lines = [
        "",
        "Differences are the deliberation's accuracy minus the baseline's, task by task, in points. "
        '"Detectable at this n" is the smallest true difference these tasks detect four times in five at p < 0.05.',
    ]
    for row in summary["strategies"]:
        match = row.get("match")
        if match:
            ratio = "unknown" if match["realised_ratio"] is None else f"{match['realised_ratio']:.2f}"
            lines.append(
                f"{row['name']}: K = {match['k']} fitted on {match['tasks']} tasks by {match['measure']}, "
                f"then kept; it spent {ratio}× what {match['target']} spent."
            )
    if any(row["cost"]["estimated"] for row in summary["strategies"]):
        lines.append("\\* estimated as characters / 4: the agents report no token usage.")
    return lines


# --- the plot -----------------------------------------------------------------------------------------


def plotting_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def scaling_curve(
    results: Records, strategy: Strategy, tasks: Sequence[Task], replicates: int
) -> list[tuple[int, float]]:
    """Self-consistency's accuracy with its first k samples, for k = 1, 3, 5, … up to its K."""
    records = [results[(strategy.name, t.id, r)] for t in tasks for r in range(1, replicates + 1)]
    if not records:
        return []
    k = min(len(r["samples"]) for r in records)
    points = []
    for size in range(1, k + 1, 2):
        right = sum(majority(r["samples"][:size]) == r["known"] for r in records)
        points.append((size, right / len(records)))
    return points


def plot(summary: Mapping[str, Any], curve: Sequence[tuple[int, float]], unit: str, path: Path) -> None:
    """Left: every verdict's paired difference with its interval. Right: the self-consistency scaling curve (K = 1,
    3, 5, …) by mean cost, with each deliberation placed on it by its own cost."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, (left, right) = pyplot.subplots(1, 2, figsize=(11, 4.5))
    verdicts = summary["verdicts"]
    for index, row in enumerate(verdicts):
        low, high = row["ci95"]
        diff = row["difference"] * 100
        left.errorbar(diff, index, xerr=[[diff - low * 100], [high * 100 - diff]], fmt="o", capsize=4)
    left.set_yticks(range(len(verdicts)), [f"{v['deliberation']} vs {v['baseline']}" for v in verdicts], fontsize=7)
    left.axvline(0, color="grey", linewidth=1)
    left.set_xlabel("accuracy difference, points (95% interval)")
    left.invert_yaxis()
    rows = {row["name"]: row for row in summary["strategies"]}
    per_sample = _per_sample_cost(summary, unit)
    if curve and per_sample is not None:
        right.plot(
            [k * per_sample for k, _ in curve], [a for _, a in curve], "o-", label="self-consistency, K = 1, 3, …"
        )
    for row in rows.values():
        cost = row["cost"][unit]
        if row["kind"] in ("debate", "protocol") and cost is not None:
            right.plot(cost, row["accuracy"], "s", label=row["label"])
    right.set_xlabel(f"mean {unit.replace('_', ' ')} per task")
    right.set_ylabel("accuracy")
    right.set_ylim(0, 1)
    if right.get_legend_handles_labels()[0]:
        right.legend(fontsize=7)
    right.grid(alpha=0.3)
    figure.suptitle(f"{summary['tasks']}, {summary['n_tasks']} tasks")
    figure.tight_layout()
    figure.savefig(path, format="svg")
    pyplot.close(figure)


def _per_sample_cost(summary: Mapping[str, Any], unit: str) -> float | None:
    """The mean cost of one sample of the strategy the curve is drawn from (its mean cost over its K)."""
    for row in summary["strategies"]:
        if row["kind"] in ("sc", "match") and row.get("k") and row["cost"][unit] is not None:
            return float(row["cost"][unit]) / int(row["k"])
    return None


COST_UNITS = dict(zip(MEASURES, ("calls", "completion_tokens", "tokens", "usd"), strict=True))

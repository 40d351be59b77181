"""Writes bench/RESULTS.md (tables for people) and bench/results.json (the same figures for programs)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Table

RELIABILITY_DIR = Path(__file__).parent / "reliability"


def reliability_runs() -> list[dict[str, Any]]:
    """The figures the long reliability suite left behind (tests/reliability/reliability_helpers.py)."""
    if not RELIABILITY_DIR.is_dir():
        return []
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(RELIABILITY_DIR.glob("*.json"))]


def write(out: Path, stem: str, machine: dict[str, Any], results: list[BenchResult], quick: bool) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    reliability = reliability_runs()
    data = {
        "mode": "quick" if quick else "full",
        "machine": machine,
        "benchmarks": [asdict(result) for result in results],
        "reliability": reliability,
    }
    json_path = out / f"{stem}.json"
    json_path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    md_path = out / f"{stem.replace('results', 'RESULTS')}.md"
    md_path.write_text(render(machine, results, reliability, quick), encoding="utf-8")
    return md_path, json_path


def rewrite(out: Path, stem: str) -> tuple[Path, Path]:
    """Write ``stem``'s report again from its JSON, with the reliability figures as they are now."""
    data = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
    results = [
        BenchResult(**{**result, "tables": [Table(**table) for table in result["tables"]]})
        for result in data["benchmarks"]
    ]
    return write(out, stem, data["machine"], results, data["mode"] == "quick")


def merged(out: Path, stem: str, fresh: list[BenchResult]) -> list[BenchResult]:
    """``fresh`` results with, in their places, the other benchmarks of the existing ``stem`` JSON, their
    summaries saying which run they come from."""
    data = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
    ran = {result.name: result for result in fresh}
    earlier = f"(from the run of {data['machine']['date']}) "
    results = []
    for result in data["benchmarks"]:
        if result["name"] in ran:
            results.append(ran.pop(result["name"]))
            continue
        kept = BenchResult(**{**result, "tables": [Table(**table) for table in result["tables"]]})
        kept.summary = kept.summary if kept.summary.startswith("(from the run") else earlier + kept.summary
        kept.losses = [loss if loss.startswith("(from the run") else earlier + loss for loss in kept.losses]
        results.append(kept)
    return [*results, *ran.values()]


def render(machine: dict[str, Any], results: list[BenchResult], reliability: list[dict[str, Any]], quick: bool) -> str:
    lines = [
        "# moot benchmark results",
        "",
        f"Written by `{machine['command']}` on {machine['date']} ({'quick' if quick else 'full'} mode).",
        "Every figure is a median of several runs beside a baseline measured in the same run; on a shared,",
        "noisy machine only the ratios carry over to another machine.",
        "",
        "## Machine",
        "",
        f"- CPU: {machine['cpu']}, {machine['cores']} cores; memory {machine['memory_gib']} GiB; {machine['os']}",
        f"- Python {machine['python']}, SQLite {machine['sqlite']}, PostgreSQL {machine['postgresql']}",
        "- " + ", ".join(f"{name} {ver}" for name, ver in machine["packages"].items()),
        *(
            [
                "- Load average when the run ended (1, 5, 15 min): "
                + ", ".join(f"{value:g}" for value in machine["load_average"])
                + f" on {machine['cores']} cores. Above the core count, processes wait for a core: wall-clock "
                "figures then say more about the machine than about the code, and the ratios between systems "
                "measured in turn hold best."
            ]
            if "load_average" in machine
            else []
        ),
        "",
        "## Summary",
        "",
    ]
    lines += [f"- **{r.name}**: {f'skipped: {r.skipped}' if r.skipped else r.summary}" for r in results]
    losses = [loss for r in results for loss in r.losses]
    lines += ["", "## Where moot loses", ""]
    lines += [f"- {loss}" for loss in losses] or ["- Nowhere in this run."]
    for result in results:
        lines += ["", f"## {result.name}", ""]
        if result.skipped:
            lines += [f"Skipped: {result.skipped}"]
        for table in result.tables:
            lines += render_table(table)
    lines += ["", "## Reliability suite (long mode)", ""]
    if not reliability:
        lines += ["No long run recorded yet: `MOOT_RELIABILITY=long .venv/bin/python -m pytest -m reliability -q`."]
    for run in reliability:
        lines += render_reliability(run)
    return "\n".join(lines) + "\n"


def render_table(table: Table) -> list[str]:
    lines = [f"### {table.title}", "", "| " + " | ".join(table.columns) + " |"]
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in table.rows]
    lines += [""] + [f"{note}  " for note in table.notes]
    return [*lines, ""]


def render_reliability(run: dict[str, Any]) -> list[str]:
    """One long reliability run: its own facts as a two-column table (the tests decide what they record)."""
    shown = {key: value for key, value in run.items() if key not in {"name", "command"}}
    lines = [f"### {run['name']}", "", f"`{run['command']}`", "", "| figure | value |", "|---|---|"]
    lines += [
        f"| {key} | {json.dumps(value) if isinstance(value, dict | list) else value} |" for key, value in shown.items()
    ]
    return [*lines, ""]

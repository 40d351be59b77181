"""How long the ``moot`` command takes to start: ``moot --help`` and ``moot check FILE`` vs ``python -c pass``.

Each command runs as a fresh process, the three taking turns so drift on a shared machine hits all alike,
after one untimed warm-up each. ``python -X importtime`` then says which imports the start-up spends on.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from bench.common import BenchResult, Table, fmt, fmt_ratio, median, ratio
from bench.scripted import durable_dir, expect_done, run_moot_debate

BASELINE = "python -c pass"
IMPORT = "python -c 'import moot.cli'"
HELP = "moot --help"
CHECK = "moot check FILE"
SLOW_RATIO = 5.0  # above this many times a bare interpreter, the start-up cost is reported as a loss


def moot_script() -> str:
    """The venv's ``moot`` console script (beside this interpreter), else the one on PATH."""
    beside = Path(sys.executable).parent / "moot"
    found = str(beside) if beside.is_file() else shutil.which("moot")
    if found is None:
        raise RuntimeError("no `moot` console script beside this interpreter or on PATH: pip install -e .")
    return found


def write_valid_record(root: Path) -> Path:
    """A finished critique record, written by moot itself (the scripted debate)."""
    result = asyncio.run(run_moot_debate(root, 0))
    expect_done(result)
    return result.record_path


def wall_seconds(argv: list[str]) -> float:
    """Wall time of one run of ``argv``, which must exit 0 (``moot check`` does only on a valid record)."""
    started = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {completed.returncode}: {completed.stderr.strip()[-500:]}")
    return elapsed


def import_profile(argv: list[str]) -> tuple[float, dict[str, float], dict[str, float]]:
    """``python -X importtime`` of ``argv``: total import ms, own import ms per top-level package, and the
    cumulative ms of each module ``moot.cli`` imports directly (its first importer pays for what it shares)."""
    completed = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True)
    own: dict[str, float] = defaultdict(float)
    children: dict[str, float] = {}  # direct imports of the next top-level module (printed before it)
    cli_children: dict[str, float] = {}
    for line in completed.stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        self_us, cumulative_us, name = line.removeprefix("import time:").split("|")
        module, depth = name.strip(), (len(name) - len(name.lstrip()) - 1) // 2
        own[module.split(".")[0]] += int(self_us) / 1000
        if depth == 1:
            children[module] = int(cumulative_us) / 1000
        elif depth == 0:
            if module == "moot.cli":
                cli_children = children
            children = {}
    return sum(own.values()), dict(own), cli_children


def top(values: dict[str, float], count: int) -> list[tuple[str, float]]:
    return sorted(values.items(), key=lambda item: item[1], reverse=True)[:count]


def run(quick: bool) -> BenchResult:
    runs = 5 if quick else 20
    moot = moot_script()
    root = durable_dir()
    try:
        record = write_valid_record(root)
        commands = {
            BASELINE: [sys.executable, "-c", "pass"],
            IMPORT: [sys.executable, "-c", "import moot.cli"],  # the imports alone, without running a command
            HELP: [moot, "--help"],
            CHECK: [moot, "check", str(record)],
        }
        for argv in commands.values():
            wall_seconds(argv)  # warm-up: the page cache and .pyc files, not the start-up itself
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, argv in commands.items():
                samples[name].append(wall_seconds(argv))
        imports_ms, own_ms, cli_ms = import_profile([moot, "--help"])
        bare_ms, bare_own_ms, _ = import_profile(["-c", "pass"])
    finally:
        shutil.rmtree(root, ignore_errors=True)

    # What moot adds to the bare interpreter's own start-up imports (encodings, site, ...).
    extra_ms = imports_ms - bare_ms
    own_ms = {name: value - bare_own_ms.get(name, 0.0) for name, value in own_ms.items()}
    ms = {name: median(values) * 1000 for name, values in samples.items()}
    ratios = {name: ratio(ms[name], ms[BASELINE]) for name in ms}
    rows = [[name, fmt(ms[name], 1), fmt(min(samples[name]) * 1000, 1), fmt_ratio(ratios[name])] for name in commands]
    packages = ", ".join(f"{name} {fmt(value, 0)} ms" for name, value in top(own_ms, 6))
    cli_imports = ", ".join(f"{name} {fmt(value, 0)} ms" for name, value in top(cli_ms, 4))
    notes = [
        f"Median wall time of {runs} fresh processes per command, the commands taking turns, after one untimed "
        f"warm-up each; `moot` is the venv's console script ({moot}), the baseline is the same interpreter "
        f"({sys.executable}). FILE is a finished 6-turn critique record written by moot (exit code 0: valid).",
        f"`python -X importtime moot --help`: {fmt(extra_ms, 0)} ms of imports beyond those of `python -c pass` "
        f"({fmt(bare_ms, 0)} ms), by top-level package (own import time): {packages}. The heaviest modules "
        f"moot.cli imports (cumulative; the first importer pays for what they share): {cli_imports}.",
    ]
    table = Table(
        title="Start-up wall time of the moot command",
        columns=["command", "median ms", "fastest ms", "vs python -c pass"],
        rows=rows,
        notes=notes,
    )
    import_share = (ms[IMPORT] - ms[BASELINE]) / (ms[HELP] - ms[BASELINE])
    share = "nearly all" if import_share >= 0.95 else f"{import_share:.0%}"  # noise can push it past 100%
    losses = []
    if max(ratios[HELP], ratios[CHECK]) > SLOW_RATIO:
        losses.append(
            f"startup: `moot --help` takes {fmt(ms[HELP], 0)} ms and `moot check FILE` {fmt(ms[CHECK], 0)} ms, "
            f"{fmt_ratio(ratios[HELP])} and {fmt_ratio(ratios[CHECK])} a bare `python -c pass`. Importing moot.cli "
            f"alone takes {fmt(ms[IMPORT], 0)} ms, {share} of what `moot --help` adds to the bare interpreter (the "
            "rest is running the command itself); by `python -X importtime` the imports are mostly "
            f"{packages}."
        )
    summary = (
        f"`moot --help` starts in {fmt(ms[HELP], 0)} ms and `moot check FILE` in {fmt(ms[CHECK], 0)} ms: "
        f"{fmt_ratio(ratios[HELP])} and {fmt_ratio(ratios[CHECK])} `python -c pass` ({fmt(ms[BASELINE], 0)} ms)."
    )
    data = {
        "runs": runs,
        "median_ms": {name: round(value, 2) for name, value in ms.items()},
        "ratio_vs_python": {name: round(value, 3) for name, value in ratios.items()},
        "import_share_of_help": round(import_share, 3),
        "help_import_ms": round(imports_ms, 1),
        "bare_import_ms": round(bare_ms, 1),
        "help_import_ms_by_package": {name: round(value, 1) for name, value in top(own_ms, 12)},
        "help_import_ms_by_cli_module": {name: round(value, 1) for name, value in top(cli_ms, 8)},
    }
    return BenchResult("startup", summary, [table], data, losses)

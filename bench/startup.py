"""How long the ``moot`` command takes to start: ``moot --help`` and ``moot check FILE`` vs ``python -c pass``,
and the agent-tool calls an outside agent makes every turn (``moot duel status``, ``moot critique status``)
vs the zero-dependency peer CLI ``debate status`` (the PyPI package ``debate``).

Each command runs as a fresh process, all taking turns so drift on a shared machine hits all alike, after one
untimed warm-up each. ``python -X importtime`` then says which imports the start-up spends on.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from bench.common import BenchResult, Table, fmt, fmt_ratio, median, ratio
from bench.scripted import durable_dir, expect_done, run_moot_debate

BASELINE = "python -c pass"
IMPORT = "python -c 'import moot.cli.commands'"
HELP = "moot --help"
CHECK = "moot check FILE"
DUEL_STATUS = "moot duel status --duel-id ID"
CRITIQUE_STATUS = "moot critique status --file FILE"
DEBATE_STATUS = "debate status"
PYDANTIC = "python -c 'from pydantic import BaseModel'"  # the floor of any call whose results are pydantic models
TOOL_GOAL = 0.8  # an agent-tool call should take at most this share of `debate status`
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


def peer_script(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name)


def prepare_duel(moot: str, root: Path) -> str:
    """A duel two participants joined, as the seed's skill does; its id."""
    source = root / "cache-design.md"
    source.write_text("# Cache design\n\nShare one cache across tenants, keyed by tenant id.\n", encoding="utf-8")
    duel_id = ""
    for name in ("alice", "bob"):
        who = ["--participant-name", name, "--harness", "bench", "--run-id", f"run-{name}"]
        joined = subprocess.run(
            [moot, "duel", "join", "--target", str(source), *who, "--root", str(root)],
            capture_output=True,
            text=True,
            check=True,
        )
        duel_id = json.loads(joined.stdout)["duel_id"]
    return duel_id


def prepare_channel(debate: str, root: Path) -> Path:
    """A `debate` channel with its two parties and a few entries, as its README starts one."""
    channel = root / "channel"
    channel.mkdir()
    subprocess.run([debate, "init", "--root", str(channel), "--parties", "claude,glm"], capture_output=True, check=True)
    for number, sender in enumerate(["claude", "glm", "claude"], start=1):
        body = f"Entry {number}: share one cache, keyed by tenant id."
        subprocess.run(
            [
                debate,
                "post",
                "--root",
                str(channel),
                "--from",
                sender,
                "--type",
                "info",
                "--thread",
                "cache",
                "--body",
                body,
            ],
            capture_output=True,
            check=True,
        )
    return channel


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
    cumulative ms of each module ``moot.cli.commands`` imports directly (its first importer pays for what it shares)."""
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
            if module == "moot.cli.commands":
                cli_children = children
            children = {}
    return sum(own.values()), dict(own), cli_children


def top(values: dict[str, float], count: int) -> list[tuple[str, float]]:
    return sorted(values.items(), key=lambda item: item[1], reverse=True)[:count]


def run(quick: bool) -> BenchResult:
    runs = 5 if quick else 20
    moot = moot_script()
    debate = peer_script("debate")
    root = durable_dir()
    try:
        record = write_valid_record(root)
        duel_id = prepare_duel(moot, root)
        commands = {
            BASELINE: [sys.executable, "-c", "pass"],
            IMPORT: [sys.executable, "-c", "import moot.cli.commands"],  # the whole app's imports, no command run
            HELP: [moot, "--help"],
            CHECK: [moot, "check", str(record)],
            DUEL_STATUS: [moot, "duel", "status", "--duel-id", duel_id, "--root", str(root)],
            CRITIQUE_STATUS: [moot, "critique", "status", "--file", str(record), "--root", str(root)],
            PYDANTIC: [sys.executable, "-c", "from pydantic import BaseModel"],
        }
        if debate is not None:
            commands[DEBATE_STATUS] = [debate, "status", "--root", str(prepare_channel(debate, root))]
        for argv in commands.values():
            wall_seconds(argv)  # warm-up: the page cache and .pyc files, not the start-up itself
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, argv in commands.items():
                samples[name].append(wall_seconds(argv))
        imports_ms, own_ms, cli_ms = import_profile([moot, "--help"])
        bare_ms, bare_own_ms, _ = import_profile(["-c", "pass"])
        tool_ms, tool_own_ms, _ = import_profile(commands[DUEL_STATUS])
    finally:
        shutil.rmtree(root, ignore_errors=True)

    # What moot adds to the bare interpreter's own start-up imports (encodings, site, ...).
    extra_ms = imports_ms - bare_ms
    own_ms = {name: value - bare_own_ms.get(name, 0.0) for name, value in own_ms.items()}
    ms = {name: median(values) * 1000 for name, values in samples.items()}
    ratios = {name: ratio(ms[name], ms[BASELINE]) for name in ms}
    startup_names = [BASELINE, IMPORT, HELP, CHECK]
    rows = [
        [name, fmt(ms[name], 1), fmt(min(samples[name]) * 1000, 1), fmt_ratio(ratios[name])] for name in startup_names
    ]
    packages = ", ".join(f"{name} {fmt(value, 0)} ms" for name, value in top(own_ms, 6))
    cli_imports = ", ".join(f"{name} {fmt(value, 0)} ms" for name, value in top(cli_ms, 4))
    notes = [
        f"Median wall time of {runs} fresh processes per command, the commands taking turns, after one untimed "
        f"warm-up each; `moot` is the venv's console script ({moot}), the baseline is the same interpreter "
        f"({sys.executable}). FILE is a finished 6-turn critique record written by moot (exit code 0: valid).",
        f"`python -X importtime moot --help`: {fmt(extra_ms, 0)} ms of imports beyond those of `python -c pass` "
        f"({fmt(bare_ms, 0)} ms), by top-level package (own import time): {packages}. The heaviest modules "
        f"moot.cli.commands imports (cumulative; the first importer pays for what they share): {cli_imports}.",
    ]
    table = Table(
        title="Start-up wall time of the moot command",
        columns=["command", "median ms", "fastest ms", "vs python -c pass"],
        rows=rows,
        notes=notes,
    )
    tool_table, tool_losses, tool_summary, tool_data = agent_tool_figures(
        ms, samples, runs, tool_ms - bare_ms, {k: v - bare_own_ms.get(k, 0.0) for k, v in tool_own_ms.items()}
    )
    import_share = (ms[IMPORT] - ms[BASELINE]) / (ms[HELP] - ms[BASELINE])
    share = "nearly all" if import_share >= 0.95 else f"{import_share:.0%}"  # noise can push it past 100%
    losses = []
    if max(ratios[HELP], ratios[CHECK]) > SLOW_RATIO:
        losses.append(
            f"startup: `moot --help` takes {fmt(ms[HELP], 0)} ms and `moot check FILE` {fmt(ms[CHECK], 0)} ms, "
            f"{fmt_ratio(ratios[HELP])} and {fmt_ratio(ratios[CHECK])} a bare `python -c pass`. Importing moot.cli."
            f"commands alone takes {fmt(ms[IMPORT], 0)} ms, {share} of what `moot --help` adds to the bare interpreter (the "
            "rest is running the command itself); by `python -X importtime` the imports are mostly "
            f"{packages}."
        )
    summary = (
        f"`moot --help` starts in {fmt(ms[HELP], 0)} ms and `moot check FILE` in {fmt(ms[CHECK], 0)} ms: "
        f"{fmt_ratio(ratios[HELP])} and {fmt_ratio(ratios[CHECK])} `python -c pass` ({fmt(ms[BASELINE], 0)} ms). "
        + tool_summary
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
        **tool_data,
    }
    return BenchResult("startup", summary, [table, tool_table], data, [*losses, *tool_losses])


def agent_tool_figures(
    ms: dict[str, float],
    samples: dict[str, list[float]],
    runs: int,
    tool_import_ms: float,
    tool_own_ms: dict[str, float],
) -> tuple[Table, list[str], str, dict[str, object]]:
    """The agent-tool calls against `debate status` (and the bare interpreter)."""
    names = [BASELINE, PYDANTIC, DUEL_STATUS, CRITIQUE_STATUS, *([DEBATE_STATUS] if DEBATE_STATUS in ms else [])]
    peer = ms.get(DEBATE_STATUS)
    rows = [
        [
            name,
            fmt(ms[name], 1),
            fmt(min(samples[name]) * 1000, 1),
            fmt_ratio(ratio(ms[name], ms[BASELINE])),
            "—" if peer is None else fmt_ratio(ratio(ms[name], peer)),
        ]
        for name in names
    ]
    packages = ", ".join(f"{name} {fmt(value, 0)} ms" for name, value in top(tool_own_ms, 6))
    notes = [
        f"Median wall time of {runs} fresh processes per command, taking turns with the start-up commands above. "
        "`moot duel status` reads a duel two participants joined (its ledger and record); `moot critique status` "
        "the finished 6-turn critique; `debate status` (PyPI `debate` 0.8.0, stdlib only) a channel its `init` "
        "made, with three posted entries. `from pydantic import BaseModel` is the floor of any call whose results are "
        "pydantic models.",
        f"`python -X importtime` of `moot duel status`: {fmt(tool_import_ms, 0)} ms of imports beyond the bare "
        f"interpreter's, by top-level package: {packages}.",
    ]
    if peer is None:
        notes.append("The `debate` package is not installed here (pip install -e '.[bench]'): no peer column.")
    table = Table(
        title="An agent-tool call vs the peer CLI's `debate status`",
        columns=["command", "median ms", "fastest ms", "vs python -c pass", "vs debate status (goal ≤ 0.8×)"],
        rows=rows,
        notes=notes,
    )
    losses, summary = [], ""
    if peer is not None:
        worst = max(ms[DUEL_STATUS], ms[CRITIQUE_STATUS])
        summary = (
            f"`moot duel status` takes {fmt(ms[DUEL_STATUS], 0)} ms, {fmt_ratio(ratio(ms[DUEL_STATUS], peer))} "
            f"`debate status` ({fmt(peer, 0)} ms)."
        )
        if worst > TOOL_GOAL * peer:
            losses.append(
                f"startup: an agent-tool call (`moot duel status` {fmt(ms[DUEL_STATUS], 0)} ms, `moot critique status` "
                f"{fmt(ms[CRITIQUE_STATUS], 0)} ms) takes {fmt_ratio(ratio(worst, peer))} the stdlib-only "
                f"`debate status` ({fmt(peer, 0)} ms; goal ≤ 0.8×). It loads neither the rest of the CLI, the "
                f"engine, rich nor typer (its options are read without it), but its own imports remain: {packages} "
                "(pydantic holds the protocols' typed turns, the ledger's rows and the tools' results). Importing "
                f"pydantic's BaseModel alone takes {fmt(ms[PYDANTIC], 0)} ms, "
                f"{fmt_ratio(ratio(ms[PYDANTIC], peer))} `debate status`."
            )
    data: dict[str, object] = {
        "agent_tool_ms": {name: round(ms[name], 2) for name in names},
        "agent_tool_vs_debate_status": None
        if peer is None
        else {name: round(ratio(ms[name], peer), 3) for name in (DUEL_STATUS, CRITIQUE_STATUS)},
        "duel_status_import_ms_by_package": {name: round(value, 1) for name, value in top(tool_own_ms, 10)},
    }
    return table, losses, summary, data

"""The commands an outside agent calls every turn start without the rest of the CLI: a small app runs them,
with the same help and output as the whole app."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Loaded by `moot run`, `moot show` or rich help, never needed to answer an agent-tool call.
HEAVY = ("rich", "moot.engine", "moot.agents", "moot.cli.commands", "moot.cli.run", "moot.mcp", "httpx", "openai")

CALL = """
import json, sys
from moot.cli import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""

TOOL_CALLS = [
    ["duel", "status", "--duel-id", "d-1"],
    ["critique", "status", "--file", ".dialogues/api.md"],
    ["roundtable", "status", "--name", "cache"],
    ["emit", "--workflow", "socratic-duel", "--type", "status_change", "--run-id", "r1", "--step", "debating"],
]


def call(args: list[str], cwd: Path) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", CALL, json.dumps(args)], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    modules = set(json.loads(done.stderr.rpartition("\nMODULES ")[2]))
    return done.stdout, modules


@pytest.mark.parametrize("args", TOOL_CALLS, ids=lambda args: " ".join(args[:2]))
def test_an_agent_tool_call_loads_none_of_the_heavy_modules(args: list[str], tmp_path: Path) -> None:
    stdout, modules = call([*args, "--root", str(tmp_path)], tmp_path)
    assert "ok" in json.loads(stdout)  # the tool answered (ok or a refusal), as one JSON object
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert loaded == [], f"an agent-tool call imported {loaded}; import them where they are used"


def test_other_commands_still_run_through_the_whole_app(tmp_path: Path) -> None:
    _, modules = call(["ls", str(tmp_path)], tmp_path)
    assert "moot.cli.commands" in modules


@pytest.mark.parametrize("args", [["duel", "--help"], ["critique", "append", "--help"], ["emit", "--help"]])
def test_help_is_the_same_as_through_the_whole_app(args: list[str], tmp_path: Path) -> None:
    fast, _ = call(args, tmp_path)
    whole = subprocess.run(
        [sys.executable, "-c", f"from moot.cli.commands import app; app({args!r}, prog_name='moot')"],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert fast == whole and "Usage: moot" in fast

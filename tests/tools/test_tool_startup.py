"""The commands an outside agent calls every turn start without the rest of the CLI: a small app runs them,
with the same help and output as the whole app."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tools_helpers import MOOT

# Loaded by `moot run`, `moot show`, help or a usage error, never needed to answer an agent-tool call.
HEAVY = (
    "rich",
    "typer",
    "click",
    "pathspec",
    "moot.engine",
    "moot.agents",
    "moot.cli.commands",
    "moot.cli.run",
    "moot.mcp",
    "httpx",
    "openai",
)

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


def whole_app(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``args`` through the whole typer app, as every command ran before agent tools had a fast path."""
    code = f"from moot.cli.commands import app; app({args!r}, prog_name='moot')"
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
    return done.returncode, done.stdout, done.stderr


def fast(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = subprocess.run([str(MOOT), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_a_call_reads_its_options_as_typer_does(tmp_path: Path) -> None:
    """`--flag=value`, an environment variable and a flag: the same answer, exit code and record either way."""
    source = tmp_path / "design.md"
    source.write_text("# Cache design\n\nOne cache per tenant.\n", encoding="utf-8")
    env = {
        **os.environ,
        "MOOT_ROOT": str(tmp_path),
        "MOOT_LEASE_TOKEN": "not-the-lease",
        "MOOT_LEASE_SECONDS": "60",
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    join = ["duel", "join", f"--target={source}", "--participant-name", "alice", "--harness", "codex", "--run-id=r1"]
    code, out, _ = fast(join, tmp_path, env)
    assert code == 0, out
    duel_id = json.loads(out)["duel_id"]
    participant = json.loads(out)["participant_id"]
    # Calls that change nothing (a read, refusals), so each answers the same the second time.
    calls = [
        ["duel", "status", f"--duel-id={duel_id}"],
        ["duel", "refresh-lock", "--duel-id", duel_id, "--participant-id", participant],  # token from $MOOT_LEASE_TOKEN
        ["duel", "claim-lock", "--duel-id", duel_id, "--participant-id", "nobody", "--for-timeout"],
    ]
    for args in calls:
        code, out, err = fast(args, tmp_path, env)
        whole_code, whole_out, whole_err = whole_app(args, tmp_path, env)
        assert (code, err) == (whole_code, whole_err), args
        assert strip_times(out) == strip_times(whole_out), args
        assert code != 0 or args[1] == "status"


def strip_times(out: str) -> dict[str, object]:
    """A tool's JSON answer without what changes from one call to the next (lease times and tokens)."""
    answer = json.loads(out)
    return {k: v for k, v in answer.items() if "expires" not in k and "token" not in k and not k.endswith("_at")}


@pytest.mark.parametrize(
    "args",
    [
        ["duel", "status"],  # a required option missing
        ["duel", "status", "--duel-id", "d-1", "--bogus"],  # an unknown option
        ["duel", "claim-lock", "--duel-id", "d-1", "--participant-id", "p", "--ttl-seconds", "soon"],  # not a number
        ["duel", "status", "--duel-id"],  # an option without its value
        ["duel", "nosuch"],  # an unknown command
    ],
    ids=["missing", "unknown", "not-a-number", "no-value", "no-command"],
)
def test_a_usage_error_is_the_whole_apps_own(args: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    code, out, err = fast([*args, "--root", str(tmp_path)], tmp_path, env)
    assert (code, out, err) == whole_app([*args, "--root", str(tmp_path)], tmp_path, env)
    assert code == 2 and "Usage: moot duel" in err


def test_the_whole_apps_help_lists_the_agent_tools_without_loading_them(tmp_path: Path) -> None:
    """`moot --help` names every protocol's tool group and `moot emit` from the declarations' plugin objects,
    without importing a protocol's tools or the ledger they use."""
    out, modules = call(["--help"], tmp_path)
    assert "emit" in out and "duel" in out and "roundtable" in out
    loaded = sorted(
        m for m in modules if m.startswith("moot.ledger") or (m.startswith("moot.protocols.") and m.endswith(".tools"))
    )
    assert loaded == [], f"moot --help imported {loaded}"

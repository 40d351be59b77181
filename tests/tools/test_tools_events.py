"""``moot emit`` takes the seed's emit calls and refuses malformed ones; ``moot events`` reads them back."""

from __future__ import annotations

import json
import subprocess

from tools_helpers import MOOT, Cli

RUN = "run-7"
DUEL = ["--harness", "codex", "--workflow", "socratic-duel", "--run-id", RUN]

# The seed skill's §EMIT calls, in the order a duel makes them.
SEED_EVENTS: list[list[str]] = [
    ["--type", "status_change", "--step", "preparing", "--data", '{"status":"running","target":"/w/a.md","topic":"T"}'],
    [
        "--type", "status_change", "--step", "preparing", "--unit", "participant:p1",
        "--data", '{"status":"completed","event":"participant_registered","duel_id":"d1","participant_count":"1"}',
    ],
    [
        "--type", "artifact_registered", "--step", "debating",
        "--data", '{"path":"debates/t-d1.md","storageRoot":"work_dir","type":"markdown","duel_id":"d1"}',
    ],
    [
        "--type", "btw_update", "--step", "debating",
        "--data", '{"message":"Candidate convergence detected.","metadata":{"turn_number":"4","candidate_convergence":true}}',
    ],
    [
        "--type", "status_change", "--step", "completed", "--close-run",
        "--data", '{"status":"completed","outcome":"ACCEPTED_CONSENSUS","duel_id":"d1","summary":"agreed"}',
    ],
]  # fmt: skip


def test_the_seeds_emit_calls_are_stored_and_read_back_in_order(cli: Cli) -> None:
    stored = [cli("emit", *DUEL, *args).ok() for args in SEED_EVENTS]
    assert [e["id"] for e in stored] == sorted(e["id"] for e in stored)
    assert stored[1]["unit"] == "participant:p1" and stored[1]["harness"] == "codex"
    assert stored[3]["data"]["metadata"]["candidate_convergence"] is True
    assert stored[4]["close_run"] is True
    cli(
        "emit", "--workflow", "other", "--type", "status_change", "--run-id", "run-8", "--data", '{"status":"running"}'
    ).ok()

    read = cli("events", "--run-id", RUN, "--json")
    assert read.code == 0
    lines = [json.loads(line) for line in read.stdout.splitlines()]
    assert [e["id"] for e in lines] == [e["id"] for e in stored]
    assert [e["type"] for e in lines] == [
        "status_change",
        "status_change",
        "artifact_registered",
        "btw_update",
        "status_change",
    ]
    assert lines[2]["data"]["path"] == "debates/t-d1.md"
    assert len(cli("events", "--json").stdout.splitlines()) == 6
    text = cli("events", "--run-id", "run-8").stdout
    assert "status_change" in text and "run=run-8" in text and RUN not in text

    # A closed run accepts nothing more.
    late = cli("emit", *DUEL, "--type", "status_change", "--step", "debating", "--data", '{"status":"running"}')
    late.refused("TOOLS_EVENT")
    assert "new run id" in late.data["error"]


def test_malformed_events_are_refused_and_not_stored(cli: Cli) -> None:
    cases = [
        ["--type", "status_change", "--data", "{not json"],
        ["--type", "status_change", "--data", '["a list"]'],
        ["--type", "status_changed", "--data", '{"status":"running"}'],
        ["--type", "status_change", "--data", '{"event":"no status"}'],
        ["--type", "status_change", "--data", '{"status":"sleeping"}'],
        ["--type", "artifact_registered", "--data", '{"storageRoot":"work_dir"}'],
        ["--type", "btw_update", "--data", '{"metadata":{}}'],
        ["--type", "status_change", "--close-run", "--data", '{"status":"running"}'],
    ]
    for args in cases:
        result = cli("emit", *DUEL, *args)
        data = result.refused("TOOLS_EVENT", code=2)
        assert data["error"].endswith(".")
    assert cli("events", "--json").stdout == ""


def test_follow_prints_new_events_until_the_run_closes(cli: Cli) -> None:
    follower = subprocess.Popen(
        [str(MOOT), "events", "--run-id", RUN, "--follow", "--json", "--interval", "0.1"],
        cwd=cli.root,
        env=cli.environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for args in (SEED_EVENTS[0], SEED_EVENTS[2], SEED_EVENTS[4]):
            cli("emit", *DUEL, *args).ok()
        out, err = follower.communicate(timeout=60)
    finally:
        follower.kill()
    assert follower.returncode == 0, err
    assert [json.loads(line)["type"] for line in out.splitlines()] == [
        "status_change",
        "artifact_registered",
        "status_change",
    ]

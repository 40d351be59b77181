"""An outside agent for the contention test: it takes part in a duel using only the ``moot`` CLI.

    python duel_agent.py MOOT ROOT SOURCE NAME HARNESS MODEL TURNS_DIR

``TURNS_DIR`` holds this agent's turns as ``N.md``; it writes turn N whenever the artifact has N - 1 turns,
closes the duel when its turn reaches an outcome, and exits 0 once the duel is closed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def main(moot: str, root: str, source: str, name: str, harness: str, model: str, turns_dir: str) -> int:
    def run(*args: str) -> tuple[int, dict[str, Any]]:
        done = subprocess.run([moot, *args], cwd=root, capture_output=True, text=True, timeout=120)
        return done.returncode, json.loads(done.stdout)

    code, joined = run(
        "duel", "join", "--target", source, "--participant-name", name, "--harness", harness, "--model-id", model,
        "--run-id", f"run-{name}",
    )  # fmt: skip
    assert code == 0, joined
    duel, me = joined["duel_id"], joined["participant_id"]
    mine = {int(p.stem): p for p in Path(turns_dir).glob("*.md")}
    refusals = 0
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        code, lock = run("duel", "claim-lock", "--duel-id", duel, "--participant-id", me)
        if code != 0:
            rules = {r["rule"] for r in lock["rules"]}
            assert code == 1 and rules & {"TOOLS_LOCK_HELD", "TOOLS_WAITING_FOR_PARTICIPANT", "TOOLS_DEBATE_CLOSED"}, (
                lock
            )
            if "TOOLS_DEBATE_CLOSED" in rules:  # the peer wrote the last turn and closed the duel
                print(json.dumps({"refusals": refusals}))
                return 0
            refusals += "TOOLS_LOCK_HELD" in rules
            time.sleep(0.2)
            continue
        token = lock["lease_token"]
        code, status = run("duel", "status", "--duel-id", duel)
        number = status["artifact"]["turns"] + 1
        if number in mine:
            code, appended = run(
                "duel", "append", "--duel-id", duel, "--participant-id", me, "--lease-token", token,
                "--file", str(mine[number]),
            )  # fmt: skip
            assert code == 0, appended
            if appended["terminal_outcome"]:
                code, closed = run(
                    "duel", "release-lock", "--duel-id", duel, "--participant-id", me, "--lease-token", token,
                    "--close", "--outcome", appended["terminal_outcome"],
                )  # fmt: skip
                assert code == 0 and closed["closed"], closed
                print(json.dumps({"refusals": refusals, "closed": True}))
                return 0
        run("duel", "release-lock", "--duel-id", duel, "--participant-id", me, "--lease-token", token)
        time.sleep(0.1 if number in mine else 0.3)
    print(json.dumps({"error": "the duel did not close in time"}))
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:8]))

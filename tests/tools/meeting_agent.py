"""An outside agent for the many-host roundtable test: one speaker of a meeting, using only the ``moot`` CLI.

    python meeting_agent.py MOOT ROOT MEETING ROLE [moderator]

It takes the floor whenever ``turn.json`` names its role, speaks (its speech names its role and the round),
and gives the floor back; with ``moderator`` it also writes the minutes once the meeting is concluding. It
exits 0 once the meeting is closed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MINUTES = """# Minutes

## Summary

Every role spoke in each round.

## Consensus

Partition the cache per tenant.

## Unresolved Disagreements

None.

## Action Items

- architect: write the partitioning plan.
"""


def speech(role: str, round_: int) -> str:
    return f"## Position\n\n{role} in round {round_}: partition the cache per tenant.\n"


def main(moot: str, root: str, name: str, role: str, moderator: bool) -> int:
    def run(*args: str) -> tuple[int, dict[str, Any]]:
        done = subprocess.run([moot, *args], cwd=root, capture_output=True, text=True, timeout=120)
        return done.returncode, json.loads(done.stdout)

    deadline = time.monotonic() + 300
    spoke = 0
    while time.monotonic() < deadline:
        for who in (role, "moderator") if moderator else (role,):
            code, floor = run("roundtable", "take-floor", "--name", name, "--role", who)
            if code != 0:
                rules = {r["rule"] for r in floor.get("rules", [])}
                assert rules & {"TOOLS_NOT_YOUR_TURN", "TOOLS_LOCK_HELD", "TOOLS_DEBATE_CLOSED"}, floor
                if "TOOLS_DEBATE_CLOSED" in rules:
                    print(json.dumps({"spoke": spoke}))
                    return 0
                continue
            text = Path(root).parent / f"{who}.md"
            if who == "moderator":
                text.write_text(MINUTES, encoding="utf-8")
                code, done = run(
                    "roundtable", "minutes", "--name", name, "--lease-token", floor["lease_token"], "--file", str(text)
                )
            else:
                text.write_text(speech(who, floor["round"]), encoding="utf-8")
                code, done = run(
                    "roundtable", "speak", "--name", name, "--role", who, "--lease-token", floor["lease_token"],
                    "--file", str(text),
                )  # fmt: skip
                spoke += 1
            assert code == 0, done
        time.sleep(0.2)
    print(json.dumps({"error": "the meeting did not close in time"}))
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5], moderator=sys.argv[5:] == ["moderator"]))

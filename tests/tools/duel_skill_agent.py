"""An outside agent that takes part in a duel by following the shipped guide's command-line flow literally.

    python duel_skill_agent.py GUIDE SOURCE NAME MODEL TURNS_JSON

It reads the ```sh block of GUIDE (the generated SKILL.md or AGENTS.md), fills its placeholders (the source,
its name, model and run) and types its lines, unchanged, into one ``sh`` session: join once, then wait, claim
with ``--export``, read, append, release (closing at an outcome) until its wait answers ``ended``. Its turns are
scripted: turn N is TURNS_JSON[N - 1] signed as itself, whichever participant won the race for Turn 1. It prints
one JSON line: how many waits, refused claims and turns it made.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_HEADING = re.compile(r"^(## Turn \d+ — ).+?( — [A-Z_]+)$", re.MULTILINE)


class Shell:
    """One ``sh`` process the agent types lines into, as an agent's terminal tool does."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["sh"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )

    def run(self, line: str) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{line}\necho __RC=$?\n")
        self.process.stdin.flush()
        out = []
        while not (got := self.process.stdout.readline()).startswith("__RC="):
            assert got, "the shell ended"
            out.append(got)
        return int(got.removeprefix("__RC=")), "".join(out)

    def json(self, line: str) -> dict[str, Any]:
        code, out = self.run(line)
        assert code == 0, f"{line!r} exited {code}: {out}"
        data = json.loads(out)
        assert isinstance(data, dict)
        return data


def flow(guide: str) -> dict[str, str]:
    """The guide's command lines by what they do, comments cut."""
    block = guide.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #")[0].rstrip() for line in block.splitlines()]
    named = {"join": "duel join", "me": "ME=", "wait": "duel wait", "claim": "claim-lock", "read": "duel read"}
    named |= {"append": "duel append", "release": "release-lock"}
    return {what: next(line for line in lines if marker in line) for what, marker in named.items()}


def main(guide_path: str, source: str, name: str, model: str, turns_json: str) -> int:
    lines = flow(Path(guide_path).read_text(encoding="utf-8"))
    turns = json.loads(Path(turns_json).read_text(encoding="utf-8"))
    shell = Shell()
    join = lines["join"].replace("design.md", source).replace("NAME", name).replace("MODEL", model)
    joined = shell.json(join.replace("RUN", f"run-{name}"))
    shell.run(f"DUEL_ID={joined['duel_id']}; PARTICIPANT_ID={joined['participant_id']}")
    harness = re.search(r"--harness (\S+)", join)
    assert harness is not None
    me = f"{name} ({harness.group(1)} / {model})"
    shell.run(lines["me"])
    waits = refused = written = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        waits += 1
        waited = shell.json(lines["wait"])["waited"]
        if waited == "ended":
            print(
                json.dumps({"duel_id": joined["duel_id"], "waits": waits, "refused_claims": refused, "turns": written})
            )
            return 0
        if waited == "timed_out":
            continue
        code, _ = shell.run(lines["claim"])
        if code != 0:  # the guide: refused, wait again
            refused += 1
            continue
        number = shell.json(lines["read"])["artifact"]["turns"] + 1
        text = _HEADING.sub(lambda m: m.group(1) + me + m.group(2), turns[number - 1], count=1)
        Path("turn.md").write_text(text, encoding="utf-8")
        appended = shell.json(lines["append"])
        written += 1
        outcome = appended["terminal_outcome"]
        shell.json(lines["release"] + (f" --close --outcome {outcome}" if outcome else ""))
    print(json.dumps({"error": "the duel did not end in time"}))
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

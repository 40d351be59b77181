"""A planted participant for `moot eval`: its accuracy is known, so the verdict table can be checked against it.

Run through moot's command backend (it reads the request on stdin, the role and protocol from MOOT_ROLE and
MOOT_PROTOCOL, the reply schema from MOOT_JSON_SCHEMA)::

    moot eval --tasks arithmetic --difficulty 2 --sample 60 --strategy protocol:council \\
      --agent "p1=cmd:python bench/eval/planted.py --accuracy 0.45 --discussion truth --state /tmp/planted.json" …

It answers Du et al.'s arithmetic (``What is the result of …?``). Asked alone, it is right with probability
``--accuracy``; wrong, it answers the value plus 1 (``--wrong K``: plus 1 to K). Shown other answers (a debate
round, a council review or synthesis), it follows ``--discussion``:

- ``truth``: it takes the right answer whenever one of those shown is right, else answers alone again. A
  deliberation then finds the right answer when any opening had it: the planted gain of discussion.
- ``resample``: it answers alone again and ignores what it was shown: discussion changes nothing on average.
- ``majority``: it takes the most common answer shown (conformity).

Where a council asks for confidences it states 0.8, or with ``--calibrated`` 0.9 when its answer (or the answer
it ranks first) is right and 0.1 when it is wrong. With ``--follow-ranking``, as the chairman it adopts the
top-ranked member's answer rather than choosing by ``--discussion``.

Each draw is a function of the role, the request and how often that same request was asked before (counted in
``--state FILE``), so repeated samples differ and a rerun of the same eval draws the same answers. Standard
library only: it starts in tens of milliseconds.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

QUESTION = re.compile(r"result of ([0-9+*\-]+)\?")
ANSWER = re.compile(r"Answer: (-?\d+)")


def _draws(role: str, prompt: str, state: str | None) -> random.Random:
    key = hashlib.sha256(f"{role}\n{prompt}".encode()).hexdigest()
    if state is None:
        return random.Random(os.urandom(16))
    path = Path(state)
    with path.open("a+", encoding="utf-8") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        file.seek(0)
        text = file.read()
        counts: dict[str, int] = json.loads(text) if text.strip() else {}
        seen = counts.get(key, 0)
        counts[key] = seen + 1
        file.seek(0)
        file.truncate()
        file.write(json.dumps(counts))
    return random.Random(f"{key}/{seen}")


class Planted:
    def __init__(self, value: int, args: argparse.Namespace, rng: random.Random) -> None:
        self.value = value
        self.args = args
        self.rng = rng

    def alone(self) -> int:
        if self.rng.random() < self.args.accuracy:
            return self.value
        return self.value + self.rng.randint(1, self.args.wrong)

    def sure(self, answer: int | None) -> float:
        """The confidence it states in ``answer`` (its own, or the one it ranks first): with ``--calibrated``, high
        when it is right and low when it is wrong (a participant that knows when it knows); otherwise the same."""
        if not self.args.calibrated:
            return 0.8
        return 0.9 if answer == self.value else 0.1

    def after(self, shown: list[int]) -> int:
        """Its answer once it has seen ``shown``."""
        if self.args.discussion == "truth":
            return self.value if self.value in shown else self.alone()
        if self.args.discussion == "majority" and shown:
            return Counter(shown).most_common(1)[0][0]
        return self.alone()


def _numbers(blocks: list[str]) -> list[int]:
    return [int(found[-1]) for block in blocks if (found := ANSWER.findall(block))]


def _council(planted: Planted, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    properties = schema["properties"]
    if "ranking" in properties:
        labels = properties["ranking"]["items"]["properties"]["answer"]["enum"]
        texts = re.split(r"\n\n(?=Answer [A-Z]:\n)", prompt)
        shown = {b.split(":", 1)[0]: n for b in texts if b.startswith("Answer ") and (n := _numbers([b]))}
        chosen = planted.after([v[0] for v in shown.values()])
        order = sorted(labels, key=lambda label: shown.get(label, [None])[0] != chosen)
        ranking = [{"answer": label, "reason": f"{label} was checked."} for label in order]
        return _stated({"ranking": ranking}, schema, planted.sure(shown.get(order[0], [None])[0]))
    if "dissent" in properties:
        blocks = re.split(r"\n\n(?=\S+'s answer:\n)", prompt.split("The members' reviews:")[0])
        top = re.search(r"name the top-ranked member, ([\w-]+)\.", prompt)
        adopted = _numbers([b for b in blocks if top and b.startswith(f"{top.group(1)}'s answer:")])
        chosen = adopted[0] if planted.args.follow_ranking and adopted else planted.after(_numbers(blocks))
        others = properties["dissent"]["items"]["properties"]["member"]["enum"]
        return {
            "answer": f"The council's answer is {chosen}. Answer: {chosen}",
            "basis": f"The ranking put {top.group(1) if top else 'nobody'} first.",
            "dissent": [{"member": m, "position": "another value", "why_not_adopted": "checked"} for m in others],
        }
    answer = planted.alone()
    return _stated({"answer": f"I computed it. Answer: {answer}"}, schema, planted.sure(answer))


def _stated(reply: dict[str, Any], schema: dict[str, Any], confidence: float) -> dict[str, Any]:
    """``reply`` with a confidence where the schema asks for one (a council that names its aggregation)."""
    return {**reply, "confidence": confidence} if "confidence" in schema["properties"] else reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accuracy", type=float, required=True)
    parser.add_argument("--discussion", choices=("truth", "resample", "majority"), default="resample")
    parser.add_argument("--wrong", type=int, default=1)
    parser.add_argument("--state")
    parser.add_argument("--calibrated", action="store_true", help="state 0.9 when right and 0.1 when wrong")
    parser.add_argument("--follow-ranking", action="store_true", help="as chairman, adopt the top-ranked answer")
    args = parser.parse_args()
    prompt = sys.stdin.read()
    role = os.environ.get("MOOT_ROLE", "")
    question = QUESTION.search(prompt)
    if question is None:
        sys.exit("the planted participant answers only moot eval's arithmetic")
    planted = Planted(eval(question.group(1), {"__builtins__": {}}), args, _draws(role, prompt, args.state))
    protocol = os.environ.get("MOOT_PROTOCOL", "eval")
    if protocol == "council":
        print(json.dumps(_council(planted, json.loads(os.environ["MOOT_JSON_SCHEMA"]), prompt)))
    elif protocol == "eval":
        shown = _numbers(re.split(r"One agent's answer:", prompt)[1:])
        answer = planted.after(shown) if shown else planted.alone()
        print(f"I computed it.\nAnswer: {answer}")
    else:
        sys.exit(f"the planted participant plays moot eval's own strategies and the council, not {protocol}")


if __name__ == "__main__":
    main()

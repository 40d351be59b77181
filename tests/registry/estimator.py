"""A scripted estimator for the estimate plugin: it works out "What is the result of EXPR?" (or takes 100 for any
other question), misses by an amount of its own in round 1 and gives the exact value from round 2 on.

``reply(role, prompt)`` in-process (the conformance kit), or ``cmd:python estimator.py`` (moot's CommandAgent sends
the prompt on stdin and the role in MOOT_ROLE). Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import sys

MISS = {"ada": -2, "bo": 0, "cy": 3, "p1": -2, "p2": 0, "p3": 3}  # round 1's error of each estimator


def reply(role: str, prompt: str) -> str:
    expression = re.search(r"What is the result of ([0-9+*\- ]+)\?", prompt)
    exact = eval(expression[1]) if expression else 100  # digits and + - * only
    first = re.search(r"this is round (\d+) of", prompt)[1] == "1"  # type: ignore[index]
    value = exact + MISS.get(role, 1) if first else exact
    why = "a quick guess from the rough size of the terms" if first else "working it through, products before sums"
    return json.dumps({"estimate": value, "reason": f"{role} estimates {value}: {why}."})


if __name__ == "__main__":
    print(reply(os.environ.get("MOOT_ROLE", ""), sys.stdin.read()))

"""A participant for the eval tests, run through cmd: — a real subprocess that reads the prompt on stdin.

MOOT_ROLE "good" answers every arithmetic question right; any other agent answers one too many, and in a
debate round adopts the first other agent's answer it is shown (a conformist). Asked to rank a council's
answers, "good" ranks the right ones first and any other agent the wrong ones first (each in the order shown). Every call is logged as
one JSON line (role, prompt) to the file named by EVAL_SOLVER_LOG, and waits EVAL_SOLVER_DELAY seconds.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

prompt = sys.stdin.read()
role = os.environ.get("MOOT_ROLE", "")
expression = re.search(r"result of ([0-9+*-]+)\?", prompt)
assert expression is not None, prompt
value = eval(expression.group(1), {"__builtins__": {}})  # digits and + - * from moot's generator
others = re.findall(r"One agent's answer:\n```\n.*?Answer: (-?\d+)", prompt, re.DOTALL)
shown = re.findall(r"(Answer [A-Z]):\n```\n.*?Answer: (-?\d+)", prompt, re.DOTALL)
if "Ranking: Answer A" in prompt:  # a council review
    right = [name for name, given in shown if int(given) == value]
    wrong = [name for name, given in shown if int(given) != value]
    order = right + wrong if role == "good" else wrong + right
    reply = "I weighed each answer.\nRanking: " + ", ".join(order)
else:
    answer = value if role == "good" else int(others[0]) if others else value + 1
    reply = f"{expression.group(1)} is {answer}.\nAnswer: {answer}"
log = os.environ.get("EVAL_SOLVER_LOG")
if log:
    with open(log, "a", encoding="utf-8") as file:
        file.write(json.dumps({"role": role, "prompt": prompt}) + "\n")
time.sleep(float(os.environ.get("EVAL_SOLVER_DELAY", "0")))
print(reply)

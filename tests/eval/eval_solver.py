"""A participant for the eval tests, run through cmd: — a real subprocess that reads the prompt on stdin.

MOOT_ROLE "good" answers every arithmetic question right; any other agent answers one too many, and in a
debate round adopts the first other agent's answer it is shown (a conformist). Every call is logged as one JSON
line (role, prompt, the pid of the moot process that asked) to the file named by EVAL_SOLVER_LOG, and waits EVAL_SOLVER_DELAY seconds. While the file
named by EVAL_SOLVER_FAIL exists it fails (exit code 1: the model's failure); the role named by EVAL_SOLVER_HANG
never answers in time (an infrastructure failure); EVAL_SOLVER_STYLE=prose answers "So the final answer is
a + b = c." instead of an answer line.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

prompt = sys.stdin.read()
role = os.environ.get("MOOT_ROLE", "")
if os.path.exists(os.environ.get("EVAL_SOLVER_FAIL", "")):
    sys.exit("the model is broken")
if role == os.environ.get("EVAL_SOLVER_HANG"):
    time.sleep(30)
expression = re.search(r"result of ([0-9+*-]+)\?", prompt)
assert expression is not None, prompt
value = eval(expression.group(1), {"__builtins__": {}})  # digits and + - * from moot's generator
others = re.findall(r"One agent's answer:\n```\n.*?Answer: (-?\d+)", prompt, re.DOTALL)
answer = value if role == "good" else int(others[0]) if others else value + 1
if os.environ.get("EVAL_SOLVER_STYLE") == "prose":
    reply = f"So the final answer is {expression.group(1)} = {answer}."
else:
    reply = f"{expression.group(1)} is {answer}.\nAnswer: {answer}"
log = os.environ.get("EVAL_SOLVER_LOG")
if log:
    with open(log, "a", encoding="utf-8") as file:
        file.write(json.dumps({"role": role, "prompt": prompt, "asker": os.getppid()}) + "\n")
time.sleep(float(os.environ.get("EVAL_SOLVER_DELAY", "0")))
print(reply)

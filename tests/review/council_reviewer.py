"""A council member for the review tests, run through cmd: — a real subprocess reading the prompt on stdin.

A member whose name starts with "strict" finds a blocking issue; any other approves. Reviewing, every
member ranks the answers that request changes first (a cautious council). The chairman states the verdict
of the top-ranked member's answer, or, with COUNCIL_REVIEWER_NO_VERDICT set, none at all.
"""

from __future__ import annotations

import json
import os
import re
import sys

prompt = sys.stdin.read()
role = os.environ["MOOT_ROLE"]
schema = json.loads(os.environ["MOOT_JSON_SCHEMA"])
properties = schema["properties"]
if "ranking" in properties:
    shown = dict(re.findall(r"(Answer [A-Z]):\n(.*?)(?=\n\nAnswer [A-Z]:|\Z)", prompt, re.DOTALL))
    labels = properties["ranking"]["items"]["properties"]["answer"]["enum"]
    cautious = sorted(labels, key=lambda label: "changes requested" not in shown.get(label, ""))
    reply = {"ranking": [{"answer": label, "reason": f"{label} reads the diff closely."} for label in cautious]}
elif "dissent" in properties:
    top = re.search(r"name the top-ranked member, ([\w-]+)\.", prompt)
    assert top is not None
    answer = re.search(rf"{re.escape(top[1])}'s answer:\n(Verdict: [a-z ]+)", prompt)
    assert answer is not None
    others = properties["dissent"]["items"]["properties"]["member"]["enum"]
    verdict = "" if os.environ.get("COUNCIL_REVIEWER_NO_VERDICT") else f"{answer[1]}\n"
    reply = {
        "answer": f"{verdict}The council follows the top-ranked review of rate.py.",
        "basis": f"The reviews ranked {top[1]} first.",
        "dissent": [{"member": m, "position": "a milder view", "why_not_adopted": "ranked lower"} for m in others],
    }
elif role.startswith("strict"):
    reply = {"answer": "Verdict: changes requested\nrate.py line 2 lets request 100 through; add a test."}
else:
    reply = {"answer": "Verdict: approve\nThe cap is a parameter with the old default; nothing blocks."}
if "confidence" in properties:  # answers and reviews state one
    reply["confidence"] = 0.8
print(json.dumps(reply))

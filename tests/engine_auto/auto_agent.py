"""A scripted member of an auto panel, run as ``cmd:python auto_agent.py VERDICT [--calls FILE] [--fail]``.

Stage 1: a reasoning paragraph and the short answer VERDICT (``--plan FILE``: a JSON object mapping a task's
marker, such as ``[t3]``, found in the question to this member's answer, for ``moot eval``; a request with no
reply schema, as a single answer or a council's stage 1, gets the same answer as text ending 'Answer: N'). Stage 2: a ranking of every answer shown, in label
order. Stage 3: a synthesis that names the top-ranked member. ``--calls FILE`` appends one line per request
(``ROLE STAGE``), so a test counts who was asked what; ``--fail`` exits 1 without a reply, as a crashed agent; ``--hold FILE`` waits while FILE exists.
moot's CommandAgent sends the prompt on stdin and MOOT_ROLE and MOOT_JSON_SCHEMA in the environment.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("verdict")
    parser.add_argument("--calls")
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--plan")
    parser.add_argument("--hold")
    args = parser.parse_args()
    prompt = sys.stdin.read()
    role = os.environ.get("MOOT_ROLE", "?")
    properties = json.loads(os.environ.get("MOOT_JSON_SCHEMA") or "{}").get("properties", {})
    stage = 2 if "ranking" in properties else 3 if "dissent" in properties else 1
    verdict = args.verdict
    if args.plan:
        with open(args.plan, encoding="utf-8") as plan:
            verdict = next((v for marker, v in json.load(plan).items() if marker in prompt), verdict)
    if args.calls:
        with open(args.calls, "a", encoding="utf-8") as calls:
            calls.write(f"{role} {stage}\n")
    if args.fail:
        print("the model server refused the request", file=sys.stderr)
        return 1
    deadline = time.monotonic() + 120
    while args.hold and os.path.exists(args.hold) and time.monotonic() < deadline:
        time.sleep(0.1)  # a slow answer, which a test kills the run inside
    reasoning = (
        "I worked through the question step by step. Counting the items carefully and checking the sum twice, "
        f"I arrive at {verdict}; the alternatives do not survive the second check."
    )
    if stage == 1 and "final_answer" not in properties:
        text = f"{reasoning}\nAnswer: {verdict}"
        stated = {"answer": text, "confidence": 0.8} if "confidence" in properties else {"answer": text}
        print(json.dumps(stated) if "answer" in properties else text)
        return 0
    if stage == 1:
        reply = {"reasoning": reasoning, "final_answer": verdict}
    elif stage == 2:
        labels = properties["ranking"]["items"]["properties"]["answer"]["enum"]
        reply = {"ranking": [{"answer": label, "reason": f"{label} shows its working."} for label in labels]}
    else:
        top = re.search(r"name the top-ranked member, ([\w-]+)\.", prompt)
        # The chairman adopts the answer most members gave (the first of a tie).
        given = re.findall(r"^(?:Final answer|Answer): (.+)$", prompt, re.MULTILINE)
        verdict = max(given, key=given.count) if given else verdict
        others = properties["dissent"]["items"]["properties"]["member"]["enum"]
        reply = {
            "answer": f"After review the council answers {verdict}.\n\nFinal answer: {verdict}",
            "basis": f"The reviews ranked {top[1] if top else 'nobody'} first; its count is the one that held.",
            "dissent": [
                {"member": m, "position": "another count", "why_not_adopted": "it failed the check"} for m in others
            ],
        }
    if "confidence" in properties:  # a council's (and a panel's) answers and reviews
        reply["confidence"] = 0.8
    print(json.dumps(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main())

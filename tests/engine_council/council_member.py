"""A scripted council member for ``cmd:`` agents, with a behaviour named on its command line.

``cmd:python council_member.py [BEHAVIOUR]``: it answers as ``protocol_agent.py`` does (a legal turn in
any stage), except when BEHAVIOUR says otherwise:

- ``fail``: exits 1 in every stage (an agent that errors);
- ``fail-synthesis``: exits 1 when asked for a synthesis (a chairman that errors);
- ``hang``: sleeps an hour in stage 1 (an agent that runs past the turn timeout) unless the file named by
  ``MOOT_TEST_RELEASE`` exists;
- ``mark=WORD favour=WORD sure=X``: its answer says WORD, its review ranks the answer that says the favoured
  WORD first (the others after it in label order) and states the confidence X.

Each request appends ``ROLE STAGE PID`` to the file named by ``MOOT_TEST_AGENT_ASKED``, as soon as it arrives,
so a test counts how often each member was asked (and can stop a hanging one by its process id).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))

from protocol_agent import legal_reply


def stage(schema: dict[str, object]) -> int:
    properties = schema.get("properties", {})
    assert isinstance(properties, dict)
    return 2 if "ranking" in properties else 3 if "dissent" in properties else 1


def main() -> None:
    behaviour = sys.argv[1] if len(sys.argv) > 1 else ""
    planted = dict(arg.split("=", 1) for arg in sys.argv[1:] if "=" in arg)
    prompt = sys.stdin.read()
    schema = json.loads(os.environ["MOOT_JSON_SCHEMA"])
    role, asked = os.environ["MOOT_ROLE"], stage(schema)
    if os.environ.get("MOOT_TEST_AGENT_ASKED"):
        with open(os.environ["MOOT_TEST_AGENT_ASKED"], "a", encoding="utf-8") as log:
            log.write(f"{role} {asked} {os.getpid()}\n")
    if behaviour == "fail" or (behaviour == "fail-synthesis" and asked == 3):
        print(f"{role}: the model server refused the request", file=sys.stderr)
        sys.exit(1)
    release = os.environ.get("MOOT_TEST_RELEASE", "")
    if behaviour == "hang" and asked == 1 and not (release and Path(release).exists()):
        time.sleep(3600)
    if planted:
        print(json.dumps(favouring(json.loads(legal_reply("council", role, schema, prompt)), planted, prompt, asked)))
        return
    print(legal_reply("council", role, schema, prompt))


def favouring(reply: dict[str, object], planted: dict[str, str], prompt: str, asked: int) -> dict[str, object]:
    """The legal ``reply`` with the answer marked, the review ranking the favoured answer first and stating its
    confidence (see the module docstring)."""
    if asked == 1:
        return {**reply, "answer": f"{reply['answer']} My word for it: {planted['mark']}."}
    if asked == 2:
        ranking = reply["ranking"]
        assert isinstance(ranking, list)
        shown = dict(re.findall(r"(Answer [A-Z]):\n(.*?)(?=\n\nAnswer [A-Z]:|\Z)", prompt, re.DOTALL))
        first = [item for item in ranking if planted["favour"] in shown.get(item["answer"], "")]
        rest = [item for item in ranking if item not in first]
        return {**reply, "ranking": first + rest, "confidence": float(planted["sure"])}
    return reply


if __name__ == "__main__":
    main()

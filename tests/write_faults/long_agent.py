"""A scripted participant (tests/reliability/protocol_agent.py) whose replies are long: the first text field
of each reply is padded past a memory page, so that every turn needs new room on the disk.

``cmd:python long_agent.py``; standard library only. With ``MOOT_TEST_FILL_AT=N`` (and ``MOOT_TEST_DISK``,
``MOOT_TEST_CALLS``: a file counting its calls) its N-th call fills the disk before it answers, as another program
on the machine might while a debate runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # fault_helpers imports forked_moot
from fault_helpers import fill
from protocol_agent import legal_reply

PADDING = " The reasoning holds for every tenant." * 150  # about 5.5 KiB


def fill_when_due() -> None:
    if "MOOT_TEST_FILL_AT" not in os.environ:
        return
    calls = Path(os.environ["MOOT_TEST_CALLS"])
    count = int(calls.read_text() or 0) + 1 if calls.exists() else 1
    calls.write_text(str(count))
    if count == int(os.environ["MOOT_TEST_FILL_AT"]):
        fill(Path(os.environ["MOOT_TEST_DISK"]))


def main() -> None:
    prompt = sys.stdin.read()
    fill_when_due()
    schema = json.loads(os.environ["MOOT_JSON_SCHEMA"])
    reply = json.loads(legal_reply(os.environ["MOOT_PROTOCOL"], os.environ["MOOT_ROLE"], schema, prompt))
    text = next((key for key, value in reply.items() if isinstance(value, str) and len(value) > 20), None)
    if text is not None:
        reply[text] += PADDING
    print(json.dumps(reply))


if __name__ == "__main__":
    main()

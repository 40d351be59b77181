"""A scripted participant (tests/reliability/protocol_agent.py) whose replies are long: the first text field
of each reply is padded past a memory page, so that every turn needs new room on the disk.

``cmd:python long_agent.py``; standard library only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
from protocol_agent import legal_reply

PADDING = " The reasoning holds for every tenant." * 150  # about 5.5 KiB


def main() -> None:
    prompt = sys.stdin.read()
    schema = json.loads(os.environ["MOOT_JSON_SCHEMA"])
    reply = json.loads(legal_reply(os.environ["MOOT_PROTOCOL"], os.environ["MOOT_ROLE"], schema, prompt))
    text = next((key for key, value in reply.items() if isinstance(value, str) and len(value) > 20), None)
    if text is not None:
        reply[text] += PADDING
    print(json.dumps(reply))


if __name__ == "__main__":
    main()

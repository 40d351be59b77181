"""One way of counting: a run's turns, round, outcome, tokens and cost are the same in its progress lines, its
summary, its --json, ``moot check --json``, ``moot ls`` and ``moot show``, for every protocol, and after a resume.

The participants are the official openai client (``openai:MODEL@URL``) talking to a real HTTP server in the test
that answers every request with a legal turn (tests/reliability/protocol_agent.py) and reports its token usage,
so that tokens are counted as a provider's are. A server on this machine is priced at $0 (known, not unknown).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from engine_helpers import run_moot

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from protocol_agent import legal_reply

ROLES = {
    "critique": ("proposer", "critic"),
    "duel": ("advocate", "skeptic"),
    "agora": ("advocate", "skeptic", "mediator"),
    "roundtable": ("architect", "reviewer", "moderator"),
}
ARGS = {
    "critique": ["--topic", "T", "--max-rounds", "2"],
    "duel": ["doc.md"],
    "agora": ["--topic", "T", "--max-turns", "4"],  # two drones, so two rounds
    "roundtable": ["--topic", "T", "--max-rounds", "1"],  # one round, then the minutes
}
ROUNDS = {"critique": 2, "duel": 3, "agora": 2, "roundtable": 1}


class _Chat(BaseHTTPRequestHandler):
    """``/v1/models`` for the probe; ``/v1/chat/completions`` answers as the model ``PROTOCOL.ROLE`` would."""

    failures: ClassVar[set[str]] = set()  # models whose next request fails once (HTTP 400), as a refused request does

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": []})

    def do_POST(self) -> None:
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model = asked["model"]
        if model in self.failures:
            self.failures.discard(model)
            self._send(400, {"error": {"message": "the request was refused", "type": "invalid_request_error"}})
            return
        protocol, role = model.split(".", 1)
        prompt = "\n\n".join(message["content"] for message in asked["messages"])
        schema = asked["response_format"]["json_schema"]["schema"]
        text = _targeted(role, prompt, legal_reply(protocol, role, _narrowed(schema, prompt), prompt))
        usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        self._send(
            200,
            {"id": "c", "object": "chat.completion", "created": 0, "model": model, "choices": [choice], "usage": usage},
        )


def _narrowed(schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    """A duel's reply schema narrowed to turn N as moot narrows it for a server without a prefix cache: the opening
    stance only at first, earlier turns or the source's sections to address, a stance revision from turn 3."""
    asked = re.search(r"Write turn (\d+) of at most", prompt)
    if asked is None:
        return schema
    number, defs = int(asked[1]), schema["$defs"]
    sections = defs["Evidence"]["properties"]["section"]["enum"]
    addressable = [f"Turn {k}" for k in range(1, number)] + [f"source § {section}" for section in sections]
    defs["GuidedCounterpoint"]["properties"]["addresses"]["enum"] = addressable
    if number == 1:
        schema["properties"]["stance"]["enum"] = ["OPEN_TO_DEBATE"]
    if number <= 2:
        schema["properties"].pop("stance_revision", None)
    return schema


def _targeted(role: str, prompt: str, text: str) -> str:
    """A server whose prompts share one cached prefix gets the whole reply schema, which does not narrow to what is
    legal now: a critique's status and an Agora signal's target (the turn before) are read from the prompt."""
    turn = json.loads(text)
    asked = re.search(r"for round (\d+) of (\d+)", prompt)
    if "status" in turn and asked is not None and asked[1] == asked[2]:  # critique: the last round concludes
        turn["status"] = "PROPOSING_DONE" if role == "proposer" else "DONE"
        turn["summary"] = "The plan as proposed." if role == "critic" else ""
    elif "status" in turn:
        turn["status"], turn["summary"] = "AWAITING", ""
    number = re.search(r"TURN: (\d+)", prompt)
    if "signal" in turn and turn["target"] is None and turn["signal"] == "counter" and number is not None:
        turn["target"] = f"turn-{int(number[1]) - 1}"
    return json.dumps(turn)


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        _Chat.failures.clear()


def agents(protocol: str, url: str) -> list[str]:
    return [arg for role in ROLES[protocol] for arg in ("--agent", f"{role}=openai:{protocol}.{role}@{url}")]


def counted(root: Path, record: str) -> dict[str, Any]:
    """What check --json, ls --json and show say about ``record``."""
    report = json.loads(run_moot("check", record, "--json", cwd=root).stdout)
    row = next(r for r in json.loads(run_moot("ls", "--json", cwd=root).stdout) if r["path"] == record)
    shown = " ".join(run_moot("show", record, "--plain", cwd=root).stdout.split())
    state = re.search(r"status (\S+) · (\d+) turn\(s\) · round (\d+)", shown)
    usage = re.search(r"usage: \d+ attempt\(s\), (\d+) tokens, cost (\S+)", shown)
    assert state is not None and usage is not None, shown
    return {
        "check": (report["state"]["status"], report["state"]["turns"], report["state"]["round"]),
        "ls": (row["status"], row["turns"], row["tokens"]),
        "show": (state[1], int(state[2]), int(state[3]), int(usage[1]), usage[2]),
    }


def summary(stdout: str) -> tuple[str, int, int, str]:
    """The run summary's outcome, turns, tokens (in all) and cost (in all)."""
    text = " ".join(stdout.split())
    head = re.search(r"(\S+) — \w+, (\d+) turn\(s\)", text)
    spent = re.search(r"(\d+) tokens (?:in all runs, cost (\S+);|\(.*?\) in [\d.]+ s · cost (\S+))", text)
    assert head is not None and spent is not None, text
    return head[1], int(head[2]), int(spent[1]), (spent[2] or spent[3]).rstrip(";")


def last_progress(stderr: str) -> tuple[int, int]:
    """The last progress line's turn number and tokens (the lines stand alone when stderr is not a terminal)."""
    found = re.findall(r"turn (\d+)(?: of \d+)? · \S+ spoke · (\d+) tokens", stderr)
    assert found, stderr
    return int(found[-1][0]), int(found[-1][1])


@pytest.mark.parametrize("protocol", sorted(ROLES))
def test_every_command_counts_a_run_alike(tmp_path: Path, server: str, protocol: str) -> None:
    roots = {"json": tmp_path / "json", "text": tmp_path / "text"}
    for root in roots.values():
        root.mkdir()
        (root / "doc.md").write_text("# Caching\n\n## Plan\nOne shared cache with a per-tenant floor.\n")
    ran = run_moot("run", protocol, *ARGS[protocol], *agents(protocol, server), "--json", cwd=roots["json"])
    result = json.loads(ran.stdout)
    record = result["artifact"]
    tokens = result["prompt_tokens"] + result["completion_tokens"]
    outcome, turns = result["outcome"], result["turns"]
    assert tokens > 0 and result["cost_usd"] == 0.0
    assert counted(roots["json"], record) == {
        "check": (outcome, turns, ROUNDS[protocol]),
        "ls": (outcome, turns, tokens),
        "show": (outcome, turns, ROUNDS[protocol], tokens, "$0"),
    }
    assert result["tokens"] == result["tokens_this_run"] == tokens and result["cost_usd_all_runs"] == 0.0
    # The same debate run for a person: its progress and summary say the same (the record's words are the same).
    shown = run_moot("run", protocol, *ARGS[protocol], *agents(protocol, server), cwd=roots["text"])
    assert summary(shown.stdout) == (outcome, turns, tokens, "$0")
    assert last_progress(shown.stderr) == (turns, tokens)


def test_a_resumed_run_counts_its_record_in_all_and_prices_a_failed_call_as_the_run_does(
    tmp_path: Path, server: str
) -> None:
    # The critic's first request is refused: the run halts after one turn, having logged an attempt without a reply.
    _Chat.failures.add("critique.critic")
    first = run_moot("run", "critique", "--topic", "T", "--max-rounds", "2", *agents("critique", server), cwd=tmp_path)
    assert first.returncode == 1 and "RUN_HALTED" in first.stdout, first.stderr
    before = counted(tmp_path, ".dialogues/t.md")["ls"][2]
    assert before > 0 and summary(first.stdout)[2:] == (before, "$0")
    resumed = run_moot("resume", ".dialogues/t.md", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    after = counted(tmp_path, ".dialogues/t.md")
    tokens = after["ls"][2]
    assert after["show"] == ("DONE", 4, 2, tokens, "$0")
    text = " ".join(resumed.stdout.split())
    this_run = re.search(r"this run (\d+) tokens", text)
    assert this_run is not None and int(this_run[1]) == tokens - before, text
    assert summary(resumed.stdout) == ("DONE", 4, tokens, "$0")
    assert last_progress(resumed.stderr) == (4, tokens)  # the progress line counts on from the earlier run
    again = json.loads(run_moot("resume", ".dialogues/t.md", "--json", cwd=tmp_path).stdout or "{}")
    assert again == {}  # nothing to resume: the JSON of a resumed run is checked above through the summary

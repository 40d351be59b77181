"""faults: moot's OpenAI-compatible agent talks to a real llama.cpp server through a proxy that misbehaves.

The proxy (fault_proxy.py) answers some requests with 429 (Retry-After), 500, a hang, a truncated body,
invalid JSON or an off-schema turn. How moot's layers share the work:

- the agent retries 429, 500, truncated bodies and invalid JSON itself (agents/base.py RetryPolicy, four
  attempts): a debate goes on, and the usage log counts each retry in ``agent_attempts``;
- a hang is retried too: a request may wait the turn less a minute (at least half the turn;
  agents/_http.py RequestDeadline), so the retry still has that minute;
- an off-schema turn is a reply: the engine sends it back for repair (a usage row with accepted false);
- when the turn's time or the attempts run out, the debate ends with the protocol's failure outcome and
  the cause in the run's reason (and in the record for the duel, in ``.moot.failures.jsonl`` for the
  roundtable).

Every debate must end with an outcome, name the cause, print no traceback, and leave a record that
``moot check`` accepts.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fault_proxy import RETRIED, Fault, Schedule, fault_proxy, random_faults, scripted
from reliability_helpers import LONG, record_result

from moot.agents.llama_server import llama_server
from moot.agents.local import llama_cpp_available
from moot.core.files import ExitCode
from moot.detect import check_path
from moot.engine.loop import usage_path
from moot.protocols.roundtable.driver import FAILURES_FILE

pytestmark = pytest.mark.skipif(not llama_cpp_available(), reason="llama-cpp-python is not installed")

# Generous (moot's default), because the model shares two cores with everything else; a generation
# that takes 5 s on an idle machine took over 120 s under a load average of 20. Only a hang waits it out.
TURN_TIMEOUT_S = 300
# A hung request waits half of this before it is retried; the retry has the other half.
HANG_TURN_TIMEOUT_S = 60
# The random run meets a hang in about every third debate; each costs the turn timeout less a minute.
RANDOM_TURN_TIMEOUT_S = 180
FAULT_RATE = 0.3
SEED = 20261122
# Rounds of the four protocols in the random run: 6 (24 debates) is the long size; fewer for a medium run.
RANDOM_ROUNDS = int(os.environ.get("MOOT_FAULT_ROUNDS", "6"))

# What the run's reason says when the last request of a debate ended it: a fault the agent gave up on
# after its fourth attempt, or a turn timeout (a hang, or a forwarded request the model was too slow for).
TIMED_OUT = ("TimeoutError", "did not answer within")
CAUSE_TEXT: dict[Fault | None, tuple[str, ...]] = {
    Fault.RATE_LIMIT: ("HTTP 429", *TIMED_OUT),
    Fault.SERVER_ERROR: ("HTTP 500", *TIMED_OUT),
    Fault.TRUNCATED: ("closed the connection before a whole answer", *TIMED_OUT),
    Fault.INVALID_JSON: ("not JSON", *TIMED_OUT),
    Fault.HANG: TIMED_OUT,
    None: TIMED_OUT,
}

SOURCE = "# Caching\n\nCache API responses for 60 seconds.\n\n## Risks\n\nClients may see stale data.\n"
# Short debates of each protocol (the args of `moot run`; {source} is the duel's document).
DEBATES: dict[str, list[str]] = {
    "critique": ["critique", "--topic", "Adopt a monorepo", "--max-rounds", "1"],
    "duel": ["duel", "{source}", "--max-turns", "2"],
    "agora": ["agora", "--topic", "Tabs or spaces", "--max-turns", "4"],
    "roundtable": ["roundtable", "--topic", "Cache design", "--max-rounds", "1"],
}


@pytest.fixture(scope="module")
def model_server() -> Iterator[str]:
    with llama_server() as base_url:
        yield base_url


@dataclass
class Debate:
    """One `moot run --json` through the proxy, and what the proxy did to it."""

    protocol: str
    returncode: int
    stderr: str
    result: dict[str, Any] | None
    answers: list[Fault | None]  # what the proxy did with each request: a fault, or None (forwarded)

    @property
    def faults(self) -> list[Fault]:
        return [fault for fault in self.answers if fault is not None]

    @property
    def reason(self) -> str:
        return str((self.result or {}).get("reason") or "")

    @property
    def ending(self) -> str:
        """normal, halted (a turn ran past moot's turn timeout: resumable), agent_failed (retries spent) or
        no_valid_turn (repairs spent)."""
        if "turn timeout" in self.reason:
            return "halted"
        if "agent failed" in self.reason:
            return "agent_failed"
        if "gave no valid turn" in self.reason:
            return "no_valid_turn"
        return "normal"


def run_debate(model_server: str, protocol: str, schedule: Schedule, root: Path, turn_timeout_s: float) -> Debate:
    root.mkdir(parents=True, exist_ok=True)
    (root / "design.md").write_text(SOURCE, encoding="utf-8")
    args = [arg.format(source=root / "design.md") for arg in DEBATES[protocol]]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    with fault_proxy(model_server, schedule) as proxy:
        command = [sys.executable, "-m", "moot", "run", *args, "--agents", f"openai:smollm2@{proxy.base_url}"]
        command += ["--json", "--turn-timeout", str(turn_timeout_s), "--root", str(root)]
        # A debate that does not end is a failure of the test, not a hung CI job.
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    result = json.loads(done.stdout) if done.stdout.strip() else None
    return Debate(protocol, done.returncode, done.stderr, result, list(proxy.answers))


def usage_rows(artifact: Path) -> list[dict[str, Any]]:
    path = usage_path(artifact)
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def durable_failure(protocol: str, artifact: Path) -> str | None:
    """Where the record itself keeps a failure: the duel's Terminal Conclusion, the roundtable's sidecar.

    Critique and Agora records have no place for it (their failure is the run's outcome only).
    """
    if protocol == "duel":
        summary = check_path(artifact).summary
        return summary.outcome.reason if summary is not None and summary.outcome is not None else None
    if protocol == "roundtable":
        sidecar = artifact / FAILURES_FILE
        lines = sidecar.read_text(encoding="utf-8").splitlines() if sidecar.exists() else []
        return str(json.loads(lines[-1])["reason"]) if lines else None
    return None


def assert_ends_cleanly(debate: Debate) -> None:
    assert debate.returncode in (0, 1), f"exit {debate.returncode}: {debate.stderr[-2000:]}"
    assert "Traceback" not in debate.stderr and "internal error" not in debate.stderr, debate.stderr[-2000:]
    assert debate.result is not None and debate.result["outcome"] is not None, debate.result
    artifact = Path(debate.result["artifact"])
    report = check_path(artifact)
    assert report.exit_code == ExitCode.VALID, [f"{v.rule}: {v.message}" for v in report.errors]

    # The cause is recorded: each retried fault is one extra agent attempt in the usage log (all of them
    # unless the agent finally gave up, which loses that turn's attempts), and an off-schema turn is a
    # rejected reply there.
    rows = usage_rows(artifact)
    retried = sum(fault in RETRIED for fault in debate.faults)
    absorbed = sum(row["agent_attempts"] - 1 for row in rows)
    rejected = sum(not row["accepted"] for row in rows)
    assert rejected >= debate.faults.count(Fault.OFF_SCHEMA), rows
    if debate.ending == "halted":  # moot's own limit: the run says how to resume it with a longer one
        assert absorbed <= retried and debate.result is not None and debate.result["resume"], debate.result
        return
    if debate.ending == "agent_failed":
        assert absorbed <= retried, rows
        last = debate.answers[-1] if debate.answers else None  # the debate's last request ended it
        assert any(text in debate.reason for text in CAUSE_TEXT[last]), (last, debate.reason)
    else:
        # Every retried fault is one more attempt; a forwarded request that the model took longer than the
        # request's deadline to answer (a loaded machine) is abandoned and retried too.
        assert absorbed >= retried, (debate.faults, rows)
    if debate.ending != "normal" and debate.protocol in ("duel", "roundtable"):
        durable = durable_failure(debate.protocol, artifact)
        assert durable is not None and durable in debate.reason, (durable, debate.reason)


def test_each_fault_kind_ends_in_a_recorded_outcome(model_server: str, tmp_path: Path) -> None:
    # A critique dialogue meets every fault the agent retries, then an off-schema turn. Four attempts
    # per reply: 429, 500 and a truncated body use three, the fourth gets through (the server refuses
    # the json_schema form with a 500 of its own, and the agent falls back in the same attempt).
    retried_then_repaired = scripted(
        [Fault.RATE_LIMIT, Fault.SERVER_ERROR, Fault.TRUNCATED, None, None, Fault.INVALID_JSON, Fault.OFF_SCHEMA]
    )
    survived = run_debate(model_server, "critique", retried_then_repaired, tmp_path / "critique", TURN_TIMEOUT_S)
    # A roundtable speaker's request hangs: the agent gives up on it at half the turn and retries it.
    hung = run_debate(model_server, "roundtable", scripted([Fault.HANG]), tmp_path / "hang", HANG_TURN_TIMEOUT_S)

    for debate in (survived, hung):
        assert_ends_cleanly(debate)
    assert set(survived.faults) | set(hung.faults) == set(Fault)  # the schedule reached every kind
    assert survived.ending != "agent_failed", survived.reason  # no fault it met is fatal on its own
    # The hung request was abandoned and retried inside the same turn (before, the hang used up the turn).
    assert hung.answers[:2] == [Fault.HANG, None], hung.answers
    assert hung.result is not None
    if hung.ending == "normal":
        assert usage_rows(Path(hung.result["artifact"]))[0]["agent_attempts"] == 2
    else:  # a machine so loaded that the model needs more than the retry's half of the turn: resumable
        assert hung.ending == "halted" and "turn timeout" in hung.reason, hung.reason


@pytest.mark.skipif(not LONG, reason="long run: MOOT_RELIABILITY=long")
def test_random_faults_across_protocols(model_server: str, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    debates = [
        run_debate(model_server, protocol, random_faults(rng, FAULT_RATE), tmp_path / f"{n:02d}", RANDOM_TURN_TIMEOUT_S)
        for n, protocol in enumerate(list(DEBATES) * RANDOM_ROUNDS)
    ]
    record_result(
        "faults",
        {
            "debates": len(debates),
            "fault_rate": FAULT_RATE,
            "turn_timeout_s": RANDOM_TURN_TIMEOUT_S,
            "requests": sum(len(d.answers) for d in debates),
            "faults_by_kind": dict(sum((Counter(f.value for f in d.faults) for d in debates), Counter())),
            "completed_share": round(sum(d.ending == "normal" for d in debates) / len(debates), 3),
            "endings": dict(Counter(d.ending for d in debates)),
            "outcomes": dict(Counter(f"{d.protocol}:{(d.result or {}).get('outcome')}" for d in debates)),
        },
    )
    problems = []
    for number, debate in enumerate(debates):
        try:
            assert_ends_cleanly(debate)
        except AssertionError as problem:
            problems.append(f"debate {number} ({debate.protocol}): {problem}")
    assert not problems, "\n".join(problems)

"""The decision of a record, through the plugin contract (``Analysis.decision``): what each built-in protocol
decided, who conceded what, what is left open or blocking, each with the turn ``moot check`` numbers; and
``moot show`` leading with it, as text and in ``--json``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from moot import registry
from moot.plugin import Decision

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "web"))
from web_helpers import DECIDED, EXAMPLES  # noqa: E402  (one valid record per protocol, what each decided)


def decision_of(protocol: str, path: Path) -> Decision | None:
    analysis = registry.get(protocol).analysis
    assert analysis is not None
    hook = analysis.load().decision
    assert hook is not None, f"{protocol} has no decision hook"
    return hook(path)


def example(protocol: str) -> Path:
    return TESTS / EXAMPLES[protocol][0]


def where(points: Any) -> list[tuple[int | None, str | None]]:
    return [(p.turn, p.who) for p in points]


@pytest.mark.parametrize("protocol", sorted(DECIDED))
def test_each_protocol_reads_what_its_record_decided_and_where(protocol: str) -> None:
    outcome, text, turn, who = DECIDED[protocol]
    found = decision_of(protocol, example(protocol))
    assert found is not None and found.outcome == outcome
    assert found.decided is not None and found.decided.text.startswith(text)
    assert (found.decided.turn, found.decided.who) == (turn, who)


def test_the_duel_lists_each_concession_and_the_open_items_of_the_latest_turns() -> None:
    found = decision_of("duel", example("duel"))
    assert found is not None
    assert where(found.conceded) == [(1, "alice"), (2, "bob"), (3, "alice"), (4, "bob"), (5, "alice"), (6, "bob")]
    assert found.conceded[-1].text == "Opt-out by default for regulated tenants (Turn 5)."
    assert [(p.turn, p.text) for p in found.open] == [
        (5, "Benchmarks of the overflow under load are still missing"),
        (6, "Whether the quota and the overflow cap should become separate settings later"),
    ]
    assert found.blocking == () and found.dissent == ()


def test_a_duel_in_dissent_decides_nothing_and_lists_what_blocks_it() -> None:
    found = decision_of("duel", TESTS / "duel/examples/valid/dissent-three-turns.md")
    assert found is not None and found.outcome == "DISSENT" and found.decided is None
    assert found.blocking and all(p.turn in (2, 3) for p in found.blocking)
    assert sorted(p.who or "" for p in found.dissent) == ["alice", "bob"]


def test_agora_lists_the_drones_that_switched_to_the_accepted_proposal() -> None:
    found = decision_of("agora", example("agora"))
    assert found is not None
    assert where(found.conceded) == [(4, "tabs"), (5, "spaces")]
    assert all("proposal-mediator" in p.text for p in found.conceded)
    assert found.open == ()  # consensus closed every other proposal
    timeout = decision_of("agora", TESTS / "agora/examples/valid/timeout.md")
    assert timeout is not None and timeout.outcome == "TIMEOUT" and timeout.decided is None
    assert where(timeout.open) == [(1, "mono")] and where(timeout.blocking) == [(2, "poly")]


def test_a_council_records_the_dissent_of_the_answers_not_adopted() -> None:
    found = decision_of("council", example("council"))
    assert found is not None
    assert where(found.dissent) == [(7, "claude"), (7, "smol")]
    assert "it doubles memory" in found.dissent[1].text


def test_roundtable_minutes_give_the_actions_and_a_none_is_no_item() -> None:
    found = decision_of("roundtable", example("roundtable"))
    assert found is not None
    assert [p.text for p in found.actions] == ["architect: write the design doc", "security: review the network policy"]
    assert found.open == ()  # 'Unresolved Disagreements: None.'


def test_a_stuck_critique_has_its_blocker_as_the_one_blocking_item(tmp_path: Path) -> None:
    text = (TESTS / "critique/examples/valid/custom-stuck-resumed.md").read_text(encoding="utf-8")
    stuck = tmp_path / "stuck.md"
    stuck.write_text(text[: text.index("Status: STUCK") + len("Status: STUCK\n")], encoding="utf-8")
    found = decision_of("critique", stuck)
    assert found is not None and found.outcome == "STUCK" and found.decided is None
    assert [(p.turn, p.who) for p in found.blocking] == [(3, "architect")]
    assert "only the product owner knows" in found.blocking[0].text


@pytest.mark.parametrize("protocol", sorted(DECIDED))
def test_the_hook_is_total_on_what_is_no_record(protocol: str, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.md"
    garbage.write_bytes(b"\xff\xfe not a record\n## Turn 1\n")
    for path in (garbage, tmp_path, tmp_path / "missing.md"):
        assert decision_of(protocol, path) is None


def show(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "moot", "show", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("protocol", sorted(DECIDED))
def test_moot_show_json_carries_the_decision(protocol: str) -> None:
    done = show("--json", str(example(protocol)))
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)["decision"]
    outcome, text, turn, who = DECIDED[protocol]
    assert decision["outcome"] == outcome
    assert decision["decided"]["text"].startswith(text)
    assert (decision["decided"]["turn"], decision["decided"]["who"]) == (turn, who)
    assert set(decision) == {"outcome", "decided", "conceded", "open", "blocking", "dissent", "actions"}


def test_moot_show_prints_the_decision_before_the_transcript() -> None:
    done = show("--plain", str(example("duel")))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("─ decision ─") < out.index("# Socratic Duel:") < out.index("─ state ─")
    assert "decided: (turn 5, alice) I accept partitioned caches" in " ".join(out.split())
    assert "(turn 6, bob) Whether the quota and the overflow cap" in " ".join(out.split())

"""Protocol strategies: moot's own protocols run by their real drivers, and planted panels whose effect is known.

The planted participant (bench/eval/planted.py) is right alone with a known probability. With
``--discussion truth`` a council finds the right answer whenever one opening had it, a gain the verdict table
must find; with ``--discussion resample`` discussion changes nothing, and the table must find no difference
from a single answer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from test_eval_run import by_name, moot

from moot.detect import check_path
from moot.protocols.agora.analysis import answer as agora_answer
from moot.protocols.council.analysis import rounds as council_rounds
from moot.registry import get

PLANTED = Path(__file__).parents[2] / "bench" / "eval" / "planted.py"
PROTOCOL_AGENT = Path(__file__).parents[1] / "reliability" / "protocol_agent.py"
TASKS = ["--tasks", "arithmetic", "--difficulty", "2", "--limit", "20", "--seed", "3", "--concurrency", "3"]


def planted_panel(tmp_path: Path, discussion: str) -> list[str]:
    agent = f"cmd:{sys.executable} {PLANTED} --accuracy 0.45 --discussion {discussion} --state {tmp_path}/state.json"
    return [arg for name in ("p1", "p2", "p3") for arg in ("--agent", f"{name}={agent}")]


def verdicts(summary: dict[str, Any]) -> dict[str, str]:
    return {row["baseline"].split(" (")[0]: row["verdict"] for row in summary["verdicts"]}


def test_a_planted_gain_of_discussion_is_found(tmp_path: Path) -> None:
    done = moot("eval", *TASKS, "--strategy", "protocol:council", *planted_panel(tmp_path, "truth"), "--json",
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    council = by_name(summary)["protocol:council"]
    assert council["accuracy"] >= 0.8 and council["rounds"][0]["accuracy"] <= 0.6
    found = verdicts(summary)
    assert found["single"] == "beats single" and found["its round-0 vote"] == "beats its round-0 vote"
    assert found["sc:match=protocol:council"] == "beats sc:match=protocol:council"
    # A reviewer never sees its own answer: a lone right member's review is left out of the flips, not a flip.
    assert council["flips"]["unavoidable"] > 0 and council["flips"]["correct_to_incorrect"] == 0
    records = sorted((tmp_path / "moot-eval" / "records").rglob("*.md"))
    assert len(records) == 20
    for path in records:
        assert check_path(path).exit_code == 0  # each deliberation is a real, checkable council record
        assert len(council_rounds(path)) == 3


def test_no_effect_is_reported_where_discussion_changes_nothing(tmp_path: Path) -> None:
    done = moot("eval", *TASKS, "--strategy", "protocol:council", *planted_panel(tmp_path, "resample"), "--json",
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert verdicts(summary)["single"].startswith("no detectable difference from single at n = 20")
    (split,) = summary["split"]
    low, high = split["discussion"]["ci95"]
    assert low < 0 < high


def test_the_agora_and_the_critique_run_through_their_drivers_and_answer_through_the_contract(tmp_path: Path) -> None:
    agent = f"cmd:{sys.executable} {PROTOCOL_AGENT}"
    done = moot(
        "eval", "--tasks", "arithmetic", "--limit", "1", "--strategy", "protocol:agora:max_turns=9",
        "--strategy", "protocol:critique:max_rounds=2", "--agents", agent, "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = by_name(json.loads(done.stdout))
    assert rows["protocol:agora:max_turns=9"]["cost"]["calls"] == 9  # the Agora's own turns, its limit
    assert [len(r) for r in [rows["protocol:critique:max_rounds=2"]["rounds"]]] == [4]  # four turns, one each
    (record,) = (tmp_path / "moot-eval" / "records").rglob(".agora/*.md")
    assert check_path(record).exit_code == 0 and agora_answer(record) is None  # no consensus within 9 turns


EXAMPLES = Path(__file__).parents[1]


def test_each_protocol_gives_its_decision_through_the_contract_and_none_without_one() -> None:
    agora, critique = get("agora").analysis, get("critique").analysis
    assert agora is not None and critique is not None
    agora_answer_of, critique_answer_of = agora.load().answer, critique.load().answer
    assert agora_answer_of is not None and critique_answer_of is not None
    valid = EXAMPLES / "agora" / "examples" / "valid"
    # Consensus: the text of the proposal every drone approved; the mediator's compromise when it was the one.
    assert agora_answer_of(valid / "consensus-fact-based.md").startswith("Strategy pattern separates algorithm")
    assert agora_answer_of(valid / "mediator-compromise.md") == (
        "Let the formatter decide and check it in CI. Nobody indents by hand any more."
    )
    assert agora_answer_of(valid / "timeout.md") is None  # no consensus, no answer
    loops = EXAMPLES / "critique" / "examples" / "valid"
    # The DONE turn's summary, where both parties state what they agreed; none when the rounds ran out or it stuck.
    assert critique_answer_of(loops / "extended-rounds.md") == (
        "write-through caching for user profiles, 5-minute TTLs elsewhere."
    )
    assert critique_answer_of(loops / "pair-max-rounds.md") is None
    assert critique_answer_of(loops / "custom-stuck-resumed.md") is None


def test_a_protocol_without_an_answer_cannot_be_evaluated(tmp_path: Path) -> None:
    assert get("duel").analysis is None or get("duel").analysis.load().answer is None
    done = moot("eval", "--tasks", "arithmetic", "--limit", "1", "--strategy", "protocol:duel", cwd=tmp_path)
    assert done.returncode == 2 and "protocol duel cannot be evaluated" in done.stderr
    unknown = moot("eval", "--tasks", "arithmetic", "--limit", "1", "--strategy", "protocol:nope", cwd=tmp_path)
    assert unknown.returncode == 2 and "protocol 'nope' is unknown" in unknown.stderr


def test_eval_reaches_protocols_only_through_the_registry() -> None:
    sources = (Path(__file__).parents[2] / "src" / "moot" / "eval").glob("*.py")
    assert not [p.name for p in sources if "moot.protocols" in p.read_text()]


def test_confidence_weighting_turns_a_planted_council_around_and_the_verdict_table_shows_it(tmp_path: Path) -> None:
    # p1 is always right; p2 is wrong alone but recognises the right answer when shown it; p3 and p4 are always
    # wrong, with the same wrong value. Each states 0.9 where its answer (or the one it ranks first) is right and
    # 0.1 where it is wrong, and the chairman (p1) adopts the top-ranked answer. Borda: p2's review alone ranks p1
    # first, and the three wrong reviews hand the wrong answers more points. Weighted by confidence, p2's review
    # outweighs them: the council answers right on every task.
    agent = f"cmd:{sys.executable} {PLANTED} --calibrated --follow-ranking --state {tmp_path}/state.json"
    panel = {"p1": (1, "truth"), "p2": (0, "truth"), "p3": (0, "resample"), "p4": (0, "resample")}
    agents = [
        arg
        for name, (accuracy, discussion) in panel.items()
        for arg in ("--agent", f"{name}={agent} --accuracy {accuracy} --discussion {discussion}")
    ]
    borda, weighted = "protocol:council:members=4", "protocol:council:members=4,aggregate=confidence"
    done = moot("eval", "--tasks", "arithmetic", "--difficulty", "2", "--limit", "12", "--seed", "3",
                "--concurrency", "3", "--strategy", borda, "--strategy", weighted, *agents, "--json",
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert by_name(summary)[borda]["accuracy"] == 0.0 and by_name(summary)[weighted]["accuracy"] == 1.0
    rows = {(row["deliberation"], row["baseline"].split(" (")[0]): row["verdict"] for row in summary["verdicts"]}
    assert rows[(borda, "single")] == "loses to single"
    assert rows[(weighted, "its round-0 vote")] == "beats its round-0 vote"
    assert rows[(weighted, "single")].startswith("no detectable difference from single")
    records = sorted((tmp_path / "moot-eval" / "records").rglob("*.md"))
    aggregations = {check_path(path).summary.detail["aggregation"] for path in records}  # type: ignore[union-attr]
    assert aggregations == {"borda", "confidence"} and all(check_path(p).exit_code == 0 for p in records)

"""``moot run auto``, ``moot check`` and ``moot resume`` as a user runs them, with scripted members that are real
subprocesses (auto_agent.py), counting who was asked what."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import forked_moot
from forked_moot import MOOT

AGENT = Path(__file__).with_name("auto_agent.py")


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return forked_moot.run(args, cwd=cwd, timeout=300)


def member(name: str, verdict: str, calls: Path, *extra: str) -> list[str]:
    return ["--member", f"{name}=cmd:{sys.executable} {AGENT} {verdict} --calls {calls} {' '.join(extra)}".rstrip()]


def panel(calls: Path, verdicts: dict[str, str], *extra: str) -> list[str]:
    return [arg for name, verdict in verdicts.items() for arg in member(name, verdict, calls, *extra)]


def asked(calls: Path) -> Counter[str]:
    """Each 'ROLE STAGE' the members and the chairman were asked, with how often."""
    return Counter(calls.read_text(encoding="utf-8").splitlines()) if calls.exists() else Counter()


def run_json(tmp_path: Path, *args: str) -> tuple[int, dict[str, object]]:
    done = moot("run", "auto", "--question", "How many apples are in the basket?", *args, "--json", cwd=tmp_path)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_a_unanimous_panel_votes_and_nobody_reviews_or_chairs(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    chairman = f"cmd:{sys.executable} {AGENT} 99 --calls {calls}"
    # "12", "12.0" and "$12" are one answer.
    verdicts = {"ada": "12", "bo": "12.0", "cy": "$12"}
    code, report = run_json(tmp_path, *panel(calls, verdicts), "--chairman", chairman)
    assert code == 0 and report["outcome"] == "VOTED" and report["consensus"] is True and report["degraded"] is None
    assert asked(calls) == Counter({"ada 1": 1, "bo 1": 1, "cy 1": 1})  # no review, no chairman
    text = (tmp_path / str(report["artifact"])).read_text(encoding="utf-8")
    assert "- **Decision:** VOTED" in text and "  - 3: ada, bo, cy — 12" in text and "## Stage 2" not in text
    assert moot("check", str(report["artifact"]), cwd=tmp_path).returncode == 0
    shown = moot("show", "--plain", str(report["artifact"]), cwd=tmp_path).stdout
    assert "outcome: VOTED" in shown and "Voted answer: 12" in shown


def test_a_split_panel_escalates_over_the_same_sealed_answers(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    chairman = f"cmd:{sys.executable} {AGENT} 99 --calls {calls}"
    code, report = run_json(tmp_path, *panel(calls, {"ada": "12", "bo": "13", "cy": "12"}), "--chairman", chairman)
    assert code == 0 and report["outcome"] == "SYNTHESIZED", report
    # Each member answered exactly once, reviewed once; the chairman wrote the synthesis once.
    assert asked(calls) == Counter(
        {"ada 1": 1, "bo 1": 1, "cy 1": 1, "ada 2": 1, "bo 2": 1, "cy 2": 1, "chairman 3": 1}
    )
    text = (tmp_path / str(report["artifact"])).read_text(encoding="utf-8")
    assert text.count("## Stage 1 — Answer of") == 3 and "- **Decision:** ESCALATED" in text
    assert text.index("## Vote") < text.index("## Stage 2") < text.index("## Stage 3")
    # The outcome is the council's synthesis: the chairman adopted the majority's answer.
    assert "> Final answer: 12" in text.split("## Stage 3")[1]
    assert moot("check", str(report["artifact"]), cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(("agree", "outcome"), [("0.6", "VOTED"), ("2/3", "VOTED"), ("1", "SYNTHESIZED")])
def test_the_agreement_threshold_decides_whether_two_of_three_is_a_vote(
    tmp_path: Path, agree: str, outcome: str
) -> None:
    calls = tmp_path / "calls.txt"
    code, report = run_json(tmp_path, *panel(calls, {"ada": "yes", "bo": "Yes.", "cy": "no"}), "--agree", agree)
    assert code == 0 and report["outcome"] == outcome
    stages = {line.split()[1] for line in asked(calls)}
    assert stages == ({"1"} if outcome == "VOTED" else {"1", "2", "3"})


def test_a_failing_member_gives_a_degraded_vote_that_names_it_and_exits_1(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    members = [*panel(calls, {"ada": "12", "bo": "12"}), *member("cy", "12", calls, "--fail")]
    code, report = run_json(tmp_path, *members, "--repairs", "0")
    assert code == 1 and report["outcome"] == "VOTED" and report["consensus"] is False
    assert "cy" in str(report["degraded"]) and "ada" not in str(report["degraded"])
    assert "exit" in str(report["degraded"]) or "status" in str(report["degraded"])  # why it failed, too
    text = (tmp_path / str(report["artifact"])).read_text(encoding="utf-8")
    assert "## Stage 1 — No answer from cy" in text and "  - 2: ada, bo — 12" in text


def test_too_few_valid_answers_end_no_quorum(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    members = [*member("ada", "12", calls), *member("bo", "12", calls, "--fail"), *member("cy", "12", calls, "--fail")]
    code, report = run_json(tmp_path, *members, "--repairs", "0")
    assert code == 1 and report["outcome"] == "NO_QUORUM"


def test_bad_agree_or_quorum_is_one_sentence_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    two = panel(calls, {"ada": "1", "bo": "1"})
    for bad in (["--agree", "1.5"], ["--agree", "half"], ["--agree", "0"], ["--quorum", "3"]):
        done = moot("run", "auto", "--question", "Q?", *two, *bad, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.startswith("moot: ") and "Traceback" not in done.stderr, bad
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".auto").exists() and not calls.exists()


def _edited(tmp_path: Path, artifact: str, old: str, new: str) -> tuple[str, int]:
    path = tmp_path / artifact
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    line = text.splitlines().index("## Vote") + 1
    return moot("check", artifact, cwd=tmp_path).stdout, line


def test_check_flags_a_hand_edited_tally_with_its_rule_and_line(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    _, report = run_json(tmp_path, *panel(calls, {"ada": "12", "bo": "12", "cy": "12"}))
    out, line = _edited(tmp_path, str(report["artifact"]), "  - 3: ada, bo, cy — 12", "  - 3: ada, bo, cy — 13")
    assert re.search(rf":{line}: error AUTO_TALLY", out), out


def test_check_flags_a_vote_that_claims_a_decision_its_tally_does_not_give(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    _, report = run_json(tmp_path, *panel(calls, {"ada": "12", "bo": "13", "cy": "12"}))
    out, line = _edited(tmp_path, str(report["artifact"]), "- **Decision:** ESCALATED", "- **Decision:** VOTED")
    assert re.search(rf":{line}: error AUTO_DECISION", out), out
    assert "AUTO_VOTE_ORDER" in out  # the reviews then follow a vote that decided


def test_check_flags_an_escalation_the_tally_does_not_call_for(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    _, report = run_json(tmp_path, *panel(calls, {"ada": "12", "bo": "12", "cy": "12"}))
    artifact = str(report["artifact"])
    out, line = _edited(tmp_path, artifact, "- **Decision:** VOTED", "- **Decision:** ESCALATED")
    assert re.search(rf":{line}: error AUTO_DECISION", out), out


def test_resume_after_a_kill_in_stage_1_asks_only_the_members_still_missing(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    hold = tmp_path / "hold"
    hold.write_text("cy answers once this file is gone", encoding="utf-8")
    members = [*member("ada", "12", calls), *member("bo", "12", calls), *member("cy", "12", calls, f"--hold {hold}")]
    args = [*MOOT, "run", "auto", "--question", "How many apples are in the basket?", *members, "--json"]
    process = subprocess.Popen(
        args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    sealed = tmp_path / ".auto" / ".how-many-apples-are-in-the-basket.md.sealed.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (sealed.exists() and len(sealed.read_text().splitlines()) >= 2):
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    record = ".auto/how-many-apples-are-in-the-basket.md"
    assert "## Stage 1" not in (tmp_path / record).read_text(encoding="utf-8")  # nothing revealed before the last
    # The slow member answers at once on resume; the two committed members are not asked again.
    hold.unlink()
    done = moot("resume", record, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "VOTED"
    assert asked(calls) == Counter({"ada 1": 1, "bo 1": 1, "cy 1": 2})
    assert moot("check", record, cwd=tmp_path).returncode == 0


def test_a_record_written_without_its_vote_gets_it_on_resume(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    _, report = run_json(tmp_path, *panel(calls, {"ada": "12", "bo": "12", "cy": "12"}))
    text = (tmp_path / str(report["artifact"])).read_text(encoding="utf-8")
    (tmp_path / "other" / ".auto").mkdir(parents=True)
    bare = tmp_path / "other" / ".auto" / "apples.md"  # stage 1 as another tool might write it: no vote, no chain
    bare.write_text(text[: text.index("## Vote")].rstrip("\n") + "\n", encoding="utf-8")
    assert "open" in moot("check", str(bare), cwd=tmp_path).stdout
    moot("resume", str(bare), cwd=tmp_path / "other")
    assert "- **Decision:** VOTED" in bare.read_text(encoding="utf-8") and "## Outcome" in bare.read_text()
    assert moot("check", str(bare), cwd=tmp_path).returncode == 0
    assert asked(calls) == Counter({"ada 1": 1, "bo 1": 1, "cy 1": 1})  # the vote asked no one


def test_a_batch_line_takes_require_diverse_as_the_command_does(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    scripted = [[name, f"cmd:{sys.executable} {AGENT} 12 --calls {calls}"] for name in ("ada", "bo", "cy")]
    gpts = [["ada", "openai:gpt-4o"], ["bo", "openai:gpt-4o-mini"], ["cy", "openai:gpt-4.1"]]
    lines = [
        {"protocol": "auto", "question": "How many apples?", "members": gpts, "require_diverse": True},
        # Programs name no model family, so a panel of them may run under require_diverse.
        {"protocol": "auto", "question": "How many pears?", "members": scripted, "require_diverse": True},
        {"protocol": "council", "question": "How many plums?", "members": gpts, "require_diverse": True},
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps({**line, "root": str(tmp_path)}) + "\n" for line in lines), encoding="utf-8")
    done = moot("run", "--batch", str(batch), cwd=tmp_path)
    rows = {row["line"]: row for row in map(json.loads, done.stdout.splitlines())}
    assert done.returncode == 1  # a line was refused
    refusal = (
        '"require_diverse" refuses this panel: every member is of one model family (OpenAI GPT); give some members '
        'a model of another family (the "members", "agent" or "agents" key) or drop "require_diverse".'
    )
    assert rows[1] == {"line": 1, "error": refusal} and rows[3] == {"line": 3, "error": refusal}
    assert (rows[2]["outcome"], rows[2]["consensus"]) == ("VOTED", True)
    assert asked(calls) == Counter({"ada 1": 1, "bo 1": 1, "cy 1": 1})
    kept = sorted(path.name for folder in tmp_path.glob(".*") if folder.is_dir() for path in folder.glob("*.md"))
    assert kept == ["how-many-pears.md"]  # the refused lines left nothing


def test_a_panel_of_two_that_splits_is_no_consensus_and_one_that_agrees_is(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    code, report = run_json(tmp_path, *panel(calls, {"ada": "12", "bo": "13"}))
    # The split escalates to a council of two, whose reviews each rank one answer: nothing shows which is better.
    assert (code, report["outcome"], report["consensus"], report["degraded"]) == (1, "SYNTHESIZED", False, None)
    assert "with two answers nothing is ranked, so this is no consensus" in str(report["reason"])
    record = str(report["artifact"])
    shown = json.loads(moot("show", "--json", record, cwd=tmp_path).stdout)
    assert shown["state"]["outcome"]["consensus"] is False and shown["exit_code"] == 0  # a valid record
    checked = moot("check", record, cwd=tmp_path)
    assert checked.returncode == 0 and "so this is no consensus" in checked.stdout
    code, report = run_json(tmp_path, *panel(calls, {"cy": "12", "dee": "12"}), "--force")
    assert (code, report["outcome"], report["consensus"]) == (0, "VOTED", True)  # two who agree: the vote shows it


def test_an_escalation_aggregates_as_aggregate_says_and_every_answer_and_review_states_its_confidence(
    tmp_path: Path,
) -> None:
    calls = tmp_path / "calls.txt"
    members = panel(calls, {"ada": "12", "bo": "13", "cy": "12"})
    # A fixed seed: the review shuffles decide which answer each scripted reviewer ranks first, and some seeds
    # leave all three tied, with no answer at 1.6 points.
    code, report = run_json(tmp_path, *members, "--aggregate", "confidence", "--seed", "1")
    assert code == 0 and report["outcome"] == "SYNTHESIZED", report
    path = tmp_path / str(report["artifact"])
    text = path.read_text(encoding="utf-8")
    assert "- **Aggregation:** confidence\n" in text and text.count("- **Confidence:** 0.8\n") == 6
    # Every review states 0.8, so each Borda point counts 0.8: the table holds the weighted points.
    assert re.search(r"\| 1 \| \w+ \| 1\.6 \|", text)
    shown = json.loads(moot("show", "--json", str(path), cwd=tmp_path).stdout)
    assert shown["verdict"] == "valid" and shown["state"]["detail"]["aggregation"] == "confidence"

"""A council never says more than it has: its quorum, a failed member or chairman, and a resume that asks only the
members without an answer — run as a user runs them, with scripted members as real subprocesses."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import forked_moot
from forked_moot import MOOT
from moot.core.machine import sealed_digest
from moot.protocols.council import record as council_record
from moot.protocols.council.driver import CouncilDriver, CouncilOptions
from moot.protocols.council.machine import Answer, Review

MEMBER = Path(__file__).with_name("council_member.py")
QUESTION = "Share one cache?"


def member(name: str, behaviour: str = "") -> list[str]:
    return ["--member", f"{name}=cmd:{sys.executable} {MEMBER}{' ' + behaviour if behaviour else ''}"]


def moot(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "XDG_CONFIG_HOME": str(cwd / "config"), **(env or {})}
    return forked_moot.run(args, cwd=cwd, timeout=300, env=environment)


def asked(log: Path) -> dict[str, list[int]]:
    """Each member's requests, as the stages it was asked for, in order."""
    found: dict[str, list[int]] = {}
    for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
        role, stage, _ = line.split()
        found.setdefault(role, []).append(int(stage))
    return found


def test_a_quorum_of_three_with_one_failing_member_ends_in_no_quorum(tmp_path: Path) -> None:
    done = moot(
        "run", "council", "--question", QUESTION, *member("ada"), *member("bo"), *member("cy", "fail"),
        "--quorum", "3", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "NO_QUORUM" and "the quorum is 3" in report["reason"]
    record = tmp_path / report["artifact"]
    text = record.read_text(encoding="utf-8")
    assert "- **Quorum:** 3" in text and "Review by" not in text
    assert moot("check", str(record), cwd=tmp_path).returncode == 0
    # The same council with the default quorum goes on without cy.
    again = moot("run", "council", "--question", "Again?", *member("ada"), *member("bo"), *member("cy", "fail"),
                 "--json", cwd=tmp_path)  # fmt: skip
    assert json.loads(again.stdout)["outcome"] == "SYNTHESIZED", again.stderr


def test_a_quorum_beyond_the_members_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    done = moot("run", "council", "--question", QUESTION, *member("ada"), *member("bo"), "--quorum", "3", cwd=tmp_path)
    assert done.returncode == 2 and "quorum" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".council").exists()


def test_a_failed_member_makes_the_council_degraded_in_json_exit_code_and_receipt(tmp_path: Path) -> None:
    done = moot(
        "run", "council", "--question", QUESTION, *member("ada"), *member("bo"), *member("cy", "fail"), "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # a synthesis of two of three is no consensus
    report = json.loads(done.stdout)
    assert report["outcome"] == "SYNTHESIZED" and report["consensus"] is False
    assert report["degraded"] == "cy gave no valid answer (2 of 3 answered)"
    record = tmp_path / report["artifact"]
    shown = json.loads(moot("show", "--json", str(record), cwd=tmp_path).stdout)
    assert "cy gave no valid answer" in json.dumps(shown)
    assert moot("receipt", str(record), cwd=tmp_path).returncode == 0
    receipt = json.loads(record.with_name(record.name + ".receipt.json").read_text(encoding="utf-8"))
    assert receipt["outcome"]["degraded"] == report["degraded"]


def test_a_failed_chairman_is_replaced_by_the_top_member_and_check_is_clean(tmp_path: Path) -> None:
    chairman = f"cmd:{sys.executable} {MEMBER} fail-synthesis"
    done = moot(
        "run", "council", "--question", QUESTION, *member("ada"), *member("bo"), *member("cy"),
        "--chairman", chairman, "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "SYNTHESIZED" and report["consensus"] is False
    record = tmp_path / report["artifact"]
    text = record.read_text(encoding="utf-8")
    top = re.search(r"^\| 1 \| (\w+) \|", text, re.MULTILINE)  # the aggregate ranking's first member
    assert top is not None
    degraded = report["degraded"]
    assert degraded.startswith("the chairman failed: chairman's agent failed: command 'python' exited with code 1")
    assert degraded.endswith(f"; {top[1]} wrote the synthesis")
    assert "## Stage 3 — No synthesis from chairman" in text and f"- **Fallback:** {top[1]}" in text
    assert f"## Stage 3 — Synthesis by {top[1]}" in text
    checked = moot("check", str(record), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_forged_fallback_without_the_chairmans_failure_is_a_check_error_with_its_line(tmp_path: Path) -> None:
    done = moot("run", "council", "--question", QUESTION, *member("ada"), *member("bo"), *member("cy"),
                "--chairman", f"cmd:{sys.executable} {MEMBER}", "--json", cwd=tmp_path)  # fmt: skip
    record = tmp_path / json.loads(done.stdout)["artifact"]
    text = record.read_text(encoding="utf-8")
    forged = text.replace("## Stage 3 — Synthesis by chairman", "## Stage 3 — Synthesis by ada")
    assert forged != text
    record.write_text(forged, encoding="utf-8")
    line = forged.splitlines().index(next(x for x in forged.splitlines() if x.startswith("## Stage 3"))) + 1
    checked = moot("check", str(record), cwd=tmp_path)
    assert checked.returncode == 1
    assert f"{record.name}:{line}: error COUNCIL_FALLBACK" in checked.stdout, checked.stdout


def test_resume_after_a_turn_timeout_asks_only_the_member_without_an_answer(tmp_path: Path) -> None:
    log, release = tmp_path / "asked.log", tmp_path / "release"
    env = {"MOOT_TEST_AGENT_ASKED": str(log), "MOOT_TEST_RELEASE": str(release)}
    members = [*member("ada"), *member("bo"), *member("cy", "hang")]
    first = moot("run", "council", "--question", QUESTION, *members, "--turn-timeout", "3", "--json",
                 cwd=tmp_path, env=env)  # fmt: skip
    assert first.returncode == 1, first.stderr
    report = json.loads(first.stdout)
    assert report["outcome"] == "RUN_HALTED" and "turn timeout" in report["reason"]
    record = tmp_path / report["artifact"]
    assert "## Stage 1" not in record.read_text(encoding="utf-8")  # nothing revealed while cy is missing
    assert asked(log) == {"ada": [1], "bo": [1], "cy": [1]}
    release.touch()  # cy answers in time now
    resumed = moot("resume", str(record), "--json", cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["outcome"] == "SYNTHESIZED"
    calls = asked(log)
    assert calls["cy"] == [1, 1, 2] and calls["ada"] == [1, 2, 3] and calls["bo"] == [1, 2]
    assert moot("check", str(record), cwd=tmp_path).returncode == 0


def test_resume_after_a_kill_mid_stage_asks_only_the_member_without_an_answer(tmp_path: Path) -> None:
    log, release = tmp_path / "asked.log", tmp_path / "release"
    environment = {**os.environ, "MOOT_TEST_AGENT_ASKED": str(log), "MOOT_TEST_RELEASE": str(release)}
    members = [*member("ada"), *member("bo"), *member("cy", "hang")]
    command = [*MOOT, "run", "council", "--question", QUESTION, *members, "--json"]
    sidecar = tmp_path / ".council" / ".share-one-cache.md.sealed.jsonl"
    with subprocess.Popen(command, cwd=tmp_path, env=environment, stdout=subprocess.DEVNULL) as run:
        deadline = time.monotonic() + 120
        while not (sidecar.exists() and len(sidecar.read_text(encoding="utf-8").splitlines()) == 2):
            assert run.poll() is None and time.monotonic() < deadline, "ada and bo never committed their answers"
            time.sleep(0.1)
        run.kill()  # moot dies mid-stage, while cy is still thinking
    hanging = [int(line.split()[2]) for line in log.read_text(encoding="utf-8").splitlines() if line.startswith("cy ")]
    for pid in hanging:  # cy's process runs in a session of its own: it outlives the killed run
        os.kill(pid, signal.SIGKILL)
    release.touch()
    record = tmp_path / ".council" / "share-one-cache.md"
    resumed = moot(
        "resume",
        str(record),
        "--json",
        cwd=tmp_path,
        env={k: environment[k] for k in ("MOOT_TEST_AGENT_ASKED", "MOOT_TEST_RELEASE")},
    )
    assert resumed.returncode == 0, resumed.stderr
    calls = asked(log)
    assert calls["ada"] == [1, 2, 3] and calls["bo"] == [1, 2] and calls["cy"] == [1, 1, 2]
    assert moot("check", str(record), cwd=tmp_path).returncode == 0


def test_a_one_family_panel_warns_in_show_and_require_diverse_refuses_it_before_anything_is_written(
    tmp_path: Path,
) -> None:
    gpts = ["--member", "ada=openai:gpt-4o", "--member", "bo=openai:gpt-4o-mini", "--member", "cy=openai:gpt-4.1"]
    refused = moot("run", "council", "--question", QUESTION, *gpts, "--require-diverse", cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith("moot: --require-diverse refuses this panel: every member is of one model family")
    assert len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".council").exists() and not list(tmp_path.glob("moot-dry-run-*"))
    # A panel of programs names no family: --require-diverse lets it run.
    mixed = moot("run", "council", "--question", QUESTION, *member("ada"), *member("bo"), *member("cy"),
                 "--require-diverse", "--json", cwd=tmp_path)  # fmt: skip
    assert mixed.returncode == 0, mixed.stderr
    shown = json.loads(moot("show", "--json", json.loads(mixed.stdout)["artifact"], cwd=tmp_path).stdout)
    assert shown["panel_warning"] is None
    # A record of a one-family panel (its header alone, as a council starts) is flagged by `moot show`.
    options = CouncilOptions(question="Shard the cache?", members=[m.split("=", 1) for m in gpts[1::2]], seed=1)
    record = CouncilDriver.start(tmp_path, options, "2026-11-27 18:00").record_path
    as_json = json.loads(moot("show", "--json", str(record), cwd=tmp_path).stdout)
    assert as_json["panel_warning"].startswith("every member of this panel is of one model family (OpenAI GPT)")
    plain = " ".join(moot("show", str(record), cwd=tmp_path).stdout.split())
    assert "panel: every member of this panel is of one model family" in plain


def test_a_council_of_two_reports_its_borda_tie_as_a_tie_and_what_it_cannot_measure(tmp_path: Path) -> None:
    log = tmp_path / "asked.log"
    done = moot("run", "council", "--question", QUESTION, *member("ada"), *member("bo"), "--json",
                cwd=tmp_path, env={"MOOT_TEST_AGENT_ASKED": str(log)})  # fmt: skip
    report = json.loads(done.stdout)
    assert report["outcome"] == "SYNTHESIZED" and "ranked first" not in report["reason"]
    # Each reviewer ranks only the other's answer: the reviews rank nothing, so the synthesis is no consensus.
    assert (done.returncode, report["consensus"], report["degraded"]) == (1, False, None)
    assert report["reason"].endswith("; with two answers nothing is ranked, so this is no consensus")
    assert "no answer ranked above another (ada and bo tied with 0 Borda point(s) each)" in report["reason"]
    record = tmp_path / report["artifact"]
    assert "| 1 | ada | 0 |\n| 1 | bo | 0 |" in record.read_text(encoding="utf-8")  # one rank for a tie
    shown = json.loads(moot("show", "--json", str(record), cwd=tmp_path).stdout)
    open_items = [item["text"] for item in shown["decision"]["open"]]
    assert any(text.startswith("the ranking is a tie: no answer ranked above another") for text in open_items)
    assert any("a council of two cannot show a ranking or agreement" in text for text in open_items)
    plain = " ".join(moot("show", str(record), cwd=tmp_path).stdout.split())  # as read, whatever the wrapping
    assert "the ranking is a tie" in plain and "each reviewer sees one answer" in plain


def test_the_synthesis_prompt_names_a_tie(tmp_path: Path) -> None:
    options = CouncilOptions(question=QUESTION, members=(("ada", "local"), ("bo", "local")), seed=3)
    driver = CouncilDriver.start(tmp_path, options, "2026-11-27 18:00")
    answers = [Answer(member=name, at="t", text=f"{name} answers.", confidence=0.8) for name in ("ada", "bo")]
    answers = [a.model_copy(update={"digest": sealed_digest(council_record.sealed_text(a))}) for a in answers]
    council_record.append_turns(driver.record_path, answers)
    reviews = []
    for reviewer, other in (("ada", "bo"), ("bo", "ada")):
        review = Review(
            reviewer=reviewer, at="t", shown=(other,), ranking=("Answer A",), reasons=("it holds",), confidence=0.5
        )
        reviews.append(review.model_copy(update={"digest": sealed_digest(council_record.sealed_text(review))}))
    council_record.append_turns(driver.record_path, reviews)
    prompt = CouncilDriver.resume(driver.record_path).request_for("ada").prompt
    assert "The ranking is a tie: no answer ranked above another (ada and bo tied with 0 Borda point(s) each)" in prompt
    assert "1. ada (0 Borda points)\n1. bo (0 Borda points)" in prompt

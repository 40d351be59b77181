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

MEMBER = Path(__file__).with_name("council_member.py")
MOOT = [sys.executable, "-m", "moot"]
QUESTION = "Share one cache?"


def member(name: str, behaviour: str = "") -> list[str]:
    return ["--member", f"{name}=cmd:{sys.executable} {MEMBER}{' ' + behaviour if behaviour else ''}"]


def moot(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "XDG_CONFIG_HOME": str(cwd / "config"), **(env or {})}
    return subprocess.run([*MOOT, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=environment)


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

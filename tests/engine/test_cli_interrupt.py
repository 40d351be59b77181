"""Stopping a run as a user does, and the progress line while it runs: Ctrl-C on the embedded model through a real
pseudo-terminal, --json on SIGINT, a clock that moves during a slow turn, and "asking again" only when moot asks."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pexpect
import pytest
from engine_helpers import MOOT, in_a_terminal, reply, run_moot, write_script

from moot.agents.local import llama_cpp_available
from moot.detect import check_path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RECORD = ".dialogues/t.md"


def _screen(text: str) -> list[str]:
    """What the terminal showed, one line per redraw of the live line."""
    return [line for line in ANSI.sub("", text).replace("\r", "\n").splitlines() if line.strip()]


def _seconds_to_exit_after_ctrl_c(child: pexpect.spawn) -> float:
    """Press Ctrl-C in ``child``'s terminal and time how long it takes to exit (at most 30 s are waited for)."""
    sent = time.monotonic()
    child.sendintr()
    child.expect(pexpect.EOF, timeout=30)
    return time.monotonic() - sent


def _weights_missing() -> bool:
    from moot.agents.local import default_weights

    try:
        default_weights()
    except Exception:
        return True
    return not llama_cpp_available()


@pytest.mark.model
@pytest.mark.skipif(_weights_missing(), reason="the embedded model (moot[local]) is not installed")
def test_ctrl_c_stops_the_embedded_model_at_once_and_the_record_resumes(tmp_path: Path, agreeing_script: Path) -> None:
    """The default `local` agent generating a long turn: one Ctrl-C ends the process within seconds (it used to
    run on to the end of the turn, a minute and more), says it is stopping, and leaves a valid, resumable record
    that holds no half-generated turn."""
    long = ["--max-tokens", "100000", "--max-turn-tokens", "1500"]  # a turn may run long; the debate has budget
    topic = "Write the complete history of every ocean on Earth, century by century, in great detail"
    child = in_a_terminal(["run", "critique", "--topic", topic, *long], tmp_path)
    try:
        child.expect("is speaking", timeout=120)
        # Generating: its tokens stream into the progress line (a loaded machine may take a while to load the model
        # and read the prompt; the run is interrupted in any case, but the tokens must have been shown).
        streaming = r"turn 1 of \d+ · proposer is speaking · [1-9]\d* tokens"  # no turn has landed: these stream
        streamed = child.expect([streaming, pexpect.TIMEOUT], timeout=180) == 0
        took = _seconds_to_exit_after_ctrl_c(child)
    finally:
        child.close(force=True)
    assert took < 10, f"the run took {took:.1f} s to stop after Ctrl-C"
    assert streamed, "the progress line never showed the tokens being generated"
    assert child.exitstatus == 130
    (record,) = (path.relative_to(tmp_path).as_posix() for path in (tmp_path / ".dialogues").glob("*.md"))
    said = [line[line.index("moot:") :] for line in _screen(child.before) if "moot:" in line]
    assert said == [
        "moot: stopping… (Ctrl-C again quits at once)",
        f"moot: stopped. The record is {record}; continue with: moot resume {record}",
    ]

    checked = run_moot("check", record, cwd=tmp_path)
    assert checked.returncode == 0 and "interrupted" in checked.stdout, checked.stdout + checked.stderr
    report = check_path(tmp_path / record)
    assert report.summary is not None and report.summary.turns == 0  # nothing of the cut turn was written
    assert report.summary.detail["run_halted"]["cause"] == "interrupted"
    rows = json.loads(run_moot("log", record, "--json", cwd=tmp_path).stdout)
    assert not any(row.get("accepted") for row in rows)

    # `moot resume` continues the same record (with scripted turns here, to keep the test short).
    resumed = run_moot("resume", record, "--agents", f"script:{agreeing_script}", cwd=tmp_path)
    assert resumed.returncode == 0 and "DONE" in resumed.stdout, resumed.stdout + resumed.stderr
    assert check_path(tmp_path / record).summary.turns == 4  # type: ignore[union-attr]


def _slow_command(tmp_path: Path, seconds: float, *, started: Path | None = None) -> Path:
    """A cmd: agent that (optionally marks that it started and) sleeps, then answers a valid critique turn."""
    command = tmp_path / "slow.sh"
    mark = f"touch {started}\n" if started is not None else ""
    turn = reply("Keep one repository.").replace("'", "")
    command.write_text(f"#!/bin/sh\n{mark}sleep {seconds}\necho '{turn}'\n")
    command.chmod(0o755)
    return command


def test_json_on_ctrl_c_prints_one_object_naming_the_halt_and_the_resume_command(tmp_path: Path) -> None:
    started = tmp_path / "started"
    command = _slow_command(tmp_path, 60, started=started)
    run = subprocess.Popen(
        [*MOOT, "run", "critique", "--topic", "T", "--agents", f"cmd:{command}", "--json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert started.exists(), "the agent was never asked"
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=30)
    finally:
        run.kill()
    assert run.returncode == 130
    printed = json.loads(out)  # exactly one JSON object, nothing else on stdout
    assert printed["outcome"] == "RUN_HALTED" and printed["consensus"] is False
    assert printed["run_halted"]["cause"] == "interrupted" and printed["run_halted"]["role"] == "proposer"
    assert printed["resume"] == f"moot resume {RECORD}"
    assert printed["artifact"] == RECORD and printed["turns"] == 0
    assert f"continue with: moot resume {RECORD}" in err


def test_the_progress_clock_moves_while_a_slow_turn_is_generated(tmp_path: Path) -> None:
    command = _slow_command(tmp_path, 4)
    child = in_a_terminal(
        ["run", "critique", "--topic", "T", "--max-rounds", "1", "--agents", f"cmd:{command}"], tmp_path
    )
    try:
        child.expect("critic is speaking", timeout=120)
    finally:
        child.close(force=True)
    seconds = {
        int(found.group(1))
        for line in _screen(child.before)
        if (found := re.search(r"turn 1 of 2 · proposer is speaking · 0 tokens · (\d+) s", line))
    }
    # The turn takes four seconds: the line showed them passing, not one frozen clock.
    assert len(seconds) >= 3, f"the clock showed only {sorted(seconds)}"


def test_asking_again_is_said_only_when_a_repair_is_sent(tmp_path: Path) -> None:
    nope = write_script(tmp_path / "nope.jsonl", ["nope", "nope", "nope"])
    none = run_moot("run", "critique", "--topic", "A", "--repairs", "0", "--agents", f"script:{nope}", cwd=tmp_path)
    assert none.returncode == 1 and "gave an invalid turn (REPLY_FORMAT)" in none.stderr
    assert "asking again" not in none.stderr
    nope = write_script(tmp_path / "nope.jsonl", ["nope", "nope", "nope"])
    once = run_moot("run", "critique", "--topic", "B", "--repairs", "1", "--agents", f"script:{nope}", cwd=tmp_path)
    assert once.returncode == 1
    assert once.stderr.count("gave an invalid turn") == 2 and once.stderr.count("asking again") == 1


def test_a_second_ctrl_c_exits_at_once_while_an_agent_thread_still_works(tmp_path: Path) -> None:
    """A person's editor that ignores Ctrl-C keeps a worker thread busy after the first Ctrl-C has stopped the run;
    the second ends moot at once (it used to print "stopped" and hold the terminal until the thread ended)."""
    started = tmp_path / "editing"
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\ntrap '' INT\ntouch {started}\nsleep 60\n")
    editor.chmod(0o755)
    critic = write_script(tmp_path / "critic.jsonl", [reply("How do you keep builds fast?")])
    args = ["run", "critique", "--topic", "T", "--agent", "proposer=human", "--agent", f"critic=script:{critic}"]
    child = in_a_terminal(args, tmp_path, EDITOR=str(editor), VISUAL=str(editor))
    try:
        child.expect("› message")
        child.sendline("e")  # the turn is written in $EDITOR, which runs in a worker thread
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        child.sendintr()
        child.expect("moot: stopping", timeout=30)
        time.sleep(1)
        took = _seconds_to_exit_after_ctrl_c(child)
    finally:
        child.close(force=True)
    assert took < 5, f"moot took {took:.1f} s to exit after the second Ctrl-C"
    assert child.exitstatus == 130
    assert f"continue with: moot resume {RECORD}" in ANSI.sub("", child.before)
    report = check_path(tmp_path / RECORD)
    assert report.verdict == "valid" and report.summary is not None
    assert report.summary.detail["run_halted"]["cause"] == "interrupted"

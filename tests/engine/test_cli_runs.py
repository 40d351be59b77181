"""How a run ends and what it leaves, as a user sees it: the attempt log (`moot log`, `--debug`), a halt
that `moot check`/`show`/`ls` report, resume with the run's own agents, starts that fail leaving nothing,
`--force`, moot.toml typos, Ctrl-C, `--quiet`, colour and completion."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pexpect
import pytest
from engine_helpers import MOOT, in_a_terminal, reply, run_moot, write_script

from moot.detect import check_path


def critique_t(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``moot run critique --topic T ARGS`` in ``root``: the dialogue is .dialogues/t.md."""
    return run_moot("run", "critique", "--topic", "T", *args, cwd=root)


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_every_attempt_is_logged_and_moot_log_shows_it(tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.jsonl",
        ["this is prose, not a turn", reply("One repository."), reply("CI time?")],
    )
    done = run_moot(
        "run", "critique", "--topic", "T", "--max-rounds", "1", "--agents", f"script:{script}", "--debug", cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    # --debug prints each attempt as it happens, the refused reply and why.
    assert "rejected" in done.stderr and "this is prose, not a turn" in done.stderr and "REPLY_FORMAT" in done.stderr

    shown = run_moot("log", ".dialogues/t.md", cwd=tmp_path)
    assert shown.returncode == 0
    assert f"turn 1 · attempt 1 · proposer (script:{script}) · rejected" in shown.stdout
    assert "| this is prose, not a turn" in shown.stdout and "REPLY_FORMAT:" in shown.stdout
    assert "turn 1 · attempt 2" in shown.stdout and "accepted" in shown.stdout

    rows = json.loads(run_moot("log", ".dialogues/t.md", "--json", cwd=tmp_path).stdout)
    assert [(r["turn"], r["attempt"], r["accepted"]) for r in rows] == [(1, 1, False), (1, 2, True), (2, 1, True)]
    assert rows[0]["reply"] == "this is prose, not a turn" and rows[0]["violations"][0]["rule"] == "REPLY_FORMAT"
    assert rows[0]["agent"] == f"script:{script}" and {"latency_s", "model", "prompt_tokens"} <= rows[0].keys()


def test_a_halted_run_is_reported_by_check_show_and_ls_and_resume_continues_with_its_agents(tmp_path: Path) -> None:
    broken = write_script(tmp_path / "broken.jsonl", ["nope", "nope", "nope"])
    done = run_moot(
        "run", "critique", "--topic", "T", "--max-rounds", "1", "--agents", f"script:{broken}", cwd=tmp_path
    )
    assert done.returncode == 1 and "RUN_HALTED" in done.stdout and "STUCK" not in done.stdout

    checked = run_moot("check", ".dialogues/t.md", cwd=tmp_path)
    assert checked.returncode == 0 and "status open" in checked.stdout
    assert "RUN_HALTED" in checked.stdout and "no valid turn after every repair" in checked.stdout
    assert "moot resume .dialogues/t.md" in checked.stdout
    assert "RUN_HALTED" in run_moot("show", ".dialogues/t.md", cwd=tmp_path).stdout
    shown = json.loads(run_moot("show", ".dialogues/t.md", "--json", cwd=tmp_path).stdout)
    assert shown["state"]["detail"]["run_halted"]["cause"] == "repairs_exhausted"
    assert shown["documents"][0]["name"] == "t.md" and "# Dialogue:" in shown["documents"][0]["text"]
    listed = json.loads(run_moot("ls", "--json", cwd=tmp_path).stdout)
    assert [(r["path"], r["status"], r["run_halted"], r["turns"]) for r in listed] == [
        (".dialogues/t.md", "open", "repairs_exhausted", 0)
    ]

    # The run's agent spec is stored (never a key); resume reuses it unless told otherwise.
    state = json.loads((tmp_path / ".dialogues" / ".t.md.run.json").read_text())
    assert state["agents"] == {"proposer": f"script:{broken}", "critic": f"script:{broken}"}
    again = run_moot("resume", ".dialogues/t.md", "--json", cwd=tmp_path)
    assert json.loads(again.stdout)["reason"].startswith("proposer gave no valid turn")  # the same script, again
    good = write_script(tmp_path / "good.jsonl", [reply("One repository."), reply("CI time?")])
    fixed = run_moot("resume", ".dialogues/t.md", "--agents", f"script:{good}", "--json", cwd=tmp_path)
    assert json.loads(fixed.stdout)["outcome"] == "MAX_ROUNDS"
    assert "run_halted" not in check_path(tmp_path / ".dialogues/t.md").summary.detail  # type: ignore[union-attr]
    nothing = run_moot("resume", ".dialogues/t.md", cwd=tmp_path)
    assert nothing.returncode == 2 and "nothing to resume" in nothing.stderr and "MAX_ROUNDS" in nothing.stderr


def test_the_duel_records_an_agent_failure_as_its_seed_timeout(tmp_path: Path) -> None:
    source = tmp_path / "doc.md"
    source.write_text("# Use SQLite\n\n## Why\nIt is one file.\n", encoding="utf-8")
    done = run_moot("run", "duel", "doc.md", "--agents", "cmd:false", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    record = next((tmp_path / "debates").glob("*.md"))
    assert "**Outcome**: TIMEOUT" in record.read_text() and "INVALIDATED" not in record.read_text()
    assert run_moot("resume", str(record), cwd=tmp_path).stderr.startswith("moot: nothing to resume")


@pytest.mark.parametrize(
    ("args", "toml", "expected"),
    [
        (["--agents", "nonsense:x"], None, "nonsense"),
        (["--agents", "script:missing.jsonl"], None, "missing.jsonl"),
        (["--agent", "critic"], None, "ROLE=SPEC"),
        ([], "repairz = 3\n", "did you mean 'repairs'"),
        ([], '[agent]\ncritc = "local"\n', "did you mean 'critic'"),
        (["--agents", "openai:gpt-4o-mini@http://127.0.0.1:9/v1"], None, "cannot reach http://127.0.0.1:9/v1"),
    ],
)
def test_a_start_that_fails_exits_2_and_writes_nothing(
    tmp_path: Path, args: list[str], toml: str | None, expected: str
) -> None:
    if toml is not None:
        (tmp_path / "moot.toml").write_text(toml)
    before = tree(tmp_path)
    done = run_moot("run", "critique", "--topic", "T", *args, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "pass openai:MODEL@URL" not in done.stderr  # the user did pass the URL
    assert tree(tmp_path) == before


class _Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        refused = self.headers.get("Authorization") == "Bearer wrong-key"
        answer = {"error": {"message": "Incorrect API key provided"}} if refused else {"object": "list", "data": []}
        body = json.dumps(answer).encode()
        self.send_response(401 if refused else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_probe_passes_a_reachable_server_and_refuses_a_rejected_key(tmp_path: Path) -> None:
    import asyncio

    from moot.agents.openai_compat import OpenAIAgent
    from moot.errors import AgentError

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        asyncio.run(OpenAIAgent("m", base_url=url).probe())  # answers: no error
        with pytest.raises(AgentError, match="401"):
            asyncio.run(OpenAIAgent("m", base_url=url, api_key="wrong-key").probe())
    finally:
        server.shutdown()


class _Busy(BaseHTTPRequestHandler):
    """A model server generating for someone else: it takes the connection and answers only later."""

    def do_GET(self) -> None:
        time.sleep(1.5)
        _Models.do_GET(self)  # type: ignore[arg-type]

    def log_message(self, *args: object) -> None:
        pass


def test_the_probe_takes_a_busy_server_for_a_present_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from moot.agents import anthropic_agent, openai_compat

    monkeypatch.setattr(openai_compat, "PROBE_TIMEOUT_S", 0.3)
    monkeypatch.setattr(anthropic_agent, "PROBE_TIMEOUT_S", 0.3)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        # Both time out on the answer, after the connection was made: no "cannot reach", the run may start.
        asyncio.run(openai_compat.OpenAIAgent("m", base_url=f"http://127.0.0.1:{port}/v1").probe())
        asyncio.run(
            anthropic_agent.AnthropicAgent("claude-x", api_key="k", base_url=f"http://127.0.0.1:{port}").probe()
        )
    finally:
        server.shutdown()


def test_force_replaces_a_finished_record_and_without_it_the_user_is_told_to_resume(
    tmp_path: Path, agreeing_script: Path
) -> None:
    first = run_moot("run", "critique", "--topic", "T", "--agents", f"script:{agreeing_script}", cwd=tmp_path)
    assert first.returncode == 0
    again = run_moot("run", "critique", "--topic", "T", "--agents", f"script:{agreeing_script}", cwd=tmp_path)
    assert again.returncode == 2 and "moot resume .dialogues/t.md" in again.stderr and "--force" in again.stderr
    short = write_script(tmp_path / "short.jsonl", [reply("Only this.")])
    forced = critique_t(tmp_path, "--max-rounds", "1", "--agents", f"script:{short}", "--force", "--json")
    assert json.loads(forced.stdout)["turns_this_run"] == 1
    text = (tmp_path / ".dialogues" / "t.md").read_text()
    assert "Only this." in text and "Build only what changed" not in text
    rows = json.loads(run_moot("log", ".dialogues/t.md", "--json", cwd=tmp_path).stdout)
    assert len(rows) == 2  # the old record's attempt log went with it


def test_a_forced_start_whose_agents_fail_leaves_the_old_record_and_its_files_as_they_were(
    tmp_path: Path, agreeing_script: Path
) -> None:
    assert (
        run_moot("run", "critique", "--topic", "T", "--agents", f"script:{agreeing_script}", cwd=tmp_path).returncode
        == 0
    )
    folder = tmp_path / ".dialogues"
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert len(before) >= 3  # the record, its chain and its attempt log at least
    missing = f"script:{tmp_path / 'no-such-script.jsonl'}"
    with socket.socket() as closed:  # a port nobody listens on once this is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    unreachable = f"openai:m@http://127.0.0.1:{port}/v1"
    for agent in (missing, unreachable):
        forced = subprocess.run(
            [*MOOT, "run", "critique", "--topic", "T", "--agents", agent, "--force"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "OPENAI_API_KEY": "sk-test"},
        )
        assert forced.returncode == 2 and "Traceback" not in forced.stderr, forced.stderr
        assert {path.name: path.read_bytes() for path in folder.iterdir()} == before, agent
    report = check_path(folder / "t.md")
    assert (
        report.exit_code == 0
        and report.summary is not None
        and report.summary.outcome is not None
        and report.summary.outcome.name == "DONE"
    )


def test_ctrl_c_says_it_stops_then_names_the_record_and_the_resume_command(tmp_path: Path) -> None:
    slow = tmp_path / "slow.sh"
    slow.write_text("#!/bin/sh\nsleep 60\n")
    slow.chmod(0o755)
    child = in_a_terminal(["run", "critique", "--topic", "T", "--agents", f"cmd:{slow}"], tmp_path)
    child.expect("is speaking")
    time.sleep(0.5)
    started = time.monotonic()
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert time.monotonic() - started < 10
    assert child.exitstatus == 130
    said = [line[line.index("moot:") :] for line in child.before.splitlines() if "moot:" in line]
    assert said == [
        "moot: stopping… (Ctrl-C again quits at once)",
        "moot: stopped. The record is .dialogues/t.md; continue with: moot resume .dialogues/t.md",
    ]
    report = check_path(tmp_path / ".dialogues/t.md")
    assert report.summary is not None and report.summary.detail["run_halted"]["cause"] == "interrupted"


def test_colour_on_a_terminal_unless_no_color_and_quiet_prints_one_line(tmp_path: Path, agreeing_script: Path) -> None:
    coloured = in_a_terminal(["run", "critique", "--topic", "A", "--agents", f"script:{agreeing_script}"], tmp_path)
    coloured.expect(pexpect.EOF)
    assert "\x1b[" in coloured.before and "DONE" in coloured.before
    plain = in_a_terminal(
        ["run", "critique", "--topic", "B", "--agents", f"script:{agreeing_script}"], tmp_path, NO_COLOR="1"
    )
    plain.expect(pexpect.EOF)
    assert "DONE" in plain.before and "\x1b[1;32m" not in plain.before and "\x1b[32m" not in plain.before
    quiet = run_moot(
        "run", "critique", "--topic", "C", "--quiet", "--agents", f"script:{agreeing_script}", cwd=tmp_path
    )
    assert quiet.returncode == 0 and quiet.stdout.strip() == "DONE .dialogues/c.md" and quiet.stderr == ""


def test_shell_completion_is_offered(tmp_path: Path) -> None:
    # typer names the shell moot runs in (shellingham reads the parent process): here, bash. A lone command in
    # `bash -c` replaces bash (exec), leaving whatever ran pytest as moot's parent; a second one keeps bash there.
    command = " ".join([*MOOT, "--show-completion"]) + "; exit $?"
    shown = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "_MOOT_COMPLETE" in shown.stdout, shown.stderr
    assert "--install-completion" in run_moot("--help", cwd=tmp_path).stdout


def test_ls_lists_the_records_of_each_protocol_whole_when_piped(tmp_path: Path, agreeing_script: Path) -> None:
    run_moot("run", "critique", "--topic", "T", "--agents", f"script:{agreeing_script}", cwd=tmp_path)
    (tmp_path / "doc.md").write_text("# Use SQLite\n\n## Why\nIt is one file.\n", encoding="utf-8")
    run_moot("run", "duel", "doc.md", "--agents", "cmd:false", cwd=tmp_path)
    listed = run_moot("ls", str(tmp_path), cwd=tmp_path)
    header, *rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert listed.returncode == 0 and len(rows) == 2
    assert header == ["record", "protocol", "topic", "state", "turns", "tokens"]  # a script can read the columns
    assert rows[0] == [str(tmp_path / ".dialogues" / "t.md"), "critique", "T", "DONE", "4", "0"]
    assert rows[1][1:4] == ["duel", "Use SQLite", "TIMEOUT"] and rows[1][0].startswith(str(tmp_path / "debates"))
    assert run_moot("ls", str(tmp_path / "nope"), cwd=tmp_path).returncode == 2


def test_resume_progress_counts_the_tokens_already_spent(tmp_path: Path) -> None:
    from moot.cli.progress import Progress
    from moot.engine.loop import usage_path
    from moot.protocols.critique.driver import CritiqueDriver

    script = write_script(tmp_path / "s.jsonl", [reply("A."), "nope", "nope", "nope"])
    done = critique_t(tmp_path, "--max-rounds", "1", "--agents", f"script:{script}")
    assert done.returncode == 1
    log = usage_path(tmp_path / ".dialogues/t.md")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    rows[0]["prompt_tokens"], rows[0]["completion_tokens"] = 120, 30  # a real model's usage
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    progress = Progress(CritiqueDriver.resume(tmp_path / ".dialogues/t.md"), follow=False, quiet=True)
    assert progress.tokens == 150


def _person_and_critic(tmp_path: Path, **env: str) -> pexpect.spawn:
    """A critique of "Adopt a monorepo": the proposer is a person at the terminal, the critic asks once and agrees."""
    critic = write_script(
        tmp_path / "critic.jsonl",
        [
            reply("CI time grows with every service; how do you keep builds fast?"),
            reply("Agreed.", "DONE", "One repo."),
        ],
    )
    args = ["run", "critique", "--topic", "Adopt a monorepo", "--agent", "proposer=human"]
    return in_a_terminal([*args, "--agent", f"critic=script:{critic}"], tmp_path, **env)


def test_a_person_takes_part_through_a_terminal_to_a_valid_record(tmp_path: Path) -> None:
    """The proposer is a person typing in a real pseudo-terminal; the critic is a script."""
    child = _person_and_critic(tmp_path)
    child.expect("turn for proposer")
    child.expect("› message")
    child.sendline("Move every service into **one** repository.")
    child.sendline("One CI pipeline for all of them.")
    child.sendline(".")
    child.expect("› status: AWAITING \\(the only choice now\\)")  # turn 1: AWAITING is all the seed allows
    # Turn 3: the critic's question is shown before the person writes.
    child.expect("turn for proposer")
    child.expect("› message")
    assert "how do you keep builds fast?" in child.before
    child.sendline("Build only what changed, from the dependency graph.")
    child.sendline(".")
    child.expect("choose 1-3")
    assert "2) PROPOSING_DONE" in child.before
    child.sendline("2")
    child.expect(pexpect.EOF)
    child.close()
    transcript = child.before
    assert "$defs" not in transcript and "JSON Schema" not in transcript and '"properties"' not in transcript
    assert child.exitstatus == 0, transcript
    record = (tmp_path / ".dialogues" / "adopt-a-monorepo.md").read_text()
    assert "Move every service into **one** repository.\nOne CI pipeline for all of them." in record
    last_turn, mark = record.rstrip().rsplit("\n\n", 1)  # the last turn, then the chain's head after it
    assert "Status: PROPOSING_DONE" in record and last_turn.endswith("Status: DONE")
    assert mark.startswith("<!-- moot-chain turns=")
    assert check_path(tmp_path / ".dialogues" / "adopt-a-monorepo.md").exit_code == 0


def test_ctrl_c_while_a_person_types_ends_at_once(tmp_path: Path) -> None:
    child = in_a_terminal(["run", "critique", "--topic", "T", "--agents", "human"], tmp_path)
    child.expect("› message")
    child.send("half a sentence")
    started = time.monotonic()
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert time.monotonic() - started < 5 and child.exitstatus == 130
    assert "moot resume .dialogues/t.md" in child.before


def test_rules_piped_prints_every_id_whole(tmp_path: Path) -> None:
    from moot.cli.rules import rule_books

    piped = run_moot("rules", cwd=tmp_path)
    ids = [line.split("\t")[1] for line in piped.stdout.splitlines()]
    assert ids == [rule.id for _, book in rule_books(None) for rule in book]


def test_batch_shows_a_progress_bar_on_a_terminal_and_keeps_json_lines(tmp_path: Path, agreeing_script: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    lines = [
        {"protocol": "critique", "topic": f"Topic {n}", "agents": f"script:{agreeing_script}", "root": f"r{n}"}
        for n in range(3)
    ]
    batch.write_text("".join(json.dumps(line) + "\n" for line in lines))
    child = in_a_terminal(["run", "--batch", str(batch), "--concurrency", "2"], tmp_path)
    child.expect(pexpect.EOF)
    assert "debates" in child.before and "3/3" in child.before
    (tmp_path / "again").mkdir()
    piped = run_moot("run", "--batch", str(batch), cwd=tmp_path / "again")
    assert len([json.loads(line) for line in piped.stdout.splitlines()]) == 3 and "3/3" not in piped.stderr


def test_the_anthropic_probe_names_an_unreachable_server() -> None:
    import asyncio

    from moot.agents.anthropic_agent import AnthropicAgent
    from moot.errors import AgentUnavailable

    agent = AnthropicAgent("claude-x", api_key="k", base_url="http://127.0.0.1:9")
    with pytest.raises(AgentUnavailable, match=r"cannot reach http://127\.0\.0\.1:9"):
        asyncio.run(agent.probe())


def test_debug_before_run_prints_the_attempts_too(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.jsonl", ["not a turn", reply("A."), reply("B.")])
    done = run_moot(
        "--debug", "run", "critique", "--topic", "T", "--max-rounds", "1", "--agents", f"script:{script}", cwd=tmp_path
    )
    assert done.returncode == 1 and "| not a turn" in done.stderr and "REPLY_FORMAT" in done.stderr


FORM_EDITOR = """\
import json, os, pathlib, sys
path, state = pathlib.Path(sys.argv[1]), pathlib.Path(os.environ["FORM_STATE"])
calls = json.loads(state.read_text())
state.write_text(json.dumps(calls[1:]))
lines = path.read_text().splitlines()
for heading, answer in calls[0].items():
    at = lines.index(heading) + 1  # the hint under the heading
    lines[at + 1 : at + 1] = answer.splitlines()
path.write_text("\\n".join(lines) + "\\n")
"""


def test_a_person_writes_whole_turns_as_one_form_in_their_editor(tmp_path: Path) -> None:
    """'form' at a question opens the whole turn in $EDITOR (here a real editor process that types the answers)."""
    editor = tmp_path / "editor.py"
    editor.write_text(FORM_EDITOR)
    state = tmp_path / "answers.json"
    state.write_text(
        json.dumps(
            [
                {"## message": "Move every service into one repository.\n\n- one CI pipeline\n- one version"},
                {"## message": "Build only what changed, from the dependency graph.", "## status": "PROPOSING_DONE"},
            ]
        )
    )
    child = _person_and_critic(tmp_path, EDITOR=f"python3 {editor}", FORM_STATE=str(state))
    for _ in range(2):
        child.expect("type 'form' alone")
        child.expect("› message")
        child.sendline("form")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    record = (tmp_path / ".dialogues" / "adopt-a-monorepo.md").read_text()
    assert "Move every service into one repository.\n\n- one CI pipeline\n- one version" in record
    assert "Build only what changed" in record and "Status: PROPOSING_DONE" in record
    hints = [line for line in record.splitlines() if "<!--" in line and not line.startswith("<!-- moot-chain ")]
    assert hints == []  # the form's hints stay out of the record (moot's chain marks are not hints)
    assert check_path(tmp_path / ".dialogues" / "adopt-a-monorepo.md").exit_code == 0


def test_a_turn_past_the_turn_timeout_halts_resumably_and_a_longer_timeout_finishes_it(tmp_path: Path) -> None:
    (tmp_path / "design.md").write_text("# Cache\n\n## Goals\nFast.\n", encoding="utf-8")
    slow = run_moot("run", "duel", "design.md", "--agents", "cmd:sleep 5", "--turn-timeout", "1", cwd=tmp_path)
    assert slow.returncode == 1
    assert "turn timeout of 1 s" in slow.stdout and "--turn-timeout" in slow.stdout and "moot resume" in slow.stdout
    assert "invalid turn" not in slow.stderr  # the agent did not answer; nothing it said was refused
    # The progress line says what happened in words, not as an exception's class name.
    progress = " ".join(slow.stderr.split())
    assert "could not answer (advocate's turn took longer than the turn timeout of 1 s)" in progress
    assert "TimeoutError" not in progress
    record = next((tmp_path / "debates").glob("*.md"))
    assert "## Conclusion" not in record.read_text(encoding="utf-8")  # moot's own limit is not the duel's TIMEOUT

    agent = f"cmd:{sys.executable} {Path(__file__).parents[1] / 'reliability' / 'protocol_agent.py'}"
    resumed = run_moot("resume", str(record), "--agents", agent, "--turn-timeout", "60", "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["outcome"] == "ACCEPTED_CONSENSUS"


def test_in_a_pipe_every_line_stays_whole_so_a_path_can_be_copied_from_a_log(tmp_path: Path) -> None:
    """Not on a terminal, nothing is folded at 80 columns: the record's path and the progress line's reason each
    stay on one line of the log."""
    script = write_script(tmp_path / "s.jsonl", [{"role": "proposer", "reply": reply("One repository for all.")}])
    topic = "Should we adopt a monorepo for all of our services and libraries this quarter"
    done = run_moot("run", "critique", "--topic", topic, "--agents", f"script:{script}", cwd=tmp_path)
    slug = "should-we-adopt-a-monorepo-for-all-of-our-services-and-libraries-this-quarter"
    assert f"  record: .dialogues/{slug}.md" in done.stdout.splitlines(), done.stdout
    failed = [line for line in done.stderr.splitlines() if "critic could not answer" in line]
    assert len(failed) == 1 and failed[0].endswith("end the run sooner) · 0 tokens · 0 s"), done.stderr

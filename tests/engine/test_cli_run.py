"""`moot run`, `moot resume`, `moot show`, `moot agents` and `--batch`, as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_helpers import MOOT, reply, run_moot, write_script

from moot.detect import check_path


def test_run_json_reports_outcome_record_turns_and_tokens(tmp_path: Path, agreeing_script: Path) -> None:
    done = run_moot(
        "run",
        "critique",
        "--topic",
        "Adopt a monorepo",
        "--agents",
        f"script:{agreeing_script}",
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["protocol"] == "critique" and report["outcome"] == "DONE" and report["consensus"] is True
    assert report["turns"] == 4 and report["artifact"] == ".dialogues/adopt-a-monorepo.md"
    assert {"prompt_tokens", "completion_tokens"} <= report.keys()
    assert report["conformity"] == {}  # a critique loop records no positions
    assert check_path(tmp_path / report["artifact"]).exit_code == 0


def test_run_without_consensus_exits_1_with_a_readable_summary(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.jsonl", [reply("A."), reply("B.")])
    done = run_moot(
        "run", "critique", "--topic", "T", "--max-rounds", "1", "--agents", f"script:{script}", cwd=tmp_path
    )
    assert done.returncode == 1
    assert "MAX_ROUNDS" in done.stdout and ".dialogues/t.md" in done.stdout
    assert "Status:" not in done.stdout  # the dialogue stays out of the terminal without --follow


def test_follow_prints_the_turns(tmp_path: Path, agreeing_script: Path) -> None:
    done = run_moot(
        "run", "critique", "--topic", "T", "--follow", "--agents", f"script:{agreeing_script}", cwd=tmp_path
    )
    assert "## [critic] Round 2" in done.stdout and "Status: DONE" in done.stdout
    assert "moot-chain" not in done.stdout  # moot's tamper-evidence lines are for moot check, not for the reader


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--agents", "nonsense:x"], "nonsense"),
        (["--agent", "critic"], "ROLE=SPEC"),
        (["--agent", "judge=local"], "judge"),
        (["--context", "missing.txt"], "missing.txt"),
        (["--template", "planning", "--roles", "a,b"], "either --template or --roles"),
        (["--roles", "solo"], "exactly two names"),
        # An unreachable server is found by the probe before the debate starts.
        (["--agents", "openai:gpt-4o-mini@http://127.0.0.1:9/v1"], "cannot reach http://127.0.0.1:9/v1"),
    ],
)
def test_user_errors_are_one_sentence_without_a_traceback(tmp_path: Path, args: list[str], expected: str) -> None:
    done = run_moot("run", "critique", "--topic", "T", "--json", *args, cwd=tmp_path, timeout=120)
    assert "Traceback" not in done.stderr
    assert done.returncode == 2 and expected in done.stderr and done.stderr.startswith("moot: ")


def test_bad_config_is_named(tmp_path: Path, agreeing_script: Path) -> None:
    (tmp_path / "moot.toml").write_text("repairs = 'many'\n")
    done = run_moot("run", "critique", "--topic", "T", "--agents", f"script:{agreeing_script}", cwd=tmp_path)
    assert done.returncode == 2 and "moot.toml" in done.stderr and "repairs" in done.stderr


def test_moot_toml_chooses_the_agents(tmp_path: Path, agreeing_script: Path) -> None:
    (tmp_path / "moot.toml").write_text(f'agents = "script:{agreeing_script}"\n')
    done = run_moot("run", "critique", "--topic", "T", "--json", cwd=tmp_path)
    assert json.loads(done.stdout)["outcome"] == "DONE"


def test_show_renders_any_record(tmp_path: Path, agreeing_script: Path) -> None:
    run_moot("run", "critique", "--topic", "T", "--agents", f"script:{agreeing_script}", cwd=tmp_path)
    shown = run_moot("show", ".dialogues/t.md", cwd=tmp_path)
    assert shown.returncode == 0
    assert "Build only what changed" in shown.stdout and "status DONE" in shown.stdout
    lines = [line.strip() for line in shown.stdout.splitlines()]
    assert any(line.startswith("Template: planning") for line in lines)  # header fields stay one per line


def test_agents_lists_backends_and_readiness(tmp_path: Path) -> None:
    listed = json.loads(run_moot("agents", "--json", cwd=tmp_path).stdout)
    by_name = {row["name"]: row for row in listed}
    assert {"local", "openai", "anthropic", "cmd", "human", "script"} <= by_name.keys()
    assert by_name["local"]["ready"] is True  # the weights ship with the [local] extra


def test_agents_prints_each_install_command_whole_at_80_columns(tmp_path: Path) -> None:
    # An 80-column terminal's table cut '@zed-industries/claude-code-acp' to '@zed-industries/claud…'.
    empty = tmp_path / "bin"  # no ACP agent on PATH: each one's install command is recommended
    empty.mkdir()
    env = {**os.environ, "COLUMNS": "80", "PATH": str(empty)}
    done = subprocess.run([*MOOT, "agents"], cwd=tmp_path, capture_output=True, text=True, env=env, check=True)
    lines = [line.strip() for line in done.stdout.splitlines()]
    for command in ("npm install -g @zed-industries/claude-code-acp", "npm install -g @google/gemini-cli"):
        assert any(line.startswith(command) for line in lines), done.stdout
    listed = json.loads(subprocess.run([*MOOT, "agents", "--json"], capture_output=True, text=True, env=env).stdout)
    assert {row["name"]: row["install"] for row in listed}[
        "acp codex-acp"
    ] == "npm install -g @zed-industries/codex-acp"


def test_batch_runs_debates_concurrently_and_reports_each(tmp_path: Path, agreeing_script: Path) -> None:
    lines = [
        {
            "protocol": "critique",
            "topic": f"Topic {n}",
            "agents": f"script:{agreeing_script}",
            "root": str(tmp_path / f"r{n}"),
        }
        for n in range(3)
    ]
    lines.append({"protocol": "nope"})
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    done = run_moot("run", "--batch", str(batch), "--concurrency", "2", cwd=tmp_path)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(row["line"] for row in rows) == [1, 2, 3, 4, 5]
    finished = [row for row in rows if "outcome" in row]
    assert len(finished) == 3 and all(row["outcome"] == "DONE" for row in finished)
    assert {row["line"] for row in rows if "error" in row} == {4, 5}
    assert done.returncode == 1  # not every line reached consensus


def test_batch_workers_deal_the_debates_to_that_many_processes_and_report_every_line(tmp_path: Path) -> None:
    agent = Path(__file__).parents[1] / "reliability" / "protocol_agent.py"
    callers = tmp_path / "callers.txt"
    wrapper = tmp_path / "agent.py"  # the scripted participant, noting which moot process asked it
    wrapper.write_text(
        f"import os, runpy\nopen({str(callers)!r}, 'a').write(f'{{os.getppid()}}\\n')\n"
        f"runpy.run_path({str(agent)!r}, run_name='__main__')\n"
    )
    spec = f"cmd:{sys.executable} {wrapper}"
    lines = [
        {
            "protocol": "critique",
            "topic": f"Topic {n}",
            "max_rounds": 2,
            "agents": spec,
            "root": str(tmp_path / f"r{n}"),
        }
        for n in range(6)
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    done = run_moot("run", "--batch", str(batch), "--workers", "2", "--concurrency", "2", cwd=tmp_path)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(row["line"] for row in rows) == list(range(1, 8))
    finished = [row for row in rows if "outcome" in row]
    assert len(finished) == 6 and all(check_path(Path(row["artifact"])).exit_code == 0 for row in finished)
    assert len(set(callers.read_text().split())) == 2  # two worker processes asked the agents
    assert "Traceback" not in done.stderr


def test_workers_without_a_batch_is_refused(tmp_path: Path) -> None:
    done = run_moot("run", "--workers", "2", "critique", "--topic", "T", cwd=tmp_path)
    assert done.returncode == 2 and "give it with --batch" in done.stderr


def test_a_batch_duel_records_each_participant_s_agent_as_its_model(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.jsonl", ["not a turn"] * 8)
    (tmp_path / "design.md").write_text("# Caching\n\nCache API responses for 60 seconds.\n")
    line = {"protocol": "duel", "source": "design.md", "agents": f"script:{script}", "root": str(tmp_path)}
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps(line) + "\n")
    done = run_moot("run", "--batch", str(batch), cwd=tmp_path)
    record = Path(json.loads(done.stdout)["artifact"])
    table = [
        row for row in record.read_text().splitlines() if row.startswith("| advocate") or row.startswith("| skeptic")
    ]
    # The participants table names the agent each role ran on, as `moot run duel` does, not "unknown-model".
    assert len(table) == 2 and all(f"script:{script}" in row for row in table), table


def test_batch_lines_with_values_of_the_wrong_type_are_refused_one_by_one(
    tmp_path: Path, agreeing_script: Path
) -> None:
    good = {"protocol": "critique", "topic": "Cache", "agents": f"script:{agreeing_script}", "root": str(tmp_path)}
    lines = [
        {**good, "agents": 5},
        {**good, "max_rounds": "many"},
        {"protocol": "roundtable", "speakers": ["a", "b"], "topic": "t", "language": "fr"},
        {"protocol": "critique", "agents": good["agents"]},
        good,
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    done = run_moot("run", "--batch", str(batch), cwd=tmp_path)
    errors = {row["line"]: row["error"] for row in map(json.loads, done.stdout.splitlines()) if "error" in row}
    assert errors == {
        1: "agents: Input should be a valid string; fix that key of the debate.",
        2: "the critique option max_rounds: Input should be a valid integer, unable to parse string as an integer; "
        "fix that key of the debate.",
        3: "the roundtable option language: Input should be 'en' or 'zh'; fix that key of the debate.",
        4: "the critique option topic: Field required; add it to the debate.",
    }
    assert "Traceback" not in done.stderr and done.returncode == 1
    assert (tmp_path / ".dialogues" / "cache.md").is_file()  # the good line still ran


SLOW_AGENT = """
import json, sys, time
prompt = sys.stdin.read()
time.sleep(0.15)
print(json.dumps({"message": "Point %d." % (len(prompt) % 997), "status": "AWAITING", "summary": ""}))
"""


def test_sigkill_then_resume_finishes_with_no_lost_or_duplicated_turn(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(SLOW_AGENT)
    spec = f"cmd:{sys.executable} {agent}"
    record = tmp_path / ".dialogues" / "t.md"
    for delay in (0.1, 0.45, 0.8):
        command = (
            ["resume", str(record)] if record.exists() else ["run", "critique", "--topic", "T", "--max-rounds", "5"]
        )
        proc = subprocess.Popen(
            [*MOOT, *command, "--agents", spec, "--json"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Kill at a moment inside the debate (after the process is up and has written), not at start-up.
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert check_path(record).exit_code == 0  # valid after every kill
    done = run_moot("resume", str(record), "--agents", spec, "--json", cwd=tmp_path)
    report = json.loads(done.stdout)
    assert report["outcome"] == "MAX_ROUNDS" and report["turns"] == 10
    text = record.read_text()
    headers = [line for line in text.splitlines() if line.startswith("## [")]
    assert len(headers) == 10 and len(set(headers)) == 10
    assert check_path(record).exit_code == 0


@pytest.mark.slow
def test_a_real_debate_on_the_embedded_model(tmp_path: Path) -> None:
    done = run_moot(
        "run", "critique", "--topic", "Adopt a monorepo", "--max-rounds", "1", "--json", cwd=tmp_path, timeout=600
    )
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] is not None and report["completion_tokens"] > 0
    assert check_path(tmp_path / report["artifact"]).exit_code == 0


def test_rules_lists_every_rule_id_that_check_reports(tmp_path: Path) -> None:
    rows = json.loads(run_moot("rules", "--json", cwd=tmp_path).stdout)
    ids = {row["id"] for row in rows}
    assert {"CRITIQUE_ALTERNATION", "DUEL_NOVEL_REPEAT", "DUEL_TURN_STRUCTURE", "AGORA_SELF_APPROVAL"} <= ids
    assert {"ROUNDTABLE_UNCOMMITTED_SPEECH", "PRIOR_TURN_MODIFIED", "REPLY_FORMAT"} <= ids
    only_duel = json.loads(run_moot("rules", "duel", "--json", cwd=tmp_path).stdout)
    assert {row["protocol"] for row in only_duel} == {"duel", "any record", "moot run", "agent tools", "cited evidence"}
    assert "CITATION_UNVERIFIED" in ids
    unknown = run_moot("rules", "chess", cwd=tmp_path)
    assert unknown.returncode == 2 and "chess" in unknown.stderr


def test_output_piped_into_a_reader_that_stopped_is_no_internal_error(tmp_path: Path) -> None:
    # `moot duel status … | head -0`: the reader has closed the pipe before moot writes; moot stops without a
    # complaint (an agent tool prints its JSON itself, the other commands through typer).
    command = [*MOOT, "duel", "status", "--duel-id", "0" * 32, "--root", str(tmp_path)]
    with subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as moot:
        assert moot.stdout is not None and moot.stderr is not None
        moot.stdout.close()
        stderr = moot.stderr.read().decode()
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    assert moot.returncode == 1


@pytest.mark.slow
def test_run_roundtable_on_the_embedded_model_closes_with_minutes(tmp_path: Path) -> None:
    done = run_moot(
        "run", "roundtable", "--topic", "缓存设计", "--speakers", "架构师,审查员", "--max-rounds", "1", "--json",
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["protocol"] == "roundtable" and report["outcome"] == "closed"
    meeting = tmp_path / report["artifact"]
    assert (meeting / "MINUTES.md").is_file() and (meeting / "001_架构师.md").is_file()
    assert check_path(meeting).exit_code == 0


@pytest.mark.slow
def test_run_agora_on_the_embedded_model_ends_in_a_terminal_outcome(tmp_path: Path) -> None:
    done = run_moot(
        "run", "agora", "--topic", "Tabs or spaces", "--max-turns", "4", "--json", cwd=tmp_path, timeout=600
    )
    report = json.loads(done.stdout)
    assert report["protocol"] == "agora" and report["outcome"] in {"CONSENSUS", "TIMEOUT", "RUN_HALTED"}
    assert check_path(tmp_path / report["artifact"]).exit_code == 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["duel", "missing.md"], "missing.md"),
        (["agora", "--topic", "X", "--position", "bad"], "ROLE=TEXT"),
        (["roundtable"], "--topic or --agenda"),
    ],
)
def test_each_protocol_names_bad_input_in_one_sentence(tmp_path: Path, args: list[str], expected: str) -> None:
    done = run_moot("run", *args, cwd=tmp_path)
    assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["roundtable", "--topic", "Cache design", "--speakers", "architect,reviewer", "--max-rounds", "1"],
        ["agora", "--topic", "Tabs or spaces", "--max-turns", "4"],
    ],
)
def test_sigkill_and_resume_on_the_embedded_model(tmp_path: Path, command: list[str]) -> None:
    proc = subprocess.Popen(
        [*MOOT, "run", *command], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    folder = tmp_path / (".roundtable" if command[0] == "roundtable" else ".agora")

    def records() -> list[Path]:  # the meeting directory, or the Agora record file
        return [p for p in folder.glob("*") if (p.is_dir() if command[0] == "roundtable" else p.suffix == ".md")]

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not records():
        time.sleep(0.05)
    time.sleep(2.5)  # inside the debate: the model is writing a turn
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (record,) = records()
    killed = check_path(record)
    assert killed.exit_code == 0 or killed.repairable, killed.violations
    # Still open: a run that had ended before its kill would leave the resume nothing to test.
    assert killed.summary is not None and killed.summary.outcome is None, killed.summary
    done = run_moot("resume", str(record), "--json", cwd=tmp_path, timeout=600)
    report = json.loads(done.stdout)
    assert report["outcome"] is not None, done.stderr
    assert check_path(record).exit_code == 0

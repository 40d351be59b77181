"""A protocol whose positions are numbers, written as a third party writes one (tests/registry/plugin/moot_estimate)
and registered only through its entry point in a fresh process, gets every surface a built-in gets: the conformance
kit, `moot eval`, the conformity metrics, `ls`, `rules`, `log`, `--batch`, `--dry-run`, `--force`, `resume`,
`check`, receipts, the viewer's panel and plot, and agent tools on the command line and over MCP."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from test_registry_plugin import PLUGIN_DIR, dist_info, fresh, moot, python

ESTIMATOR = Path(__file__).with_name("estimator.py")
AGENT = f"cmd:{sys.executable} {ESTIMATOR}"
FAILING = f"cmd:{sys.executable} -c 'raise SystemExit(3)'"
NAMES = ["--estimator", "ada", "--estimator", "bo", "--estimator", "cy"]
QUESTION = "What is the result of 3+4*5?"
RECORD = ".estimates/what-is-the-result-of-3-4-5.md"


@pytest.fixture
def estimate_env(tmp_path: Path) -> dict[str, str]:
    """The package and its entry point (a dist-info on the path), and the scripted estimator."""
    dist_info(tmp_path / "site", "moot-estimate", "0.1", "moot_estimate:PLUGIN", protocol="estimate")
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(PLUGIN_DIR), str(ESTIMATOR.parent)])}


def test_the_estimate_package_passes_the_conformance_kit(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    code = (
        "import json, sys; from pathlib import Path; from moot.testing import Scenario, conformance\n"
        "from estimator import reply\n"
        "spec = {'protocol': 'estimate', 'question': 'How many moons has Mars?', 'estimators': ['ada', 'bo', 'cy']}\n"
        "scenario = Scenario('estimate', spec, lambda r: reply(r.role, r.prompt), 'ESTIMATED', turns=6)\n"
        "print(json.dumps(conformance(scenario, Path(sys.argv[1]))))\n"
    )
    done = python("-c", code, str(tmp_path / "kit"), cwd=tmp_path, env=estimate_env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []  # tamper evidence included: its record carries the chain's marks


def test_moot_eval_scores_the_estimate_of_a_numeric_task(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    panel = [arg for name in ("p1", "p2", "p3") for arg in ("--agent", f"{name}={AGENT}")]
    tasks = ["--tasks", "arithmetic", "--difficulty", "2", "--limit", "3", "--seed", "3"]
    done = moot("eval", *tasks, "--strategy", "protocol:estimate", *panel, "--json", cwd=tmp_path, env=estimate_env)
    assert done.returncode == 0, done.stderr
    row = {row["name"]: row for row in json.loads(done.stdout)["strategies"]}["protocol:estimate"]
    assert row["accuracy"] == 1.0  # the last round's median, exact
    assert [r["answers"] for r in row["rounds"]] == [9, 9]  # three estimators, two rounds, three tasks
    assert row["flips"]["incorrect_to_correct"] == 6 and row["flips"]["correct_to_incorrect"] == 0  # p1, p3 corrected
    assert row["conformity"]["changes"] == 6 and row["conformity"]["unanimous_at_end"] == 3


def test_its_numeric_estimates_are_the_positions_of_the_conformity_metrics(
    tmp_path: Path, estimate_env: dict[str, str]
) -> None:
    names = ["--estimator", "ada", "--estimator", "bo", "--estimator", "cy"]
    question = ["--question", "What is the result of 3+4*5?"]
    done = moot("run", "estimate", *question, *names, "--agents", AGENT, "--json", cwd=tmp_path, env=estimate_env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reason"] == "the last round's median is 23"
    (record,) = (tmp_path / ".estimates").glob("*.md")
    shown = moot("show", str(record), "--json", cwd=tmp_path, env=estimate_env)
    assert shown.returncode == 0, shown.stderr
    estimate = json.loads(shown.stdout)["conformity"]["estimate"]
    assert estimate["participants"]["ada"] == {"positions": [21, 23], "changes": 1}  # numbers stay numbers
    assert estimate["participants"]["cy"] == {"positions": [26, 23], "changes": 1}
    assert [(c["from"], c["to"]) for c in estimate["changes"]] == [(21, 23), (26, 23)]
    assert (estimate["initial_distinct"], estimate["final_distinct"], estimate["collapsed"]) == (3, 1, True)


def test_ls_rules_log_and_force_show_its_record_as_a_built_ins(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    run = ["run", "estimate", "--question", QUESTION, *NAMES, "--agents", AGENT]
    assert moot(*run, cwd=tmp_path, env=estimate_env).returncode == 0
    listed = moot("ls", cwd=tmp_path, env=estimate_env)
    assert listed.returncode == 0, listed.stderr
    assert f'{RECORD}\testimate\t"{QUESTION}"\tESTIMATED\t6\t0' in listed.stdout.splitlines()

    protocols = json.loads(moot("protocols", "--json", cwd=tmp_path, env=estimate_env).stdout)["protocols"]
    assert {row["name"]: row for row in protocols}["estimate"]["capabilities"] == [
        "analysis",
        "sealed",
        "tools",
        "view",
    ]
    rules = json.loads(moot("rules", "estimate", "--json", cwd=tmp_path, env=estimate_env).stdout)
    ids = {row["id"] for row in rules if row["protocol"] == "estimate"}
    assert ids == {"ESTIMATE_ORDER", "ESTIMATE_NUMBER", "ESTIMATE_AFTER_END", "ESTIMATE_LINE"}

    log = moot("log", RECORD, cwd=tmp_path, env=estimate_env)
    assert log.returncode == 0, log.stderr
    attempts = [line for line in log.stdout.splitlines() if line.startswith("turn ")]
    # a sealed round's estimators are asked at once: the log holds their attempts as they ended
    assert len(attempts) == 6 and any(line.startswith("turn 1 · attempt 1 · ada (cmd:") for line in attempts)
    assert '"cy estimates 23: working it through, products before sums."' in log.stdout

    again = moot(*run, cwd=tmp_path, env=estimate_env)
    assert again.returncode == 2 and "To start it afresh, pass --force." in again.stderr
    forced = moot(*run, "--rounds", "1", "--force", "--json", cwd=tmp_path, env=estimate_env)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["turns"] == 3  # the new record, of one round, replaced the old


def test_a_batch_line_runs_it(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    line = {"protocol": "estimate", "question": "What is the result of 2*6?", "estimators": ["ada", "cy"]}
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({**line, "rounds": 1, "agents": AGENT}) + "\n", encoding="utf-8")
    done = moot("run", "--batch", str(batch), cwd=tmp_path, env=estimate_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["line"], result["outcome"], result["turns"]) == (1, "ESTIMATED", 2)
    assert result["reason"] == "the last round's median is 12.5"  # 2*6 missed by -2 (ada) and +3 (cy)
    assert (tmp_path / result["artifact"]).is_file()


def test_a_dry_run_prices_its_sealed_rounds_and_writes_nothing(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    run = ["run", "estimate", "--question", QUESTION, *NAMES, "--agents", AGENT, "--dry-run"]
    done = moot(*run, "--json", cwd=tmp_path, env=estimate_env)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["dry_run"] is True and plan["total"]["calls"] == 6
    roles = {row["role"]: row for row in plan["roles"]}
    assert [roles[name]["calls"] for name in ("ada", "bo", "cy")] == [2, 2, 2]
    # a round is sealed: cy's prompt of round 1 carries no estimate, and each round 2 prompt the same three
    assert roles["ada"]["prompt_tokens"] == roles["bo"]["prompt_tokens"] == roles["cy"]["prompt_tokens"]
    assert os.listdir(tmp_path) == ["site"]  # the entry point's dist-info, nothing else
    shown = moot(*run, cwd=tmp_path, env=estimate_env)
    assert "dry run (estimate): nothing was asked or written." in shown.stdout and "total: 6 call(s)" in shown.stdout


def test_resume_continues_a_halted_one_and_its_receipt_verifies_until_an_edit(
    tmp_path: Path, estimate_env: dict[str, str]
) -> None:
    agents = ["--agent", f"ada={AGENT}", "--agent", f"bo={FAILING}", "--agent", f"cy={AGENT}"]
    halted = moot("run", "estimate", "--question", QUESTION, *NAMES, *agents, cwd=tmp_path, env=estimate_env)
    # a round is sealed: ada's and cy's estimates of round 1 are written, bo's agent failed
    assert halted.returncode == 1 and "RUN_HALTED" in halted.stdout and "`moot resume` asks bo again" in halted.stdout
    sidecar = tmp_path / ".estimates" / f".{Path(RECORD).name}.sealed.jsonl"  # each answer committed by its digest
    committed = {row["role"]: row for row in map(json.loads, sidecar.read_text(encoding="utf-8").splitlines())}
    assert committed["ada"]["digest"] and committed["cy"]["digest"] and "failure" in committed["bo"]
    resumed = moot("resume", RECORD, "--agents", AGENT, "--json", cwd=tmp_path, env=estimate_env)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert (result["outcome"], result["turns"], result["turns_this_run"]) == ("ESTIMATED", 6, 4)  # bo's, round 2

    keys = {**estimate_env, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    issued = moot("receipt", RECORD, cwd=tmp_path, env=keys)
    assert issued.returncode == 0, issued.stderr
    receipt = f"{RECORD}.receipt.json"
    verified = moot("verify", receipt, cwd=tmp_path, env=keys)
    assert verified.returncode == 0, verified.stderr
    assert "outcome: ESTIMATED (the last round's median is 23)" in verified.stdout

    record = tmp_path / RECORD
    text = record.read_text(encoding="utf-8")
    record.write_text(text.replace("(round 2): 23 — bo", "(round 2): 24 — bo"), encoding="utf-8")
    assert moot("verify", receipt, cwd=tmp_path, env=keys).returncode == 1
    checked = moot("check", RECORD, "--json", cwd=tmp_path, env=estimate_env)
    assert checked.returncode == 1
    (edited,) = json.loads(checked.stdout)["violations"]
    line = next(n for n, row in enumerate(record.read_text().splitlines(), 1) if "(round 2): 24 — bo" in row)
    assert (edited["rule"], edited["line"], edited["turn"]) == ("PRIOR_TURN_MODIFIED", line, 5)


@contextmanager
def serving(root: Path, env: dict[str, str]) -> Iterator[str]:
    """``moot serve`` as a real process of the fresh environment; yields its URL (the token is test-token)."""
    command = [sys.executable, "-m", "moot", "serve", "--root", str(root), "--port", "0"]
    environment = fresh({**env, "MOOT_SERVE_TOKEN": "test-token"})
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    try:
        assert process.stdout is not None
        said = process.stdout.readline()
        assert "http://" in said, said
        yield said[said.index("http://") :].split("?")[0]
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_viewer_shows_its_panel_and_plot(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    question = ["--question", "What is the result of 6*7?"]
    assert moot("run", "estimate", *question, *NAMES, "--agents", AGENT, cwd=tmp_path, env=estimate_env).returncode == 0
    with serving(tmp_path, estimate_env) as url:
        request = urllib.request.Request(url + "r/.estimates/what-is-the-result-of-6-7.md")
        request.add_header("Cookie", "moot_token=test-token")
        with urllib.request.urlopen(request, timeout=30) as response:
            page = response.read().decode("utf-8")
    assert "<h2>Estimates by round" in page and 'aria-label="each estimator&#39;s estimate by round"' in page
    assert page.count("<polyline") == 3  # one line per estimator
    assert "round 1 · cy · 45: cy estimates 45" in page  # each point's tooltip: who, what and why
    assert "<h2>Median of each round" in page and '<th>round 1</th><td class="prose">42</td>' in page


def test_its_agent_tools_let_an_outside_agent_take_a_seat(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    agents = ["--agent", f"ada={AGENT}", "--agent", f"bo={FAILING}", "--agent", f"cy={AGENT}"]
    moot("run", "estimate", "--question", QUESTION, *NAMES, *agents, cwd=tmp_path, env=estimate_env)  # bo fails
    status = moot("estimate", "status", "--record", RECORD, cwd=tmp_path, env=estimate_env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["next_speaker"] == "bo" and json.loads(status.stdout)["seen"] == []  # sealed

    def submit(who: str, value: str, **env: str) -> subprocess.CompletedProcess[str]:
        given = ["--record", RECORD, "--estimator", who, "--estimate", value, "--reason", "products before sums"]
        return moot("estimate", "submit", *given, cwd=tmp_path, env={**estimate_env, **env})

    refused = submit("cy", "23")  # cy's estimate of round 1 is in
    assert (
        refused.returncode == 1
        and refused.stderr.strip() == "moot: error ESTIMATE_ORDER: round 1 waits for bo's estimate."
    )
    assert not [p for p in (tmp_path / ".moot" / "seats").rglob("*") if p.is_file()]  # a refused call holds no seat
    taken = submit("bo", "23")
    assert taken.returncode == 0, taken.stderr
    assert json.loads(taken.stdout) | {"ok": True} == json.loads(taken.stdout)
    assert json.loads(taken.stdout)["next_speaker"] == "ada"  # round 2
    assert "- bo (round 1): 23 — products before sums" in (tmp_path / RECORD).read_text(encoding="utf-8")
    assert moot("check", RECORD, cwd=tmp_path, env=estimate_env).returncode == 0  # chained as the engine chains

    # bo's seat is this OS user's now: another user (another keyring) cannot estimate as bo, unless it is given
    # the seat's secret, which the call that took the seat returned once.
    secret = json.loads(taken.stdout)["participant_secret"]
    before = (tmp_path / RECORD).read_bytes()
    another_user = {"XDG_STATE_HOME": str(tmp_path / "another-user")}
    stolen = submit("bo", "99", **another_user)
    assert stolen.returncode == 1 and [v["rule"] for v in json.loads(stolen.stdout)["rules"]] == ["TOOLS_SEAT"]
    assert stolen.stderr.startswith("moot: 'bo' in the estimate what-is-the-result-of-3-4-5.md is a seat someone else")
    assert (tmp_path / RECORD).read_bytes() == before
    handed = submit("bo", "23", **another_user, MOOT_PARTICIPANT_SECRET=secret)
    assert handed.returncode == 0, handed.stderr
    assert "participant_secret" not in json.loads(handed.stdout)  # returned once, by the call that took the seat
    assert "- bo (round 2): 23 — products before sums" in (tmp_path / RECORD).read_text(encoding="utf-8")

    # --export prints the secret of a seat the call took as the shell assignment later calls read.
    after_bo = json.loads(handed.stdout)["next_speaker"]
    given = ["--record", RECORD, "--estimator", after_bo, "--estimate", "23", "--reason", "products first"]
    exported = moot("estimate", "submit", *given, "--export", cwd=tmp_path, env=estimate_env)
    assert exported.returncode == 0, exported.stderr
    (line,) = exported.stdout.splitlines()
    variable, _, value = line.removeprefix("export ").partition("=")
    assert variable == "MOOT_PARTICIPANT_SECRET"
    again = submit(after_bo, "24", **another_user, MOOT_PARTICIPANT_SECRET=shlex.split(value)[0])
    # the secret opened the seat: what refuses is the round's order (this estimator's estimate is in)
    assert again.returncode == 1 and [v["rule"] for v in json.loads(again.stdout)["rules"]] == ["ESTIMATE_ORDER"]


async def _over_mcp(root: Path, env: dict[str, str]) -> dict[str, Any]:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "moot", "mcp", "--root", str(root), "--allow-agent", "cmd"],
        env={"PYTHONPATH": fresh(env)["PYTHONPATH"]},
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        seen: dict[str, Any] = {"tools": [tool.name for tool in (await session.list_tools()).tools]}
        start = {
            "protocol": "estimate",
            "question": QUESTION,
            "agents": AGENT,
            "options": {"estimators": ["ada", "bo"]},
        }
        started = (await session.call_tool("start_debate", start)).structured_content or {}
        debate = {"debate_id": started["debate_id"]}
        await session.call_tool("debate_status", {**debate, "wait_seconds": 60})
        seen["result"] = (await session.call_tool("debate_result", debate)).structured_content

        half = {
            "protocol": "estimate",
            "question": "What is the result of 2+2?",
            "agent": {"ada": AGENT, "bo": FAILING},
        }
        halted = await session.call_tool("start_debate", {**half, "options": {"estimators": ["ada", "bo"]}})
        await session.call_tool(
            "debate_status", {"debate_id": (halted.structured_content or {})["debate_id"], "wait_seconds": 60}
        )
        record = ".estimates/what-is-the-result-of-2-2.md"
        turn = {"record": record, "estimate": 4, "reason": "two and two"}
        seen["bo"] = (await session.call_tool("estimate_submit", {**turn, "estimator": "bo"})).structured_content
        seen["as ada"] = (await session.call_tool("estimate_submit", {**turn, "estimator": "ada"})).structured_content
        async with stdio_client(server) as (read2, write2), ClientSession(read2, write2) as other:  # a 2nd client
            await other.initialize()
            as_bo = {**turn, "estimator": "bo"}
            seen["other as bo"] = (await other.call_tool("estimate_submit", as_bo)).structured_content
            handed = {**as_bo, "participant_secret": (seen["bo"] or {}).get("participant_secret")}
            seen["other with the secret"] = (await other.call_tool("estimate_submit", handed)).structured_content
        return seen


def test_mcp_starts_it_and_seats_an_agent_through_its_tools(tmp_path: Path, estimate_env: dict[str, str]) -> None:
    seen = anyio.run(_over_mcp, tmp_path, estimate_env)
    assert {"estimate_status", "estimate_submit"} <= set(seen["tools"])
    result = seen["result"]
    assert (result["outcome"], result["reason"], result["verdict"]) == (
        "ESTIMATED", "the last round's median is 23", "valid",
    )  # fmt: skip
    assert result["conformity"]["estimate"]["participants"]["ada"]["positions"] == [21, 23]
    assert seen["bo"]["ok"] is True and seen["bo"]["next_speaker"] == "ada"  # ada's round 2, after bo's round 1
    assert seen["as ada"]["ok"] is False and [r["rule"] for r in seen["as ada"]["rules"]] == ["TOOLS_IDENTITY"]
    # bo's seat is held against every other connection, which may take it back only with the secret that bo's
    # first call returned once.
    other = seen["other as bo"]
    assert other["ok"] is False and [r["rule"] for r in other["rules"]] == ["TOOLS_SEAT"], other
    assert seen["other with the secret"]["ok"] is True, seen["other with the secret"]
    assert "participant_secret" not in seen["other with the secret"]

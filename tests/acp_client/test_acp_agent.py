"""The acp: agent against a real ACP agent process (tests/acp/acp_test_agent.py, built on the SDK)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import forked_moot
from forked_moot import MOOT
from moot.agents import AcpAgent, AgentRequest
from moot.detect import check_path
from moot.errors import AgentTimeout

AGENT = Path(__file__).with_name("acp_test_agent.py")


def reply(message: str, status: str = "AWAITING", summary: str = "") -> str:
    return json.dumps({"message": message, "status": status, "summary": summary})


AGREEING = {
    "proposer": [
        reply("Move every service into one repository with one CI pipeline, built per changed service."),
        reply("Builds are scoped by the dependency graph, so CI time follows the change.", "PROPOSING_DONE"),
    ],
    "critic": [
        reply("CI time grows with every service; how do you keep builds fast?"),
        reply("Agreed.", "DONE", "One repository, one pipeline, builds scoped to the changed services."),
    ],
}


def agent_spec(tmp_path: Path, *extra: str, replies: dict[str, list[str]] | None = None) -> str:
    (tmp_path / "replies.json").write_text(json.dumps(replies or AGREEING))
    return (
        f"acp:{sys.executable} {AGENT} --replies {tmp_path / 'replies.json'} --log {tmp_path / 'log.jsonl'} "
        + " ".join(extra)
    )


def log_rows(tmp_path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "MOOT_ACP_ALLOW_WRITES"}
    return forked_moot.run(args, cwd=cwd, timeout=120, env=env)


def test_a_whole_debate_through_acp_ends_in_a_valid_record_with_one_session_per_role(tmp_path: Path) -> None:
    done = moot(
        "run", "critique", "--topic", "Adopt a monorepo", "--agents", agent_spec(tmp_path), "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "DONE" and report["turns"] == 4
    assert check_path(tmp_path / report["artifact"]).exit_code == 0
    rows = log_rows(tmp_path)
    assert [r["event"] for r in rows].count("initialize") == 1  # one process for the whole debate
    sessions = [r for r in rows if r["event"] == "new_session"]
    assert len(sessions) == 2  # one per role, opened once
    assert all(s["cwd"] == str(tmp_path) and s["process_cwd"] == str(tmp_path) for s in sessions)
    prompts = [r for r in rows if r["event"] == "prompt"]
    by_session: dict[object, set[object]] = {}
    for prompt in prompts:
        by_session.setdefault(prompt["session"], set()).add(prompt["role"])
    assert sorted(next(iter(roles)) for roles in by_session.values()) == ["critic", "proposer"]
    assert all(len(roles) == 1 for roles in by_session.values())
    # The system text opens each session; later prompts carry only the turn's prompt.
    assert [p["has_system"] for p in prompts] == [True, True, False, False]
    assert all(r["outcome"] == "allow-once" for r in rows if r["event"] == "permission")  # reads are allowed
    usage = (tmp_path / ".dialogues" / ".adopt-a-monorepo.md.usage.jsonl").read_text()
    assert '"model": "acp:prepared-agent"' in usage


def test_writes_are_refused_by_default(tmp_path: Path) -> None:
    target = tmp_path / "src.py"
    spec = agent_spec(tmp_path, "--write", str(target))
    done = moot("run", "critique", "--topic", "T", "--agents", spec, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not target.exists() and not Path(f"{target}.direct").exists()
    rows = log_rows(tmp_path)
    assert {r["outcome"] for r in rows if r.get("kind") == "edit"} == {"reject-once"}
    assert not any(r["ok"] for r in rows if r["event"] == "direct_write")
    assert rows[0]["write_capability"] is False


def test_allow_writes_lets_the_agent_edit(tmp_path: Path) -> None:
    target = tmp_path / "src.py"
    spec = agent_spec(tmp_path, "--write", str(target))
    done = moot("run", "--allow-writes", "critique", "--topic", "T", "--agents", spec, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "edited by the agent\n" and Path(f"{target}.direct").read_text() == "direct\n"
    rows = log_rows(tmp_path)
    assert {r["outcome"] for r in rows if r.get("kind") == "edit"} == {"allow-once"}
    assert rows[0]["write_capability"] is True


def test_a_hung_agent_is_cancelled_at_the_turn_deadline(tmp_path: Path) -> None:
    started = time.monotonic()
    done = moot(
        "run", "critique", "--topic", "T", "--agents", agent_spec(tmp_path, "--hang"), "--turn-timeout", "10", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert time.monotonic() - started < 90  # the deadline, the cancel and the process end; not a timing test
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["consensus"] is False and "did not answer within 10 s and was cancelled" in report["reason"]
    assert [r["event"] for r in log_rows(tmp_path)][-1] == "cancel"


def test_streamed_updates_are_shown_as_progress(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    agent = AcpAgent(agent_spec(tmp_path).removeprefix("acp:"), project=tmp_path, progress=lambda *u: seen.append(u))
    request = AgentRequest(prompt="Your turn.", system="You are the proposer.", role="proposer", timeout_s=30)

    async def one_turn() -> str:
        async with agent:
            return (await agent.reply(request)).text

    assert json.loads(asyncio.run(one_turn()))["status"] == "AWAITING"
    assert ("proposer", "Reading the dialogue") in seen


def test_deadline_inside_the_agent_raises_a_timeout(tmp_path: Path) -> None:
    agent = AcpAgent(agent_spec(tmp_path, "--hang").removeprefix("acp:"), project=tmp_path, progress=lambda *u: None)
    request = AgentRequest(prompt="Your turn.", system="You are the critic.", role="critic", timeout_s=10)

    async def one_turn() -> None:
        async with agent:
            await agent.reply(request)

    try:
        asyncio.run(one_turn())
    except AgentTimeout as exc:
        assert "cancelled" in str(exc)
    else:
        raise AssertionError("a hung agent must time out")
    assert [r["event"] for r in log_rows(tmp_path)][-1] == "cancel"


def test_moot_agents_reports_each_known_acp_agent(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "codex-acp"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    done = subprocess.run([*MOOT, "agents", "--json"], capture_output=True, text=True, env=env, check=True)
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["acp"]["ready"] is True
    assert rows["acp codex-acp"]["ready"] is True and str(fake) in rows["acp codex-acp"]["detail"]
    claude = rows["acp claude-code-acp"]
    if not claude["ready"]:
        assert "@zed-industries/claude-code-acp" in claude["detail"]
    assert rows["acp gemini"]["forms"] == "acp:'gemini --experimental-acp'"

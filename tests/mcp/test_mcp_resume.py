"""``resume_debate`` over stdio with the official SDK client: a halted debate is finished from its record; the
tool is as closed as ``start_debate`` (records inside the work root only, agents the server allows only); an
existing record's refusal names it; ``debate_result`` carries the turns, bounded."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import anyio
from mcp.client import ClientSession
from mcp_helpers import call, connect, tool_error, tree

SCRIPTED = f"cmd:{sys.executable} {Path(__file__).parents[1] / 'reliability' / 'protocol_agent.py'}"
STALLS = "cmd:sleep 5"  # never answers within the turn timeout: the engine halts the debate
TOPIC = "Adopt a monorepo"


async def halted_critique(session: ClientSession) -> dict[str, object]:
    """A critique the engine halted before its first turn, and its result."""
    started = await call(
        session, "start_debate", protocol="critique", topic=TOPIC, agents=STALLS, turn_timeout_s=1, repairs=0
    )
    assert "stdio" in started["lifetime"] and "resume_debate" in started["lifetime"]
    status = await call(session, "debate_status", debate_id=started["debate_id"], wait_seconds=60)
    assert status["state"] == "halted" and status["turns"] == 0, status
    return status


def test_resume_debate_finishes_a_halted_debate_and_its_result_carries_the_turns_bounded(root: Path) -> None:
    async def scenario() -> None:
        async with connect(root, "--allow-agent", "cmd") as session:
            halted = await halted_critique(session)
            debate = str(halted["debate_id"])
            # Starting it again is refused in one sentence that names the tool which continues it.
            exists = await tool_error(session, "start_debate", protocol="critique", topic=TOPIC, agents=STALLS)
            assert "resume_debate" in exists["error"] and debate in exists["error"]
            assert "moot resume" not in exists["error"]

            resumed = await call(session, "resume_debate", debate_id=debate, agents=SCRIPTED)
            assert resumed["debate_id"] == debate and resumed["state"] == "running"
            assert "resume_debate" in resumed["lifetime"]
            running = await session.call_tool("resume_debate", {"debate_id": debate, "agents": SCRIPTED})
            assert running.is_error and "still running" in str(running.structured_content)
            ended = await call(session, "debate_status", debate_id=debate, wait_seconds=120)
            assert ended["state"] == "ended" and ended["turns"] >= 2, ended
            finished = await tool_error(session, "resume_debate", debate_id=debate, agents=SCRIPTED)
            assert "nothing to resume" in finished["error"]

            result = await call(session, "debate_result", debate_id=debate)
            record = (root / debate).read_text(encoding="utf-8")
            turns = result["transcript"]
            assert len(turns) == result["turns"] and result["transcript_note"] is None
            assert all(turn["text"] in record and turn["text"].startswith("## [") for turn in turns)
            assert turns[0]["heading"].startswith("[proposer] Round 1")

            cut = await call(session, "debate_result", debate_id=debate, max_chars=300)
            kept = cut["transcript"]
            assert sum(len(turn["text"]) for turn in kept) <= 301 and kept[-1]["text"].endswith(turns[-1]["text"][-50:])
            assert "300 characters" in cut["transcript_note"] and debate in cut["transcript_note"]

    anyio.run(scenario)


def test_resume_debate_refuses_a_record_outside_the_work_root_and_an_agent_the_server_does_not_allow(
    root: Path, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with connect(root, "--allow-agent", "cmd") as session:
            debate = str((await halted_critique(session))["debate_id"])
        # The same record outside the work root: a client cannot make the server continue (and write) it.
        outside = tmp_path / "elsewhere"
        shutil.copytree(root / ".dialogues", outside / ".dialogues")
        before, outside_before = tree(root), tree(outside)
        async with connect(root, "--allow-agent", "cmd") as session:
            for named in (f"../elsewhere/{debate}", str(outside / debate)):
                away = await tool_error(session, "resume_debate", debate_id=named, agents=SCRIPTED)
                assert "work root" in away["error"], away["error"]
            missing = await tool_error(session, "resume_debate", debate_id=".dialogues/none.md", agents=SCRIPTED)
            assert "list_debates" in missing["error"]
        # A server that allows no program: neither the agents the record's runs used nor ones named here run.
        async with connect(root) as session:
            stored = await tool_error(session, "resume_debate", debate_id=debate)
            named = await tool_error(session, "resume_debate", debate_id=debate, agent={"critic": SCRIPTED})
            for refusal in (stored, named):
                assert "--allow-agent cmd" in refusal["error"], refusal["error"]
        assert tree(root) == before and tree(outside) == outside_before

    anyio.run(scenario)

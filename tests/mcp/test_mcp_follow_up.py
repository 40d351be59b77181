"""MCP ``follow_up_debate``: a finished council asked a follow-up through the SDK client runs as a new debate of the
same panel, names the earlier one, and is listed beside it; a question for a debate without an answer is refused."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp_helpers import call, connect, tool_error

from moot.detect import check_path
from moot.followup import followups

AGENT = f"cmd:{sys.executable} {Path(__file__).parents[1] / 'reliability' / 'protocol_agent.py'}"
MEMBERS = [[name, AGENT] for name in ("ada", "bo", "cy")]


def test_a_finished_council_takes_a_follow_up_of_the_same_panel(root: Path) -> None:
    async def scenario() -> None:
        async with connect(root, "--allow-agent", "cmd") as session:
            first = await call(
                session, "start_debate", protocol="council", question="Should tenants share one cache?",
                options={"members": MEMBERS},
            )  # fmt: skip
            done = await call(session, "debate_status", debate_id=first["debate_id"], wait_seconds=120)
            assert done["state"] == "ended" and done["outcome"] == "SYNTHESIZED", done
            earlier = await call(session, "debate_result", debate_id=first["debate_id"])

            later = await call(
                session, "follow_up_debate", debate_id=first["debate_id"], question="What would make that wrong?"
            )
            assert later["debate_id"] != first["debate_id"]
            finished = await call(session, "debate_status", debate_id=later["debate_id"], wait_seconds=120)
            assert finished["outcome"] == "SYNTHESIZED", finished

            text = (root / later["debate_id"]).read_text(encoding="utf-8")
            assert "What would make that wrong?" in text and first["debate_id"] in text
            assert earlier["decision"]["decided"]["text"] in text  # the earlier answer is carried over
            assert check_path(root / later["debate_id"]).exit_code == 0
            assert [row["record"] for row in followups(root / first["debate_id"])] == [later["debate_id"]]

            critique = await call(session, "start_debate", protocol="critique", topic="T", agents="cmd:false")
            await call(session, "debate_status", debate_id=critique["debate_id"], wait_seconds=60)
            refused = await tool_error(session, "follow_up_debate", debate_id=critique["debate_id"], question="And?")
            assert "has no answer to follow up" in refused["error"]

    anyio.run(scenario)

"""MCP ``debate_result`` carries the record's decision, read through the official SDK client over stdio, for a
record of every protocol written before the server started."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp_helpers import call, connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from web_helpers import DECIDED, place_examples  # one valid record per protocol, and what each decided


def test_debate_result_carries_the_decision_of_every_protocol(root: Path) -> None:
    placed = place_examples(root)

    async def scenario() -> None:
        async with connect(root) as session:
            for protocol, (_, text, turn, who) in DECIDED.items():
                result = await call(session, "debate_result", debate_id=placed[protocol])
                decided = result["decision"]["decided"]
                assert decided["text"].startswith(text), protocol
                assert (decided["turn"], decided["who"]) == (turn, who), protocol
                assert result["decision"]["outcome"] == result["outcome"]
            duel = await call(session, "debate_result", debate_id=placed["duel"])
            assert [p["turn"] for p in duel["decision"]["open"]] == [5, 6]

    anyio.run(scenario)

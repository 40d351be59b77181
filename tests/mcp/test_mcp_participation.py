"""Outside agents taking part in a Critique Loop and a Roundtable through ``moot mcp`` (the official SDK client,
one server process per agent as a host starts it): the same checks as the CLI's tools, and each connection acts
only in the role it claimed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
from mcp_helpers import call, connect, refused

DIALOGUE = ".dialogues/rate-limiting.md"
HEADER = """# Dialogue: Rate limiting for the public API
Started: 2026-01-31 14:00
Template: planning
Max rounds: 5

Participants:
  - proposer @ /home/dev/api
  - critic (partner)

---
"""
TURNS = {
    ("proposer", 1): "## [proposer] Round 1 — 2026-01-31 14:05\n\nA token bucket per API key: 100 a minute, bursts "
    "of 20.\n\nStatus: AWAITING critic\n",
    ("critic", 1): "## [critic] Round 1 — 2026-01-31 14:09\n\nHow do clients learn their remaining budget?\n\n"
    "Status: AWAITING proposer\n",
    ("proposer", 2): "## [proposer] Round 2 — 2026-01-31 14:14\n\nEvery response carries RateLimit-Remaining.\n\n"
    "Status: PROPOSING_DONE\n",
    ("critic", 2): "## [critic] Round 2 — 2026-01-31 14:18\n\nAgreed.\n\nSummary: A token bucket per key with "
    "RateLimit headers.\n\nStatus: DONE\n",
}
MINUTES = """# Minutes: cache

## Discussion Summary

Both roles reviewed the cache design.

## Final Consensus

Partition the cache per tenant.

## Unresolved Disagreements

None.

## Action Items

- architect: write the partitioning plan.
"""


def moot_check(record: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moot", "check", str(record)], capture_output=True, text=True, timeout=120
    )


def test_two_agents_run_a_critique_loop_each_only_in_its_own_role(root: Path) -> None:
    record = root / DIALOGUE
    record.parent.mkdir()
    record.write_text(HEADER, encoding="utf-8")  # the orchestrator's header, as the seed writes it

    async def scenario() -> None:
        async with connect(root) as proposer, connect(root) as critic:
            seats = {"proposer": proposer, "critic": critic}
            for (role, number), turn in TURNS.items():
                session = seats[role]
                other = "critic" if role == "proposer" else "proposer"
                lease = await call(session, "critique_claim", file=DIALOGUE, role=role, harness="codex")
                token = lease["lease_token"]
                if number == 1:
                    # The other agent's connection may not write as this role, even holding its token.
                    await refused(
                        seats[other],
                        "critique_append",
                        "TOOLS_IDENTITY",
                        file=DIALOGUE,
                        role=role,
                        lease_token=token,
                        turn_markdown=turn,
                    )
                if (role, number) == ("critic", 1):
                    # The proposer's connection holds its seat: it may not take the critic's as a second one.
                    await refused(proposer, "critique_claim", "TOOLS_IDENTITY", file=DIALOGUE, role=role)
                appended = await call(
                    session, "critique_append", file=DIALOGUE, role=role, lease_token=token, turn_markdown=turn
                )
                assert appended["role"] == role and appended["round"] == number and appended["leased"] is True
                close = appended["outcome"] is not None
                released = await call(
                    session, "critique_release", file=DIALOGUE, role=role, lease_token=token, close=close
                )
                assert released["closed"] is close
            assert appended["outcome"] == "DONE" and released["outcome"] == "DONE"

            # A turn out of order is refused by the protocol's own rule, and nothing is written.
            before = record.read_bytes()
            lease = await call(critic, "critique_claim", file=DIALOGUE, role="critic")
            await refused(
                critic,
                "critique_append",
                "CRITIQUE_AFTER_DONE",
                file=DIALOGUE,
                role="critic",
                lease_token=lease["lease_token"],
                turn_markdown=TURNS[("critic", 2)].replace("14:18", "14:30"),
            )
            assert record.read_bytes() == before
            status = await call(proposer, "critique_status", file=DIALOGUE)
            assert status["turns"] == 4 and status["outcome"] == "DONE" and status["valid"] is True

        checked = moot_check(record)
        assert checked.returncode == 0 and "status DONE" in checked.stdout, checked.stdout

    anyio.run(scenario)


def test_a_roundtable_over_mcp_with_a_moderator_and_two_speakers(root: Path) -> None:
    async def scenario() -> None:
        async with connect(root) as moderator, connect(root) as architect, connect(root) as reviewer:
            started = await call(
                moderator,
                "roundtable_start",
                name="cache",
                speakers=["architect", "reviewer"],
                max_rounds=1,
                agenda="# Cache design\n\nShould tenants share one cache?\n",
            )
            assert started["current_speaker"] == "architect"
            # The moderator's connection is the moderator in this meeting, not a speaker as well.
            await refused(moderator, "roundtable_take_floor", "TOOLS_IDENTITY", name="cache", role="architect")
            await refused(reviewer, "roundtable_take_floor", "TOOLS_NOT_YOUR_TURN", name="cache", role="reviewer")

            floor = await call(architect, "roundtable_take_floor", name="cache", role="architect")
            speech = {"name": "cache", "role": "architect", "lease_token": floor["lease_token"]}
            await refused(reviewer, "roundtable_speak", "TOOLS_IDENTITY", **speech, speech="Forged.")
            spoken = await call(
                architect, "roundtable_speak", **speech, speech="Partition per tenant.", prompt_next="Reviewer?"
            )
            assert spoken["sequence"] == 1 and spoken["next_speaker"] == "reviewer"

            floor = await call(reviewer, "roundtable_take_floor", name="cache", role="reviewer")
            spoken = await call(
                reviewer,
                "roundtable_speak",
                name="cache",
                role="reviewer",
                lease_token=floor["lease_token"],
                speech="Agreed; partitioning bounds the blast radius.",
            )
            assert spoken["status"] == "concluding"

            floor = await call(moderator, "roundtable_take_floor", name="cache", role="moderator")
            token = floor["lease_token"]
            await refused(
                architect, "roundtable_minutes", "TOOLS_IDENTITY", name="cache", lease_token=token,
                minutes_markdown=MINUTES,
            )  # fmt: skip
            closed = await call(
                moderator, "roundtable_minutes", name="cache", lease_token=token, minutes_markdown=MINUTES
            )
            assert closed["status"] == "closed" and Path(closed["minutes_path"]).is_file()
            status = await call(architect, "roundtable_status", name="cache")
            assert status["status"] == "closed" and status["speeches"] == 2 and status["valid"] is True

        checked = moot_check(root / ".roundtable" / "cache")
        assert checked.returncode == 0, checked.stdout

    anyio.run(scenario)

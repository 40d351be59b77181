"""The agent tools on a real small tmpfs that fills up or turns read-only, from the command line and over MCP:
an append that fails leaves the record exactly as it was and is refused as unavailable (a tool error, never a
crash) in one sentence that names the disk and the fix; once the disk is fixed, the same append succeeds.

The ledger is kept off the small disk (``MOOT_DATABASE_URL``, a SQLite file), so that the append that meets
the full disk is the record's own.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from fault_helpers import fill, remount
from mcp_helpers import call, connect
from mcp_types import CallToolResult, TextContent
from tools_helpers import Cli, Result

from moot.detect import check_path
from moot.protocols.critique.machine import CritiqueConfig
from moot.protocols.critique.record import create

RECORD = ".dialogues/api-design.md"
LONG = "Rate limits hold per client and per tenant. " * 150  # over a memory page: the append needs new room
PROPOSER_1 = f"---\n\n## [proposer] Round 1 — 2026-01-31 14:05\n\n{LONG}\n\nStatus: AWAITING critic\n"
CRITIC_1 = f"## [critic] Round 1 — 2026-01-31 14:09\n\nWhat about bursts? {LONG}\n\nStatus: AWAITING proposer\n"


def ledger_elsewhere(disk: Path) -> dict[str, str]:
    # PYTHONPATH too: the MCP client starts its server with a minimal environment.
    found = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    return {**found, "MOOT_DATABASE_URL": str(disk.parent / "ledger.db")}


def dialogue(root: Path) -> Path:
    path = root / RECORD
    path.parent.mkdir()
    create(path, CritiqueConfig.from_template("planning", topic="API design", started="2026-01-31 14:00"))
    return path


def append(cli: Cli, role: str, text: str) -> Result:
    turn = cli.root.parent / f"{role}-turn.md"  # the turn file is not on the small disk
    turn.write_text(text, encoding="utf-8")
    return cli("critique", "append", "--file", RECORD, "--role", role, "--turn-file", str(turn))


def test_a_tool_append_on_a_full_disk_is_refused_and_writes_nothing(small_disk: Path) -> None:
    cli = Cli(small_disk, ledger_elsewhere(small_disk))
    record = dialogue(small_disk)
    append(cli, "proposer", PROPOSER_1).ok()
    before = record.read_bytes()
    filler = fill(small_disk)
    refused = append(cli, "critic", CRITIC_1).refused("TOOLS_UNAVAILABLE", 3)
    assert refused["kind"] == "unavailable"
    assert refused["error"].startswith("disk full: ") and "free space" in refused["error"]
    assert record.read_bytes() == before
    filler.unlink()
    assert append(cli, "critic", CRITIC_1).ok()["turn_number"] == 2
    assert check_path(record).exit_code == 0


def test_a_tool_append_on_a_read_only_file_system_is_refused_and_names_the_fix(small_disk: Path) -> None:
    cli = Cli(small_disk, ledger_elsewhere(small_disk))
    record = dialogue(small_disk)
    append(cli, "proposer", PROPOSER_1).ok()
    before = record.read_bytes()
    remount(small_disk, "ro")
    try:
        refused = append(cli, "critic", CRITIC_1).refused("TOOLS_UNAVAILABLE", 3)
    finally:
        remount(small_disk, "rw")
    assert refused["error"].startswith("read-only file system: ") and "writable" in refused["error"]
    assert record.read_bytes() == before
    assert append(cli, "critic", CRITIC_1).ok()["turn_number"] == 2


def test_an_mcp_append_on_a_full_disk_is_a_tool_error_and_writes_nothing(small_disk: Path) -> None:
    record = dialogue(small_disk)

    async def scenario() -> None:
        async with connect(small_disk, env=ledger_elsewhere(small_disk)) as session:
            lease = await call(session, "critique_claim", file=RECORD, role="proposer")
            arguments = {"file": RECORD, "role": "proposer", "lease_token": lease["lease_token"]}
            before = record.read_bytes()
            filler = fill(small_disk)
            result = await session.call_tool("critique_append", {**arguments, "turn_markdown": PROPOSER_1})
            assert isinstance(result, CallToolResult) and result.is_error
            payload = result.structured_content
            assert payload is not None and payload["kind"] == "unavailable"
            lead = result.content[0]
            assert isinstance(lead, TextContent) and lead.text.startswith("disk full: ")
            assert record.read_bytes() == before
            filler.unlink()
            appended = await call(session, "critique_append", **arguments, turn_markdown=PROPOSER_1)
            assert appended["turn_number"] == 1

    asyncio.run(scenario())
    assert check_path(record).exit_code == 0

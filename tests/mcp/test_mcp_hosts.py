"""The agent-host instruction files under integrations/: generated from the protocol definitions and the
server's tool list, committed up to date, and the set-up they ship actually starts a working server."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_helpers import ALICE, join, write_source

from moot import __version__, hosts
from moot.protocols.duel.guide import EXAMPLE_TURN, RULE_BOOKS, SOURCE, duel_tools
from moot.protocols.duel.machine import DuelConfig, Participant
from moot.protocols.duel.text import parse_turn

INTEGRATIONS = Path(__file__).resolve().parents[2] / "integrations"
SKILL = "claude-code/skills/moot-duel/SKILL.md"


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return hosts.files()


def test_the_committed_files_are_what_moot_generates_now(tmp_path: Path, generated: dict[str, str]) -> None:
    written = hosts.write(tmp_path, generated)
    assert {p.relative_to(tmp_path).as_posix() for p in written} == set(generated)
    for relative in generated:
        committed = INTEGRATIONS / relative
        assert committed.is_file(), f"{committed} is missing; run: python -m moot.hosts"
        assert committed.read_bytes() == (tmp_path / relative).read_bytes(), (
            f"{committed} is out of date; run: python -m moot.hosts"
        )


def test_check_mode_names_a_file_that_drifted(tmp_path: Path) -> None:
    def check(directory: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "moot.hosts", str(directory), "--check"], capture_output=True, text=True, timeout=120
        )

    assert check(INTEGRATIONS).returncode == 0
    hosts.write(tmp_path)
    (tmp_path / "codex" / "AGENTS.md").write_text("edited by hand\n", encoding="utf-8")
    drifted = check(tmp_path)
    assert drifted.returncode == 1
    assert "codex/AGENTS.md" in drifted.stderr and "SKILL.md" not in drifted.stderr


def test_the_guide_covers_every_tool_and_rule_and_its_example_turn_parses(generated: dict[str, str]) -> None:
    tool_names = {tool.name for tool in duel_tools(hosts.server_tools())}
    assert {"join", "append_turn", "release_lock"} <= tool_names and "start_debate" not in tool_names
    for relative in (SKILL, "codex/AGENTS.md"):
        text = generated[relative]
        for name in tool_names:
            assert f"`{name}`" in text, (relative, name)
        for _, book in RULE_BOOKS:
            for rule in book:
                assert f"`{rule.id}`" in text, (relative, rule.id)
    skill = generated[SKILL]
    assert skill.startswith("---\nname: moot-duel\ndescription: ")
    # The example in the guide is a turn in the real format: moot's own turn parser reads it back.
    example = skill.split("```markdown\n", 1)[1].split("```", 1)[0]
    at = "2026-01-01T00:00:00Z"
    config = DuelConfig(duel_id="d", source_path=SOURCE, topic="Shared cache", topic_slug="shared-cache", created=at)
    table = [
        Participant(name="alice", harness="claude-code", model="claude-opus-4", joined=at),
        Participant(name="bob", harness="codex", model="gpt-5", joined=at),
    ]
    assert parse_turn(example, config, table, file="<guide>") == EXAMPLE_TURN


def test_the_shipped_host_configs_start_a_working_server(root: Path, generated: dict[str, str]) -> None:
    plugin = json.loads(generated["claude-code/.claude-plugin/plugin.json"])
    assert plugin["name"] == "moot" and plugin["version"] == __version__
    claude = json.loads(generated["claude-code/.mcp.json"])["mcpServers"]["moot"]
    codex = tomllib.loads(generated["codex/config.toml"])["mcp_servers"]["moot"]
    assert claude == codex == {"command": "moot", "args": ["mcp"]}
    source = write_source(root)

    async def scenario() -> None:
        # As a host starts it: the console script, in the project directory, which becomes the work root.
        moot = str(Path(sys.executable).with_name(claude["command"]))
        params = StdioServerParameters(command=moot, args=claude["args"], cwd=root)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            joined = await join(session, source, ALICE)
            assert Path(joined["debate_path"]).parent == root / "debates"

    anyio.run(scenario)


def test_the_critique_command_is_the_same_for_both_hosts_and_names_the_run_tools(generated: dict[str, str]) -> None:
    claude = generated["claude-code/commands/critique.md"]
    assert claude == generated["codex/prompts/moot-critique.md"]
    front, body = claude.removeprefix("---\n").split("\n---\n", 1)
    keys = dict(line.split(": ", 1) for line in front.splitlines())
    assert set(keys) == {"description", "argument-hint"} and keys["description"]
    # The user's words go where the host substitutes them; the steps use the tools the server really lists.
    assert body.count("$ARGUMENTS") == 1
    for tool in ("start_debate", "debate_status", "debate_result", "cancel_debate"):
        assert f"`{tool}`" in body, tool
    assert '`protocol: "critique"`' in body and "`wait_seconds: " in body
    listed = [tool for tool in hosts.server_tools() if tool.name != "debate_result"]
    with pytest.raises(KeyError, match="debate_result"):
        hosts.files(listed)

"""Each agent tool is declared once, and the command line and the MCP server are generated from the
declaration: they offer the same operations for every protocol, with the same argument descriptions, and the
command line has everything MCP has (``moot duel read`` prints the record an MCP client reads)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import click
import pytest
import typer
from tools_helpers import Cli, start_duel

from moot import registry
from moot.cli.commands import app
from moot.mcp.run_tools import RUN_TOOLS
from moot.mcp.server import build_server
from moot.plugin import Ref, ToolSet

PROTOCOLS_WITH_TOOLS = [name for name, plugin in registry.protocols().items() if plugin.tools is not None]


def mcp_tools(root: Path) -> dict[str, dict[str, object]]:
    """The MCP tools as the server lists them: name -> input schema."""
    listed = anyio.run(build_server(root).list_tools)
    return {tool.name: tool.input_schema for tool in listed}


def cli_commands(*path: str) -> set[str]:
    """The subcommands of ``moot PATH…`` in the whole app (what ``moot PATH --help`` lists)."""
    group = typer.main.get_command(app)
    ctx = click.Context(group)
    for name in path:
        found = group.get_command(ctx, name)  # type: ignore[attr-defined]
        assert hasattr(found, "list_commands"), f"moot {name} is not a command group"
        group, ctx = found, click.Context(found, parent=ctx)
    return set(group.list_commands(ctx))  # type: ignore[attr-defined]


def test_every_protocol_has_the_same_operations_on_the_command_line_and_over_mcp(tmp_path: Path) -> None:
    from moot.tools.declare import SHARED, mcp_name  # the declarations name each command's MCP tool

    assert {"critique", "duel", "roundtable"} <= set(PROTOCOLS_WITH_TOOLS)
    served = set(mcp_tools(tmp_path)) - {function.__name__ for function, _ in RUN_TOOLS}
    offered: set[str] = set()
    for name in PROTOCOLS_WITH_TOOLS:
        declared = registry.get(name).tools.load()  # type: ignore[union-attr]
        assert cli_commands(name) == {tool.name for tool in declared}, name
        offered |= {mcp_name(name, tool) for tool in declared}
    shared: ToolSet = Ref[ToolSet](SHARED).load()
    top_level = cli_commands()
    assert {tool.name for tool in shared} <= top_level
    from moot.cli.tool_app import SHARED_COMMANDS  # what the fast path serves without importing the tools

    assert set(SHARED_COMMANDS) == {tool.name for tool in shared} | {"events"}
    offered |= {mcp_name(None, tool) for tool in shared}
    assert served == offered
    # the operations one door had and the other lacked
    assert "read" in cli_commands("duel") and "read_debate" in served
    assert "extend" in cli_commands("critique") and "critique_extend" in served


def test_an_arguments_description_is_the_commands_help_and_the_mcp_schema(root: Path) -> None:
    schema = mcp_tools(root)["claim_lock"]["properties"]
    description = schema["for_timeout"]["description"]  # type: ignore[index]
    assert "bounded wait" in description
    wide = {**Cli(root).environment(), "COLUMNS": "400", "TERMINAL_WIDTH": "400"}
    help_text = Cli(root, env=wide)("duel", "claim-lock", "--help")
    assert help_text.code == 0
    assert description in " ".join(help_text.stdout.split())
    ttl = schema["ttl_seconds"]["description"]  # type: ignore[index]
    assert ttl in " ".join(help_text.stdout.split())


def test_moot_duel_read_prints_the_record(cli: Cli) -> None:
    duel = start_duel(cli)
    empty = cli("duel", "read", "--duel-id", duel.duel_id).ok()
    assert empty["exists"] is False and empty["text"] == ""
    lock = duel.claim("alice").ok()
    duel.append("alice", lock["lease_token"], duel.write_turn(1)).ok()
    read = cli("duel", "read", "--duel-id", duel.duel_id).ok()
    assert read["exists"] is True and read["text"] == duel.debate_path.read_text(encoding="utf-8")
    assert read["artifact"]["turns"] == 1 and read["resource_uri"] == f"moot://debates/{duel.debate_path.name}"
    # Like status, read finds the work root from the duel id alone.
    elsewhere = Cli(cli.root.parent)
    elsewhere.env = {"XDG_STATE_HOME": str(cli.root.parent / "state")}
    assert elsewhere("duel", "read", "--duel-id", duel.duel_id).ok()["text"] == read["text"]


@pytest.mark.parametrize("args", [["duel", "read", "--help"], ["critique", "extend", "--help"]])
def test_the_new_commands_have_help(args: list[str], root: Path) -> None:
    shown = Cli(root)(*args)
    assert shown.code == 0 and "--root" in shown.stdout and os.sep not in shown.stderr

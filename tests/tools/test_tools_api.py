"""The transport-free tools layer that the CLI and the MCP server share: its public surface, its payloads
and exit codes, and the CLI's own promises (fast help, usage errors, an unreachable ledger)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tools_helpers import ALICE, BOB, Cli, example_turns, write_source

from moot import tools
from moot.protocols.duel import tools as duel


def test_the_public_surface_is_pinned() -> None:
    assert set(tools.__all__) == {
        "TOOL_RULES", "BadInput", "Refused", "ToolError", "Unavailable", "Workspace", "events", "invoke",
        "open_workspace", "result_payload",
    }  # fmt: skip
    assert set(duel.__all__) == {
        "PROTOCOL", "SHARING", "TOOLS", "ArtifactView", "DebateText", "DuelStatus", "DuelWaited", "Joined",
        "TurnAppended", "append", "claim_lock", "held", "join", "read", "refresh_lock", "release_lock", "status", "wait",
    }  # fmt: skip
    assert all(hasattr(tools, name) for name in tools.__all__)
    assert all(rule.id.startswith("TOOLS_") for rule in tools.TOOL_RULES)


def test_invoke_gives_the_payload_and_exit_code_a_transport_sends(root: Path) -> None:
    source = write_source(root)
    with tools.open_workspace(root) as ws:
        payload, code = tools.invoke(
            lambda: duel.join(ws, target=source, topic=None, participant_name="alice", harness="codex", run_id="r")
        )
        assert code == 0 and payload["ok"] is True and payload["topic"] == "Shared cache across tenants"
        payload, code = tools.invoke(lambda: duel.claim_lock(ws, duel_id=payload["duel_id"], participant_id="nobody"))
        assert code == 2 and payload["ok"] is False and payload["kind"] == "bad_input"
        assert payload["rules"][0]["rule"] == "TOOLS_BAD_INPUT" and "join" in payload["error"]


def test_a_turn_without_its_leading_rule_line_is_accepted_and_problems_point_into_it(root: Path) -> None:
    source = write_source(root)
    with tools.open_workspace(root) as ws:
        ids, secrets = {}, {}
        for who in (ALICE, BOB):
            joined = duel.join(
                ws, target=source, topic=None, participant_name=who["name"], harness=who["harness"],
                model_id=who["model"], run_id="r",
            )  # fmt: skip
            ids[who["name"]] = joined.participant_id
            secrets[who["name"]] = joined.participant_secret
        alice = {"duel_id": joined.duel_id, "participant_id": ids["alice"], "participant_secret": secrets["alice"]}
        lock = duel.claim_lock(ws, **alice)
        first = example_turns(source)[0].removeprefix("---\n")
        appended = duel.append(ws, **alice, lease_token=lock.lease_token, turn_markdown=first)
        assert appended.turn_number == 1 and appended.artifact_created
        try:
            duel.append(
                ws, **alice, lease_token=lock.lease_token, turn_markdown="\n\nsome notes\n" + first,
                turn_file="notes.md",
            )  # fmt: skip
        except tools.Refused as refusal:
            assert refusal.rules[0].rule == "TOOLS_TURN_FILE" and "notes.md" in refusal.message
        else:
            raise AssertionError("a turn file that does not start with the turn was accepted")


def test_help_loads_no_tool_module() -> None:
    probe = "import sys, moot.cli; print(sorted(m for m in sys.modules if m.startswith('moot.tools')))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_usage_errors_and_unknown_ids_exit_2(cli: Cli) -> None:
    missing = cli("duel", "claim-lock", "--duel-id", "x")
    assert missing.code == 2 and "--participant-id" in missing.stderr
    cli("duel", "status", "--duel-id", "no-such-duel").refused("TOOLS_BAD_INPUT", code=2)


def test_an_unreachable_ledger_exits_3(root: Path) -> None:
    down = Cli(root, env={"MOOT_DATABASE_URL": "postgresql://moot:moot@127.0.0.1:9/none?connect_timeout=2"})
    down("duel", "status", "--duel-id", "x").refused("TOOLS_UNAVAILABLE", code=3)

"""A roundtable run by outside agents through the CLI: start, take the floor in turn.json's order, speak
(speech and turn.json committed together), minutes by the moderator; and the refusals on the way."""

from __future__ import annotations

import json
from pathlib import Path

from tools_helpers import Cli

from moot.core.chain import split_mark
from moot.detect import check_path

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


def speak(cli: Cli, role: str, text: str, *extra: str) -> tuple[str, dict[str, object]]:
    floor = cli("roundtable", "take-floor", "--name", "cache", "--role", role).ok()
    speech = cli.root / f"{role}.md"
    speech.write_text(text, encoding="utf-8")
    done = cli(
        "roundtable", "speak", "--name", "cache", "--role", role, "--lease-token", floor["lease_token"],
        "--file", str(speech), *extra,
    ).ok()  # fmt: skip
    return floor["lease_token"], done


def test_a_meeting_runs_in_turn_order_and_closes_with_minutes(cli: Cli) -> None:
    agenda = cli.root / "agenda.md"
    agenda.write_text("Should the cache be shared across tenants?\n", encoding="utf-8")
    started = cli(
        "roundtable", "start", "--name", "cache", "--speakers", "architect,reviewer", "--max-rounds", "1",
        "--agenda", str(agenda), "--prompt", "Present the design.",
    ).ok()  # fmt: skip
    meeting = cli.root / ".roundtable" / "cache"
    assert Path(started["path"]) == meeting and started["current_speaker"] == "architect"

    blocked = cli("roundtable", "take-floor", "--name", "cache", "--role", "reviewer").refused("TOOLS_NOT_YOUR_TURN")
    assert "architect" in blocked["error"]

    floor = cli("roundtable", "take-floor", "--name", "cache", "--role", "architect").ok()
    status = cli("roundtable", "status", "--name", "cache")
    assert floor["lease_token"] not in status.stdout and status.data["floor_role"] == "architect"
    speech = cli.root / "architect.md"
    speech.write_text("## Position\n\nShare it, partitioned.\n", encoding="utf-8")
    # Without the token, or with an empty speech, nothing is written.
    cli("roundtable", "speak", "--name", "cache", "--role", "architect", "--file", str(speech)).refused("TOOLS_LEASE")
    empty = cli.root / "empty.md"
    empty.write_text("  \n", encoding="utf-8")
    cli(
        "roundtable", "speak", "--name", "cache", "--role", "architect", "--lease-token", floor["lease_token"],
        "--file", str(empty),
    ).refused("ROUNDTABLE_EMPTY_SPEECH")  # fmt: skip
    assert sorted(p.name for p in meeting.iterdir() if not p.name.startswith(".")) == ["AGENDA.md", "turn.json"]

    done = cli(
        "roundtable", "speak", "--name", "cache", "--role", "architect", "--lease-token", floor["lease_token"],
        "--file", str(speech), "--prompt-next", "Reviewer, assess isolation.",
    ).ok()  # fmt: skip
    assert done["sequence"] == 1 and done["next_speaker"] == "reviewer" and done["released"] is True
    state = json.loads((meeting / "turn.json").read_text(encoding="utf-8"))
    assert state["current_speaker"] == "reviewer" and state["prompt_for_speaker"] == "Reviewer, assess isolation."
    written, mark = split_mark((meeting / "001_architect.md").read_text(encoding="utf-8"))
    assert written == speech.read_text(encoding="utf-8") and mark is not None and mark.turns == 1  # and the chain head

    _, last = speak(cli, "reviewer", "## Position\n\nAgreed, with per-tenant floors.\n")
    assert last["status"] == "concluding" and last["next_speaker"] == "moderator"
    cli("roundtable", "take-floor", "--name", "cache", "--role", "architect").refused("TOOLS_NOT_YOUR_TURN")

    moderator = cli("roundtable", "take-floor", "--name", "cache", "--role", "moderator").ok()
    minutes = cli.root / "minutes.md"
    minutes.write_text(MINUTES, encoding="utf-8")
    closed = cli(
        "roundtable", "minutes", "--name", "cache", "--lease-token", moderator["lease_token"], "--file", str(minutes)
    ).ok()
    assert closed["status"] == "closed" and closed["outcome"] == "CLOSED"
    report = check_path(meeting)
    assert report.exit_code == 0, report.violations
    final = cli("roundtable", "status", "--name", "cache").ok()
    assert final["status"] == "closed" and final["speeches"] == 2 and final["valid"]
    cli("roundtable", "take-floor", "--name", "cache", "--role", "moderator").refused("TOOLS_DEBATE_CLOSED")


def test_meeting_names_and_roles_cannot_leave_the_work_root(cli: Cli, tmp_path: Path) -> None:
    agenda = cli.root / "agenda.md"
    agenda.write_text("Agenda.\n", encoding="utf-8")
    for name in ("../../etc", "/etc", ".hidden", "a/b"):
        cli(
            "roundtable", "start", "--name", name, "--speakers", "a,b", "--max-rounds", "1", "--agenda", str(agenda)
        ).refused("TOOLS_UNSAFE_NAME", code=2)
    for speakers in ("../x,b", "a,/etc/passwd"):
        cli(
            "roundtable", "start", "--name", "m", "--speakers", speakers, "--max-rounds", "1", "--agenda", str(agenda)
        ).refused("TOOLS_UNSAFE_NAME", code=2)
    assert not (cli.root / ".roundtable").exists() or not any((cli.root / ".roundtable").iterdir())
    assert not (tmp_path / "etc").exists()

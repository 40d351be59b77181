"""Two participants follow the Socratic Duel skill's §PROC word for word, each from its own directory.

The seed's agents never pass ``--root``: they join with ``--debate-dir {workRoot}/debates`` and then run
``status``, ``claim-lock``, ``refresh-lock`` and ``release-lock`` with only ``--duel-id``, from wherever they
are. Here the work root is ``<project>/.rp1/work`` (not a parent of the project directory), alice runs in
the project directory, bob in one of its subdirectories and then in the debates directory itself. The turn
itself is written with ``moot duel append`` (moot writes the record; docs/agent-tools.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from tools_helpers import ALICE, BOB, SOURCE_TEXT, Cli, example_turns

from moot.detect import check_path

TOPIC = "Shared cache across tenants"


def join(cli: Cli, source: Path, work_root: Path, who: dict[str, str]) -> dict[str, object]:
    return cli(
        "duel", "join", "--target", str(source), "--topic", TOPIC, "--debate-dir", f"{work_root}/debates",
        "--participant-name", who["name"], "--harness", who["harness"], "--model-id", who["model"],
        "--run-id", f"run-{who['name']}",
    ).ok()  # fmt: skip


def test_two_participants_follow_proc_from_different_directories(tmp_path: Path) -> None:
    project = tmp_path / "project"
    work_root = project / ".rp1" / "work"
    subdir = project / "src" / "cache"
    for folder in (work_root, subdir):
        folder.mkdir(parents=True)
    source = project / "cache-design.md"
    source.write_text(SOURCE_TEXT, encoding="utf-8")
    alice, bob = Cli(project), Cli(subdir)
    state = tmp_path / "state"
    bob.env["XDG_STATE_HOME"] = alice.env["XDG_STATE_HOME"] = str(state)  # one user, one index

    # 1. preparing: both join; the record's name is the seed's debates/YYYY-MM-DD-<slug>.md
    first = join(alice, source, work_root, ALICE)
    second = join(bob, source, work_root, BOB)
    duel_id = str(first["duel_id"])
    assert second["duel_id"] == duel_id and second["participant_count"] == 2
    debate_path = Path(str(first["debate_path"]))
    assert debate_path.parent == work_root / "debates"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-shared-cache-across-tenants\.md", debate_path.name)
    ids = {"alice": str(first["participant_id"]), "bob": str(second["participant_id"])}

    # 2. waiting_for_participant: status with the duel id alone, from the project and from a subdirectory
    for cli in (alice, bob):
        status = cli("duel", "status", "--duel-id", duel_id).ok()
        assert status["participant_count"] == 2 and status["next_step"] == "debating"

    # 3. debating: claim-lock, refresh-lock, write, release-lock; bob moves into the debates directory
    turns = example_turns(source)
    in_debates = Cli(work_root / "debates", env=bob.env)
    for number in range(1, 7):
        me = "alice" if number % 2 else "bob"
        cli = alice if me == "alice" else (bob if number == 2 else in_debates)
        lock = cli("duel", "claim-lock", "--duel-id", duel_id, "--participant-id", ids[me]).ok()
        token = str(lock["lease_token"])
        cli("duel", "refresh-lock", "--duel-id", duel_id, "--participant-id", ids[me], "--lease-token", token).ok()
        turn = tmp_path / f"turn-{number}.md"
        turn.write_text(turns[number - 1], encoding="utf-8")
        appended = cli(
            "duel", "append", "--duel-id", duel_id, "--participant-id", ids[me], "--lease-token", token,
            "--file", str(turn),
        ).ok()  # fmt: skip
        if number < 6:
            cli("duel", "release-lock", "--duel-id", duel_id, "--participant-id", ids[me], "--lease-token", token).ok()

    # 4. closing: release-lock --close with the outcome the turns reached
    assert appended["terminal_outcome"] == "ACCEPTED_CONSENSUS"
    closed = in_debates(
        "duel", "release-lock", "--duel-id", duel_id, "--participant-id", ids["bob"], "--lease-token", token,
        "--close", "--outcome", "ACCEPTED_CONSENSUS",
    ).ok()  # fmt: skip
    assert closed["closed"] is True and closed["next_step"] == "completed"
    report = check_path(debate_path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.turns == 6

    # Nothing but the work root got a ledger: no stray .moot/ where the agents ran.
    assert [p.parent.parent for p in tmp_path.rglob(".moot/moot.db")] == [work_root]


def test_a_failed_lookup_creates_nothing(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = Cli(elsewhere)("duel", "status", "--duel-id", "0123456789abcdef")
    data = refused.refused("TOOLS_BAD_INPUT", code=2)
    assert "--root" in data["error"]
    long_id = "x" * 10_000
    refused = Cli(elsewhere)("duel", "claim-lock", "--duel-id", long_id, "--participant-id", "p")
    assert refused.code == 2 and len(refused.data["error"]) < 500  # a long id is cut, not echoed
    assert Cli(elsewhere, env={"MOOT_ROOT": str(elsewhere)})("duel", "status", "--duel-id", "abc").code == 2
    assert not list(tmp_path.rglob(".moot"))

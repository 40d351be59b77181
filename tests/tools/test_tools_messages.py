"""Each message that used to mislead now names the right fix (run through the installed ``moot`` CLI)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tools_helpers import ALICE, BOB, Cli, join, start_duel, write_source

from moot.core.files import MAX_ARTIFACT_BYTES


def test_a_turn_file_over_the_size_limit_is_called_too_large_not_not_utf8(cli: Cli) -> None:
    duel = start_duel(cli)
    token = duel.claim("alice").ok()["lease_token"]
    huge = cli.root / "huge.md"
    huge.write_bytes(b"a" * (MAX_ARTIFACT_BYTES + 1))
    refusal = duel.append("alice", token, huge).refused("FILE_TOO_LARGE", code=2)
    assert "limit" in refusal["error"] and "UTF-8" not in refusal["error"]


def test_a_symlinked_debates_dir_is_called_a_link_not_the_wrong_directory(cli: Cli, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir()
    (cli.root / "debates").symlink_to(real)
    done = cli(
        "duel", "join", "--target", str(write_source(cli.root)), "--debate-dir", str(cli.root / "debates"),
        "--participant-name", "alice", "--harness", "codex", "--run-id", "r",
    )  # fmt: skip
    refusal = done.refused("FILE_SYMLINK", code=2)
    assert "symbolic link" in refusal["error"] and "is not <work root>/debates" not in refusal["error"]


def test_a_holder_that_lost_its_token_is_told_the_real_wait_and_recovers_after_it(cli: Cli) -> None:
    duel = start_duel(cli)
    duel.claim("alice", "--ttl-seconds", "8").ok()  # the token is "lost": never used again
    again = duel.claim("alice", "--retry-after-seconds", "1").refused("TOOLS_LOCK_HELD")
    assert "already hold" in again["error"] and "lost" in again["error"]
    # The wait is what is left of the lease, not the polling guidance (1 s here, rp1's 30 s by default).
    assert 2 <= again["retry_after_seconds"] <= 8
    peer = duel.claim("bob", "--retry-after-seconds", "1").refused("TOOLS_LOCK_HELD")
    assert "already hold" not in peer["error"] and peer["retry_after_seconds"] == 1
    time.sleep(again["retry_after_seconds"] + 1)
    recovered = duel.claim("alice").ok()  # the means the docs describe: claim again once the lease expired
    assert recovered["fencing_token"] == 2


def test_the_waiting_message_names_the_flag_as_typed(cli: Cli) -> None:
    source = write_source(cli.root)
    joined = join(cli, source, ALICE).ok()
    waiting = cli("duel", "claim-lock", "--duel-id", joined["duel_id"], "--participant-id", joined["participant_id"])
    error = waiting.refused("TOOLS_WAITING_FOR_PARTICIPANT")["error"]
    assert "--for-timeout" in error and "with for_timeout" not in error


def test_emit_refuses_the_engines_event_types_and_a_step_with_a_line_break(cli: Cli) -> None:
    base = ["emit", "--harness", "codex", "--workflow", "socratic-duel", "--run-id", "r1"]
    data = json.dumps({"status": "running"})
    refusal = cli(*base, "--type", "turn_accepted", "--step", "debating", "--data", data).refused("TOOLS_EVENT", 2)
    assert "status_change" in refusal["error"]
    cli(*base, "--type", "status_change", "--step", "debating\nclosing", "--data", data).refused("TOOLS_EVENT", 2)
    assert cli("events", "--run-id", "r1", "--json").stdout.strip() == ""  # nothing was stored
    cli(*base, "--type", "status_change", "--step", "debating", "--data", data).ok()


def test_a_ten_thousand_character_name_is_not_echoed(cli: Cli) -> None:
    source = write_source(cli.root)
    for name in ("n" * 10_000, "n" * 10_000 + "\n"):
        done = join(cli, source, {"name": name, "harness": "codex", "model": "gpt-5"})
        assert done.code == 2 and len(done.data["error"]) < 300 and len(done.stderr) < 400


def test_a_rejoin_with_another_harness_or_model_is_refused(cli: Cli) -> None:
    source = write_source(cli.root)
    first = join(cli, source, ALICE).ok()
    assert join(cli, source, ALICE).ok()["rejoined"] is True
    for changed in ({**ALICE, "harness": "codex"}, {**ALICE, "model": "gpt-5"}):
        refusal = join(cli, source, changed).refused("TOOLS_IDENTITY")
        assert "--harness" in refusal["error"] and first["duel_id"] in refusal["error"]
    assert join(cli, source, BOB).ok()["participant_count"] == 2

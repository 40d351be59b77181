"""A refused write leaves no trace, INVALIDATED can close any record, and an edit shows without the sidecar.

Two outside agents drive the installed ``moot`` CLI, as in test_tools_duel.py; the record is then damaged
the ways a person, a full disk or another tool damages it.
"""

from __future__ import annotations

from tools_helpers import Cli, Duel, start_duel

from moot.core.chain import chain_path
from moot.core.files import MAX_ARTIFACT_BYTES
from moot.detect import check_path


def play(duel: Duel, turns: int) -> str:
    """``turns`` accepted turns, alternating; returns the lease token of the last speaker (released)."""
    token = ""
    for number in range(1, turns + 1):
        me = "alice" if number % 2 else "bob"
        token = duel.claim(me).ok()["lease_token"]
        duel.append(me, token, duel.write_turn(number)).ok()
        duel.release(me, token).ok()
    return token


def padded(turn: str, size: int) -> str:
    """The turn with its Position paragraph grown to about ``size`` bytes (one long paragraph)."""
    head, rest = turn.split("**Position**\n", 1)
    return f"{head}**Position**\n{'evidence ' * (size // 9)}{rest}"


def test_a_turn_refused_for_size_leaves_record_chain_and_ledger_as_they_were(cli: Cli) -> None:
    duel = start_duel(cli)
    big = MAX_ARTIFACT_BYTES * 3 // 8  # three of them are over the limit, two are not
    for number in (1, 2, 3):
        duel.turns[number - 1] = padded(duel.turns[number - 1], big)
    play(duel, 2)
    before, chain_before = duel.artifact_bytes(), chain_path(duel.debate_path).read_bytes()

    token = duel.claim("alice").ok()["lease_token"]
    refusal = duel.append("alice", token, duel.write_turn(3)).refused("FILE_TOO_LARGE")
    assert "nothing was written" in refusal["error"] and "not UTF-8" not in refusal["error"]
    assert duel.artifact_bytes() == before
    assert chain_path(duel.debate_path).read_bytes() == chain_before
    assert duel.status()["turn_count"] == 2 and duel.status()["artifact"]["turns"] == 2
    assert check_path(duel.debate_path).exit_code == 0  # still a readable, valid record

    closed = duel.release("alice", token, "--close", "--outcome", "INVALIDATED", "--reason", "turn 3 is too long")
    assert closed.ok()["next_step"] == "invalidated"
    report = check_path(duel.debate_path)
    assert report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "INVALIDATED" and report.summary.outcome.reason == "turn 3 is too long"


def test_invalidated_closes_a_record_with_a_byte_that_is_not_utf8(cli: Cli) -> None:
    duel = start_duel(cli)
    play(duel, 1)
    damaged = duel.debate_path.read_bytes().replace(b"## Turn 1", b"## Turn\xff 1", 1)
    duel.debate_path.write_bytes(damaged)
    token = duel.claim("bob").ok()["lease_token"]
    duel.release("bob", token, "--close", "--outcome", "DISSENT").refused("FILE_NOT_UTF8")
    assert duel.artifact_bytes() == damaged

    closed = duel.release("bob", token, "--close", "--outcome", "INVALIDATED", "--reason", "a byte was damaged.")
    assert closed.ok()["closed"] is True and closed.ok()["next_step"] == "invalidated"
    after = duel.artifact_bytes()
    assert after is not None and after.startswith(damaged)  # the damaged bytes are kept as they were
    tail = after[len(damaged) :].decode("utf-8")
    assert "**Outcome**: INVALIDATED" in tail and "**Reason**: a byte was damaged." in tail
    assert "damaged.." not in tail  # the summary does not double the reason's period
    status = duel.status()
    assert (status["status"], status["outcome"], status["next_step"]) == ("closed", "INVALIDATED", "invalidated")


def test_invalidated_closes_a_record_grown_past_the_limit_and_names_why_without_a_reason(cli: Cli) -> None:
    duel = start_duel(cli)
    play(duel, 1)
    with duel.debate_path.open("ab") as record:
        record.write(b"x" * (MAX_ARTIFACT_BYTES + 1))
    token = duel.claim("bob").ok()["lease_token"]
    closed = duel.release("bob", token, "--close", "--outcome", "INVALIDATED").ok()
    assert closed["next_step"] == "invalidated"
    assert duel.status()["outcome"] == "INVALIDATED"
    with duel.debate_path.open("rb") as record:
        record.seek(-2000, 2)
        tail = record.read().decode("utf-8", "replace")
    assert "**Outcome**: INVALIDATED" in tail and "over the" in tail and "-byte limit" in tail


def test_an_edit_shows_without_the_chain_sidecar(cli: Cli) -> None:
    duel = start_duel(cli)
    play(duel, 2)
    text = duel.debate_path.read_text(encoding="utf-8")
    assert "<!-- moot-chain turns=2 head=" in text  # the chain's head travels inside the record
    chain_path(duel.debate_path).unlink()

    untouched = check_path(duel.debate_path)  # a record moot wrote keeps its chain: its loss is an error itself
    assert untouched.exit_code == 1 and [v.rule for v in untouched.errors] == ["CHAIN_MISSING"]

    duel.debate_path.write_text(text.replace("per-tenant floor before rollout", "per-tenant floor after"), "utf-8")
    edited = check_path(duel.debate_path)
    assert edited.exit_code == 1
    assert {v.rule for v in edited.violations} >= {"PRIOR_TURN_MODIFIED", "CHAIN_MISSING"}
    assert edited.summary is not None and edited.summary.outcome is not None
    assert edited.summary.outcome.name == "INVALIDATED"
    status = duel.status()  # the record says INVALIDATED: close it, rather than debate on
    assert status["artifact"]["terminal_outcome"] == "INVALIDATED" and status["next_step"] == "closing"

    cut = text[: text.index("---\n\n## Turn 2")]
    duel.debate_path.write_text(cut, "utf-8")
    assert "PRIOR_TURN_REMOVED" in {v.rule for v in check_path(duel.debate_path).errors}

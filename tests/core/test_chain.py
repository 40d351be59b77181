"""Tamper evidence: editing or removing an accepted turn is reported with its rule id."""

from __future__ import annotations

from pathlib import Path

from moot.core.chain import chain_path, record_chain, verify_chain

TURNS = ["turn one\n", "turn two\n", "turn three\n"]


def test_untouched_turns_verify(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    record.write_text("".join(TURNS))
    record_chain(record, TURNS)
    assert chain_path(record).name == ".debate.md.chain"
    assert verify_chain(record, TURNS) == []


def test_edited_turn_is_prior_turn_modified(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    record_chain(record, TURNS)
    edited = [TURNS[0], "turn two, improved afterwards\n", TURNS[2]]
    found = verify_chain(record, edited, turn_lines=[1, 5, 9])
    assert [(v.rule, v.turn, v.line) for v in found] == [("PRIOR_TURN_MODIFIED", 2, 5)]


def test_removed_turn_is_reported(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    record_chain(record, TURNS)
    assert [v.rule for v in verify_chain(record, TURNS[:2])] == ["PRIOR_TURN_REMOVED"]


def test_new_turns_beyond_the_chain_are_not_flagged(tmp_path: Path) -> None:
    # A crash between the record write and the chain write leaves a longer record: not tampering.
    record = tmp_path / "debate.md"
    record_chain(record, TURNS[:2])
    assert verify_chain(record, TURNS) == []


def test_damaged_chain_is_a_warning(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    chain_path(record).write_text("not json\n")
    found = verify_chain(record, TURNS)
    assert [(v.rule, v.is_error) for v in found] == [("CHAIN_UNREADABLE", False)]


def test_record_without_chain_is_checked_by_rules_alone(tmp_path: Path) -> None:
    assert verify_chain(tmp_path / "debate.md", TURNS) == []

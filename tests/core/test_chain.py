"""Tamper evidence: editing or removing an accepted turn is reported with its rule id, a record moot wrote
without its whole chain is an error, and only a chain one write short is repaired."""

from __future__ import annotations

import json
from pathlib import Path

from moot.core.chain import (
    ChainMark,
    chain_path,
    inspect_chain,
    marks_of,
    record_chain,
    repair_chain,
    split_mark,
    turn_digest,
    verify_chain,
    with_mark,
)

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


def test_a_chain_one_write_short_is_an_error_that_a_repair_completes(tmp_path: Path) -> None:
    # A crash between the record's write and the chain's append: the turn and its mark are in the record.
    record = tmp_path / "debate.md"
    record_chain(record, TURNS[:2])
    check = inspect_chain(record, TURNS, [1, 5, 9], marks_of(TURNS))
    assert [(v.rule, v.is_error, v.turn, v.line) for v in check.violations] == [("CHAIN_SHORT", True, 3, 9)]
    assert check.repairable and check.blocking == []
    assert repair_chain(record, TURNS, marks_of(TURNS))
    assert verify_chain(record, TURNS, marks=marks_of(TURNS)) == []


def test_a_chain_more_than_one_write_short_stays_an_error(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    record_chain(record, TURNS[:1])
    check = inspect_chain(record, TURNS, marks=marks_of(TURNS))
    assert [v.rule for v in check.blocking] == ["CHAIN_SHORT"] and not check.repairable
    assert not repair_chain(record, TURNS, marks_of(TURNS))
    assert len(chain_path(record).read_text().splitlines()) == 1


def test_a_short_chain_whose_missing_turn_disagrees_with_its_mark_is_not_repaired(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    record_chain(record, TURNS[:2])
    edited = [*TURNS[:2], "turn three, edited after the crash\n"]
    check = inspect_chain(record, edited, [1, 5, 9], marks_of(TURNS))
    assert {(v.rule, v.turn, v.line) for v in check.violations} == {
        ("PRIOR_TURN_MODIFIED", 3, 9),
        ("CHAIN_SHORT", 3, 9),
    }
    assert not check.repairable and not repair_chain(record, edited, marks_of(TURNS))


def test_one_unmarked_turn_after_the_chain_is_adopted_and_two_are_not(tmp_path: Path) -> None:
    # A seed agent that appends a turn by hand to a record moot wrote: the next writer of moot adopts it.
    record = tmp_path / "debate.md"
    record_chain(record, TURNS[:2])
    assert inspect_chain(record, TURNS, marks=marks_of(TURNS[:2])).repairable
    record_chain(record, TURNS[:1])
    assert not inspect_chain(record, TURNS, marks=marks_of(TURNS[:1])).repairable


def test_a_damaged_chain_is_an_error(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    chain_path(record).write_text("not json\n")
    found = verify_chain(record, TURNS)
    assert [(v.rule, v.is_error) for v in found] == [("CHAIN_UNREADABLE", True)]


def test_a_chain_whose_rows_were_rewritten_for_an_edit_is_damaged(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    record_chain(record, TURNS)
    edited = [TURNS[0], "turn two, improved afterwards\n", TURNS[2]]
    rows = chain_path(record).read_text().splitlines()
    forged = json.loads(rows[1]) | {"digest": turn_digest(edited[1])}
    chain_path(record).write_text("\n".join([rows[0], json.dumps(forged), rows[2]]) + "\n")
    assert [v.rule for v in verify_chain(record, edited)] == ["CHAIN_UNREADABLE"]


def test_without_the_sidecar_the_marks_locate_an_edit_and_the_loss_is_an_error(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    edited = [TURNS[0], "turn two, improved afterwards\n", TURNS[2]]
    found = verify_chain(record, edited, [1, 5, 9], marks_of(TURNS))
    assert [(v.rule, v.turn, v.line) for v in found] == [("PRIOR_TURN_MODIFIED", 2, 5), ("CHAIN_MISSING", None, None)]
    assert all(v.is_error for v in found)


def test_a_record_with_moots_other_files_beside_it_needs_its_chain(tmp_path: Path) -> None:
    # The marks removed with the sidecar: the run state moot keeps beside the record still says moot wrote it.
    record = tmp_path / "debate.md"
    record.write_text("".join(TURNS))
    assert verify_chain(record, TURNS) == []
    record.with_name(".debate.md.run.json").write_text("{}")
    assert [v.rule for v in verify_chain(record, TURNS)] == ["CHAIN_MISSING"]
    assert not repair_chain(record, TURNS)  # never recreated: that would hide an edit made meanwhile


def test_a_record_another_tool_wrote_gets_its_chain_from_its_first_writer(tmp_path: Path) -> None:
    record = tmp_path / "debate.md"
    record.write_text("".join(TURNS))
    assert repair_chain(record, TURNS)
    assert len(chain_path(record).read_text().splitlines()) == 3


def test_a_file_that_is_one_turn_keeps_its_text_apart_from_its_mark() -> None:
    for text in ("", "speech\n", "speech", "two\n\nparagraphs\n\n"):
        mark = ChainMark.of([text])
        assert split_mark(with_mark(text, mark)) == (text, mark)
    assert split_mark("written by hand\n") == ("written by hand\n", None)


def test_record_without_chain_is_checked_by_rules_alone(tmp_path: Path) -> None:
    assert verify_chain(tmp_path / "debate.md", TURNS) == []


def test_turns_written_by_hand_into_a_record_moot_only_began_are_checked_by_the_rules(tmp_path: Path) -> None:
    # `moot roundtable start` (an empty chain, no mark, no run) and seed agents writing every speech.
    record = tmp_path / "debate.md"
    record_chain(record, [])
    assert verify_chain(record, TURNS) == []
    assert repair_chain(record, TURNS) and len(chain_path(record).read_text().splitlines()) == 3
    # Once moot ran on it, its turns are moot's to account for.
    record_chain(record, [])
    record.with_name(".debate.md.usage.jsonl").write_text("{}\n")
    assert [v.rule for v in verify_chain(record, TURNS)] == ["CHAIN_SHORT"]

"""moot.plugin.TurnRecord as a protocol author uses it: the estimate example's record is one, written only with its
own read, protocol and render_turn."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_registry_plugin import PLUGIN_DIR

from moot.core.chain import ChainMark, chain_path
from moot.plugin import ProtocolViolationError

sys.path.insert(0, str(PLUGIN_DIR))
from moot_estimate import record  # the example package, importable from its folder
from moot_estimate.protocol import Config, Estimate

CONFIG = Config(question="How many moons has Mars?", estimators=("ada", "bo", "cy"), rounds=2)


def estimate(who: str, value: float, reason: str = "it is what I remember") -> Estimate:
    return Estimate(estimator=who, round=1, value=value, reason=reason)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = record.path_for(tmp_path, CONFIG.question)
    record.create(path, CONFIG)
    return path


def test_a_round_appended_at_once_is_checked_and_chained(path: Path) -> None:
    state = record.RECORD.append(path, [estimate("ada", 2), estimate("bo", 2), estimate("cy", 3)])
    assert len(state.estimates) == 3
    text = path.read_text(encoding="utf-8")
    assert text.count("<!-- moot-chain") == 1 and text.rstrip().endswith("-->")  # one mark after the round
    report = record.RECORD.check(path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.turns == 3


def test_a_turn_that_breaks_a_rule_or_would_not_read_back_leaves_the_record_as_it_was(path: Path) -> None:
    record.RECORD.append(path, [estimate("ada", 2)])
    before = (path.read_bytes(), chain_path(path).read_bytes())
    with pytest.raises(ProtocolViolationError) as out_of_turn:
        record.RECORD.append(path, [estimate("ada", 3)])  # ada's estimate of round 1 is in
    assert [v.rule for v in out_of_turn.value.violations] == ["ESTIMATE_ORDER"]
    with pytest.raises(ProtocolViolationError) as two_lines:
        record.RECORD.append(path, [estimate("bo", 2, "first line\nsecond line")])
    assert [v.rule for v in two_lines.value.violations] == ["ESTIMATE_LINE"]
    assert (path.read_bytes(), chain_path(path).read_bytes()) == before


def test_an_edited_estimate_is_found_at_its_line(path: Path) -> None:
    record.RECORD.append(path, [estimate("ada", 2), estimate("bo", 2)])
    path.write_text(path.read_text(encoding="utf-8").replace("- bo (round 1): 2", "- bo (round 1): 5"), "utf-8")
    (edited,) = record.RECORD.check(path).errors
    line = path.read_text(encoding="utf-8").splitlines().index("- bo (round 1): 5 — it is what I remember") + 1
    assert (edited.rule, edited.line, edited.turn) == ("PRIOR_TURN_MODIFIED", line, 2)
    with pytest.raises(ProtocolViolationError):
        record.RECORD.append(path, [estimate("cy", 3)])


def test_a_chain_a_crash_left_short_is_completed_on_the_next_write(path: Path) -> None:
    record.RECORD.append(path, [estimate("ada", 2)])
    chain = chain_path(path)
    rows = chain.read_text(encoding="utf-8").splitlines(keepends=True)
    record.RECORD.append(path, [estimate("bo", 2)])
    chain.write_text("".join(rows), encoding="utf-8")  # killed between the record's append and its chain's
    report = record.RECORD.check(path)
    assert [v.rule for v in report.errors] == ["CHAIN_SHORT"] and report.repairable
    assert record.RECORD.repair(path) is True
    assert record.RECORD.check(path).exit_code == 0
    chain.write_text("".join(rows), encoding="utf-8")
    record.RECORD.append(path, [estimate("cy", 3)])  # a writer completes it first
    report = record.RECORD.check(path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.turns == 3


class CountingReads(record.EstimateRecord):
    """The example's record, counting how often the whole record is read."""

    def __init__(self) -> None:
        self.reads = 0

    def read(self, text: str, file: str) -> record.Parsed:
        self.reads += 1
        return super().read(text, file)


def test_a_writer_reads_the_record_once_then_only_what_it_appends(tmp_path: Path) -> None:
    names = tuple(f"e{n}" for n in range(8))
    many = Config(question="How many moons has Mars?", estimators=names, rounds=5)
    path = record.path_for(tmp_path, many.question)
    record.create(path, many)
    counting = CountingReads()
    writer = counting.writer(path)
    assert counting.reads == 1
    for round_ in range(1, 6):
        for who in names:
            writer.append([Estimate(estimator=who, round=round_, value=round_, reason=f"{who} in round {round_}")])
    assert counting.reads == 1  # 40 appends, each read back alone
    report = record.RECORD.check(path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.turns == 40
    assert report.summary.outcome is not None and report.summary.outcome.name == "ESTIMATED"
    assert path.read_text(encoding="utf-8").count("<!-- moot-chain") == 40


def test_a_writer_reads_again_what_another_wrote_in_between(path: Path) -> None:
    writer = record.RECORD.writer(path)
    writer.append([estimate("ada", 2)])
    record.RECORD.append(path, [estimate("bo", 2)])  # another process's write
    with pytest.raises(ProtocolViolationError):
        writer.append([estimate("bo", 3)])  # against the record on disk, bo has estimated this round
    before = path.read_bytes(), chain_path(path).read_bytes()
    with pytest.raises(ProtocolViolationError):
        writer.append([estimate("cy", 3, "first line\nsecond line")])  # would not read back: nothing written
    assert (path.read_bytes(), chain_path(path).read_bytes()) == before
    written = writer.append([estimate("cy", 3)])
    assert len(written.state.estimates) == 3 and written.state == record.RECORD.load(path)[1]
    assert record.RECORD.check(path).exit_code == 0


def test_a_writer_takes_a_turn_that_is_legal_only_after_anothers_write(path: Path) -> None:
    writer = record.RECORD.writer(path)
    writer.append([estimate("ada", 2)])
    record.RECORD.append(path, [estimate("bo", 2), estimate("cy", 3)])  # round 1 is complete on disk
    second = Estimate(estimator="ada", round=2, value=2, reason="the others agree")
    assert len(writer.append([second]).state.estimates) == 4  # not judged against the writer's older state
    assert record.RECORD.check(path).exit_code == 0


class DroppingMarks(record.EstimateRecord):
    """A format whose turns read back but whose chain marks do not: such a write would leave the chain unreadable."""

    def read_piece(self, piece: str, file: str) -> record.Parsed | None:
        reading = super().read_piece(piece, file)
        if reading is not None:
            reading.marks.clear()
        return reading


def test_a_turn_whose_chain_mark_would_not_read_back_is_refused_and_nothing_is_written(path: Path) -> None:
    record.RECORD.append(path, [estimate("ada", 2)])
    before, chain = path.read_bytes(), chain_path(path).read_bytes()
    with pytest.raises(ProtocolViolationError):
        DroppingMarks().append(path, [estimate("bo", 2)])
    assert (path.read_bytes(), chain_path(path).read_bytes()) == (before, chain)


class OneMark(record.EstimateRecord):
    """A format that keeps one chain mark, after the last estimate: every write rewrites the record."""

    def rewritten(self, text: str, file: str, turns: Sequence[Estimate], state: object) -> str | None:
        reading = self.read(text, file)
        assert reading.config is not None
        texts = [*(entry.text for entry in reading.turns), *(self.render_turn(turn) for turn in turns)]
        return record.header(reading.config) + "\n".join(texts) + "\n" + ChainMark.of(texts).line() + "\n"


def test_turns_that_change_what_comes_before_them_rewrite_the_record_with_every_earlier_turn_kept(path: Path) -> None:
    writer = OneMark().writer(path)
    for who, value in (("ada", 2), ("bo", 2)):
        writer.append([estimate(who, value)])
    with path.open(encoding="utf-8") as old:
        writer.append([estimate("cy", 3)])
        assert (
            "- cy (round 1)" not in old.read()
        )  # a new file renamed into place: the old one was not cut and rewritten
    text = path.read_text(encoding="utf-8")
    assert text.count("<!-- moot-chain") == 1 and text.rstrip().endswith("-->")
    assert len(chain_path(path).read_text(encoding="utf-8").splitlines()) == 3
    report = record.RECORD.check(path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.turns == 3
    record.RECORD.append(path, [Estimate(estimator="ada", round=2, value=2, reason="the others agree")])
    assert len(writer.append([Estimate(estimator="bo", round=2, value=2, reason="so do I")]).state.estimates) == 5
    assert record.RECORD.check(path).exit_code == 0  # the rewrite took the other writer's estimate along


class EditingEarlier(OneMark):
    """A rewrite that changes an earlier estimate: what the chain exists to catch."""

    def rewritten(self, text: str, file: str, turns: Sequence[Estimate], state: object) -> str | None:
        whole = super().rewritten(text, file, turns, state)
        return None if whole is None else whole.replace("(round 1): 2 —", "(round 1): 4 —", 1)


class MarkingShort(OneMark):
    """A rewrite whose chain mark leaves out the new estimate."""

    def rewritten(self, text: str, file: str, turns: Sequence[Estimate], state: object) -> str | None:
        whole = super().rewritten(text, file, turns, state)
        reading = self.read(text, file)
        mark = ChainMark.of([entry.text for entry in reading.turns]).line()
        return None if whole is None else whole.rsplit("<!--", 1)[0] + mark + "\n"


@pytest.mark.parametrize("format_", [EditingEarlier, MarkingShort])
def test_a_rewrite_that_loses_an_earlier_turn_or_the_chain_is_refused_and_nothing_is_written(
    path: Path, format_: type[OneMark]
) -> None:
    OneMark().append(path, [estimate("ada", 2)])
    before = path.read_bytes(), chain_path(path).read_bytes()
    with pytest.raises(ProtocolViolationError) as refused:
        format_().append(path, [estimate("bo", 2)])
    assert [v.rule for v in refused.value.violations] == ["ESTIMATE_LINE"]
    assert (path.read_bytes(), chain_path(path).read_bytes()) == before
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []

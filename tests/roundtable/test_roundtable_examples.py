"""Hand-written meeting directories: valid ones pass `moot check`, each invalid one trips its rule.

An invalid example is named after the rule it breaks, optionally with ``--variant``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.cli.check import report_text
from moot.detect import check_path
from moot.errors import Severity
from moot.protocols.roundtable.machine import RULES

EXAMPLES = Path(__file__).parent / "examples"
VALID = sorted((EXAMPLES / "valid").iterdir())
INVALID = sorted((EXAMPLES / "invalid").iterdir())


def rule_of(example: Path) -> str:
    return example.name.split("--")[0]


@pytest.mark.parametrize("meeting", VALID, ids=lambda p: p.name)
def test_valid_example_passes(meeting: Path) -> None:
    report = check_path(meeting)
    assert report.violations == []
    assert report.exit_code == 0
    assert report.protocol == "roundtable"


@pytest.mark.parametrize("meeting", INVALID, ids=lambda p: p.name)
def test_invalid_example_reports_its_rule(meeting: Path) -> None:
    rule = rule_of(meeting)
    report = check_path(meeting)
    hits = [v for v in report.violations if v.rule == rule]
    assert hits, f"{rule} not reported; got {[str(v) for v in report.violations]}"
    warning_only = RULES[rule].severity is Severity.WARNING
    assert report.exit_code == (0 if warning_only else 1)
    for violation in hits:
        # Located: a file inside the meeting, and the rule id in what the user reads.
        assert violation.file is not None and Path(violation.file).parent == meeting
        assert rule in str(violation)


def test_every_rule_has_an_invalid_example() -> None:
    assert {rule.id for rule in RULES} <= {rule_of(example) for example in INVALID}


def test_checking_a_file_inside_a_meeting_checks_the_meeting() -> None:
    meeting = EXAMPLES / "invalid" / "ROUNDTABLE_SPEAKER_ORDER"
    by_file = check_path(meeting / "turn.json")
    assert by_file.path == str(meeting)
    assert [v.rule for v in by_file.violations] == [v.rule for v in check_path(meeting).violations]


def test_only_crash_leftovers_are_repairable() -> None:
    repairable = {example.name for example in INVALID if check_path(example).repairable}
    assert repairable == {"ROUNDTABLE_UNCOMMITTED_SPEECH", "ROUNDTABLE_UNCOMMITTED_MINUTES"}


def test_summary_of_a_closed_consensus_meeting() -> None:
    report = check_path(EXAMPLES / "valid" / "缓存设计")
    assert report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "closed"
    assert report.summary.outcome.consensus is True
    assert report.summary.turns == 4  # three speeches and the moderator's minutes
    assert report.summary.round == 2  # the round of the last speech, not the one turn.json moved on to
    assert report.summary.next_speaker is None


def test_concluding_meeting_waits_for_the_moderator() -> None:
    report = check_path(EXAMPLES / "valid" / "concluding-at-limit")
    assert report.summary is not None
    assert report.summary.outcome is None
    assert report.summary.next_speaker == "moderator"
    assert report.summary.detail["status"] == "concluding"


def test_meeting_closed_at_the_limit_is_not_consensus() -> None:
    report = check_path(EXAMPLES / "valid" / "closed-at-limit")
    assert report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.consensus is False
    assert "limit" in report.summary.outcome.reason


@pytest.mark.parametrize(
    ("name", "rule"),
    [("ROUNDTABLE_EMPTY_SPEECH--headings-only", "ROUNDTABLE_EMPTY_SPEECH"), ("ROUNDTABLE_ECHO", "ROUNDTABLE_ECHO")],
)
def test_a_hollow_speech_is_reported_at_its_file_and_turn(name: str, rule: str) -> None:
    report = check_path(EXAMPLES / "invalid" / name)
    (violation,) = report.violations
    assert violation.rule == rule and violation.turn == 2
    assert violation.file is not None and violation.file.endswith("002_reviewer.md")
    assert f"{rule} (turn 2): 002_reviewer.md " in report_text(report)

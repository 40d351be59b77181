"""Hand-written debate records: valid ones pass `moot check`, each invalid one trips the rule it is named after."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.cli.check import report_text
from moot.detect import check_path
from moot.errors import Severity
from moot.protocols.agora.machine import MEDIATOR, RULES

EXAMPLES = Path(__file__).parent / "examples"
VALID = sorted((EXAMPLES / "valid").glob("*.md"))
INVALID = sorted((EXAMPLES / "invalid").glob("*.md"))
# A record whose configuration is unsound has nothing to replay: moot check says "unreadable" (2).
UNREPLAYABLE = {"AGORA_CONFIG"}


def rule_of(example: Path) -> str:
    return example.stem.split("--")[0]


@pytest.mark.parametrize("record", VALID, ids=lambda p: p.name)
def test_valid_example_passes(record: Path) -> None:
    report = check_path(record)
    assert report.violations == []
    assert report.exit_code == 0
    assert report.protocol == "agora"


@pytest.mark.parametrize("record", INVALID, ids=lambda p: p.name)
def test_invalid_example_reports_its_rule(record: Path) -> None:
    rule = rule_of(record)
    report = check_path(record)
    hits = [v for v in report.violations if v.rule == rule]
    assert hits, f"{rule} not reported; got {[str(v) for v in report.violations]}"
    warning_only = RULES[rule].severity is Severity.WARNING
    assert report.exit_code == (0 if warning_only else 2 if rule in UNREPLAYABLE else 1)
    for violation in hits:
        assert violation.file == str(record) and violation.line is not None
        assert rule in str(violation)


def test_every_rule_has_an_invalid_example() -> None:
    assert {rule.id for rule in RULES} <= {rule_of(example) for example in INVALID}


def test_summary_of_the_seed_debate() -> None:
    report = check_path(EXAMPLES / "valid" / "consensus-fact-based.md")
    assert report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "CONSENSUS" and report.summary.outcome.consensus
    assert report.summary.turns == 4 and report.summary.next_speaker is None
    assert report.summary.detail["last_signals"] == {"advocate": "no-change", "skeptic": "approve"}


def test_mediator_example_reaches_consensus_on_the_mediators_proposal() -> None:
    report = check_path(EXAMPLES / "valid" / "mediator-compromise.md")
    assert report.summary is not None and report.summary.outcome is not None
    assert "proposal-mediator" in report.summary.outcome.reason
    assert report.summary.detail["mediator_needed"] is True
    assert report.summary.detail["proposals"]["proposal-mediator"] == MEDIATOR


def test_timeout_example_is_not_consensus() -> None:
    report = check_path(EXAMPLES / "valid" / "timeout.md")
    assert report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "TIMEOUT" and not report.summary.outcome.consensus


def test_open_debate_names_the_next_speaker_and_uses_header_defaults() -> None:
    report = check_path(EXAMPLES / "valid" / "in-progress-defaults.md")
    assert report.summary is not None and report.summary.outcome is None
    assert report.summary.next_speaker == "maintainer"
    assert report.summary.detail["max_turns"] == 20 and report.summary.detail["deadlock_window"] == 3


def test_the_format_document_lists_every_rule() -> None:
    document = (Path(__file__).parents[2] / "docs" / "formats.md").read_text(encoding="utf-8")
    assert [rule.id for rule in RULES if f"| `{rule.id}` |" not in document] == []


@pytest.mark.parametrize(
    ("name", "rule", "turn"), [("AGORA_EMPTY_TEXT--brackets", "AGORA_EMPTY_TEXT", 2), ("AGORA_ECHO", "AGORA_ECHO", 4)]
)
def test_a_hollow_turn_is_reported_at_its_message(name: str, rule: str, turn: int) -> None:
    path = EXAMPLES / "invalid" / f"{name}.md"
    report = check_path(path)
    (violation,) = report.violations
    assert violation.rule == rule and violation.turn == turn and violation.line is not None
    assert '"message"' in path.read_text(encoding="utf-8").splitlines()[violation.line - 1]
    assert f"{rule} (turn {turn}): " in report_text(report)

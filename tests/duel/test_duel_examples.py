"""The hand-written example records: valid ones check clean, each invalid one reports the rule it is named after."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moot.detect import check_path
from moot.errors import Severity
from moot.protocols.duel.machine import RULES
from moot.protocols.duel.record import FORMAT_RULES

EXAMPLES = Path(__file__).parent / "examples"
VALID = sorted((EXAMPLES / "valid").glob("*.md"))
INVALID = sorted((EXAMPLES / "invalid").glob("*.md"))
DOC = Path(__file__).parents[2] / "docs" / "formats.md"
WARNINGS = {rule.id for book in (RULES, FORMAT_RULES) for rule in book if rule.severity is Severity.WARNING}


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_example_checks_clean(path: Path) -> None:
    report = check_path(path)
    assert report.protocol == "duel"
    assert report.exit_code == 0, [str(v) for v in report.violations]
    assert report.violations == []


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_example_reports_its_rule(path: Path) -> None:
    rule = path.stem
    report = check_path(path)
    named = [v for v in report.violations if v.rule == rule]
    assert named, f"{rule} not reported; got {[str(v) for v in report.violations]}"
    assert report.exit_code == (0 if rule in WARNINGS else 1)
    assert all(v.file == str(path) for v in named)
    if rule != "PRIOR_TURN_REMOVED":  # a removed turn has no line left to point at
        assert all(v.line is not None for v in named)


def test_every_duel_rule_has_an_invalid_example() -> None:
    named = {path.stem for path in INVALID}
    missing = {rule.id for book in (RULES, FORMAT_RULES) for rule in book} - named
    assert not missing


def test_expected_outcomes_of_the_valid_examples() -> None:
    statuses = {path.stem: check_path(path).summary for path in VALID}
    assert {name: summary.status for name, summary in statuses.items() if summary is not None} == {
        "consensus-six-turns": "ACCEPTED_CONSENSUS",
        "dissent-three-turns": "DISSENT",
        "max-turns-two": "MAX_TURNS",
        "open-candidate-convergence": "open",
        "rp1-style-crlf": "open",
        "timeout-one-participant": "TIMEOUT",
    }


def test_tampered_examples_are_invalidated() -> None:
    for name in ("PRIOR_TURN_MODIFIED", "PRIOR_TURN_REMOVED"):
        summary = check_path(EXAMPLES / "invalid" / f"{name}.md").summary
        assert summary is not None and summary.status == "INVALIDATED"


def test_the_documented_example_is_a_valid_complete_duel(tmp_path: Path) -> None:
    fenced = re.findall(r"^````markdown\n(.*?)^````$", DOC.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
    blocks = [block for block in fenced if block.startswith("# Socratic Duel:")]
    assert len(blocks) == 1
    path = tmp_path / "example.md"
    path.write_text(blocks[0], encoding="utf-8")
    report = check_path(path)
    assert report.violations == [] and report.summary is not None
    assert report.summary.turns == 6 and report.summary.status == "ACCEPTED_CONSENSUS"


def test_an_unmarked_unresolved_item_is_located_on_its_own_line() -> None:
    path = EXAMPLES / "invalid" / "DUEL_UNRESOLVED_MARKER.md"
    lines = path.read_text(encoding="utf-8").splitlines()
    found = [v for v in check_path(path).violations if v.rule == "DUEL_UNRESOLVED_MARKER"]
    assert found and all(v.line is not None and "The exact cap per tenant" in lines[v.line - 1] for v in found)

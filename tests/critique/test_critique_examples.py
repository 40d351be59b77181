"""Hand-written dialogue records: each valid one checks clean with the expected state, each invalid
one (named after its rule id) reports exactly that rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.cli.check import report_text
from moot.core.files import FILE_RULES, ExitCode
from moot.detect import check_path
from moot.errors import Severity
from moot.protocols.critique.machine import RULES

EXAMPLES = Path(__file__).parent / "examples"
INVALID = sorted((EXAMPLES / "invalid").glob("*.md"))

# file -> (status, next speaker, round, turns)
VALID = {
    "planning-done.md": ("DONE", None, 2, 4),
    "header-only.md": ("open", "proposer", 1, 0),
    "pair-max-rounds.md": ("MAX_ROUNDS", None, 2, 4),
    "custom-stuck-resumed.md": ("open", "skeptic", 2, 4),
    "extended-rounds.md": ("DONE", None, 6, 12),
    "review-crlf-tolerant.md": ("open", "author", 2, 2),
    # moot wrote turns 1, 2 and 4, each followed by its chain mark; a seed agent wrote turn 3 by hand.
    "moot-written.md": ("DONE", None, 2, 4),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_example(name: str) -> None:
    report = check_path(EXAMPLES / "valid" / name)
    assert report.protocol == "critique"
    assert report.violations == [] and report.exit_code is ExitCode.VALID
    assert report.summary is not None
    summary = report.summary
    assert (summary.status, summary.next_speaker, summary.round, summary.turns) == VALID[name]


def test_every_valid_example_is_listed() -> None:
    assert sorted(p.name for p in (EXAMPLES / "valid").glob("*.md")) == sorted(VALID)


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_example_reports_its_rule(path: Path) -> None:
    rule = RULES[path.stem] if path.stem in RULES else FILE_RULES[path.stem]
    report = check_path(path)
    assert {v.rule for v in report.violations} == {rule.id}, [str(v) for v in report.violations]
    expected = ExitCode.VALID if rule.severity is Severity.WARNING else ExitCode.VIOLATIONS
    assert report.exit_code is expected
    for violation in report.violations:
        assert violation.file == str(path) and violation.message.endswith(".")
        if rule.id != "PRIOR_TURN_REMOVED":  # a removed turn has no line left to point at
            assert violation.line is not None


def test_every_rule_has_an_invalid_example() -> None:
    stems = {p.stem for p in INVALID}
    assert {rule.id for rule in RULES} <= stems
    assert {"PRIOR_TURN_MODIFIED", "PRIOR_TURN_REMOVED"} <= stems  # Rule 1, append only


def test_violation_lines_point_at_the_offending_line() -> None:
    path = EXAMPLES / "invalid" / "CRITIQUE_STATUS_LAST.md"
    (violation,) = check_path(path).violations
    lines = path.read_text(encoding="utf-8").splitlines()
    assert violation.line is not None and lines[violation.line - 1].startswith("P.S.")
    path = EXAMPLES / "invalid" / "CRITIQUE_STATUS_VALUE.md"
    (violation,) = check_path(path).violations
    assert violation.line is not None
    assert path.read_text(encoding="utf-8").splitlines()[violation.line - 1] == "Status: APPROVED"


def test_the_documented_example_is_the_valid_example() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "formats.md").read_text(encoding="utf-8")
    example = doc.split("```markdown\n", 1)[1].split("```", 1)[0]
    assert example == (EXAMPLES / "valid" / "planning-done.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("rule", "severity"), [("CRITIQUE_EMPTY_MESSAGE", "error"), ("CRITIQUE_ECHO", "warning")])
def test_a_hollow_turn_is_reported_at_its_turn(rule: str, severity: str) -> None:
    path = EXAMPLES / "invalid" / f"{rule}.md"
    (violation,) = check_path(path).violations
    lines = path.read_text(encoding="utf-8").splitlines()
    assert violation.turn == 2 and lines[violation.line - 1].startswith("## [critic] Round 1")  # type: ignore[operator]
    assert f"{path}:{violation.line}: {severity} {rule} (turn 2): " in report_text(check_path(path))

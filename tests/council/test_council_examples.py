"""The hand-written council records: valid ones check clean, each invalid one reports the rule it is named after."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moot.core.files import ExitCode
from moot.detect import check_path
from moot.protocols.council.machine import RULES

EXAMPLES = Path(__file__).parent / "examples"
VALID = sorted((EXAMPLES / "valid").glob("*.md"))
INVALID = sorted((EXAMPLES / "invalid").glob("*.md"))
DOC = Path(__file__).parents[2] / "docs" / "formats.md"


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_example_checks_clean(path: Path) -> None:
    report = check_path(path)
    assert report.protocol == "council"
    assert report.exit_code == 0 and report.violations == [], [str(v) for v in report.violations]


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_example_reports_its_rule(path: Path) -> None:
    rule = path.stem
    report = check_path(path)
    named = [v for v in report.violations if v.rule == rule]
    assert named, f"{rule} not reported; got {[str(v) for v in report.violations]}"
    # A header that configures no council leaves nothing to replay: the record is unreadable.
    assert report.exit_code == (ExitCode.UNREADABLE if rule == "COUNCIL_HEADER" else ExitCode.VIOLATIONS)
    assert all(v.file == str(path) and v.line is not None for v in named)


def test_every_council_rule_has_an_invalid_example() -> None:
    assert {rule.id for rule in RULES} == {path.stem for path in INVALID}
    assert all(rule.id.startswith("COUNCIL_") for rule in RULES)


def test_expected_outcomes_of_the_valid_examples() -> None:
    found = {path.stem: check_path(path).summary for path in VALID}
    assert {name: s.status for name, s in found.items() if s is not None} == {
        "chairman-failed": "FAILED",
        "chairman-fallback": "SYNTHESIZED",
        "confidence-weighted": "SYNTHESIZED",
        "no-quorum": "NO_QUORUM",
        "one-member-without-answer": "SYNTHESIZED",
        "synthesized-three-members": "SYNTHESIZED",
        "synthesized-two-members": "SYNTHESIZED",
    }
    three = found["synthesized-three-members"]
    assert three is not None and three.detail["ranking"] == [["gpt", 2], ["claude", 1], ["smol", 0]]
    assert three.detail["agreement"] == 1.0


def test_the_documented_example_is_a_valid_complete_council(tmp_path: Path) -> None:
    fenced = re.findall(r"^````markdown\n(.*?)^````$", DOC.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
    blocks = [block for block in fenced if block.startswith("# Council:")]
    assert len(blocks) == 1
    path = tmp_path / "example.md"
    path.write_text(blocks[0], encoding="utf-8")
    report = check_path(path)
    assert report.violations == [] and report.summary is not None
    assert report.summary.status == "SYNTHESIZED"


def test_check_enforces_the_quorum_its_header_names_and_an_old_record_without_one_has_two(tmp_path: Path) -> None:
    source = EXAMPLES / "valid" / "one-member-without-answer.md"  # two of three answered, then synthesized
    text = source.read_text(encoding="utf-8")
    assert "- **Quorum:**" not in text and check_path(source).violations == []
    path = tmp_path / "quorum-three.md"
    path.write_text(text.replace("- **Chairman:**", "- **Quorum:** 3\n- **Chairman:**", 1), encoding="utf-8")
    report = check_path(path)
    assert report.exit_code == ExitCode.VIOLATIONS
    assert any(v.rule == "COUNCIL_STAGE_ORDER" and "ended" in v.message and v.line for v in report.violations)
    path.write_text(text.replace("- **Chairman:**", "- **Quorum:** 4\n- **Chairman:**", 1), encoding="utf-8")
    assert [v.rule for v in check_path(path).violations] == ["COUNCIL_HEADER"]  # more than the members

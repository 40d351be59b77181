"""A refusal names a rule moot lists: every rule id moot's code gives a ToolError is one ``moot rules`` prints,
and an error (a ToolError's ``rule=`` becomes a Violation of severity error)."""

from __future__ import annotations

from pathlib import Path

import moot
from moot.cli.rules import rule_books
from moot.core.files import FILE_RULES
from moot.errors import Refused, Severity
from moot.testing import refusal_rule_ids
from moot.tools.errors import TOOL_RULES

SRC = Path(moot.__file__).parent


def named_rule_ids() -> dict[str, list[str]]:
    """The rule ids moot's code gives a refusal, each with where (:func:`moot.testing.refusal_rule_ids`)."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for rule_id, line in refusal_rule_ids(path.read_text(encoding="utf-8")):
            found.setdefault(rule_id, []).append(f"{path.relative_to(SRC)}:{line}")
    return found


def test_every_rule_a_refusal_names_is_a_listed_error() -> None:
    listed = {rule.id: rule for _, book in rule_books(None) for rule in book}
    named = named_rule_ids()
    assert {"TOOLS_LEASE", "TOOLS_UNAVAILABLE", "FILE_SYMLINK", "PRIOR_TURN_REMOVED"} <= set(named)
    unknown = {rule_id: where for rule_id, where in named.items() if rule_id not in listed}
    assert unknown == {}, "a refusal names a rule that `moot rules` does not list"
    assert [rule_id for rule_id in named if listed[rule_id].severity is not Severity.ERROR] == []


def test_the_rules_of_the_tools_and_of_files_are_errors() -> None:
    assert [rule.id for book in (TOOL_RULES, FILE_RULES) for rule in book if rule.severity is not Severity.ERROR] == []


def test_a_refusal_naming_a_rule_carries_it_as_an_error_with_its_message() -> None:
    refusal = Refused("The lease expired; claim the lock again.", rule="TOOLS_LEASE")
    assert refusal.payload()["rules"] == [
        {
            "rule": "TOOLS_LEASE",
            "message": "The lease expired; claim the lock again.",
            "severity": "error",
            "turn": None,
            "file": None,
            "line": None,
        }
    ]
    assert refusal.rules == [TOOL_RULES.violation("TOOLS_LEASE", refusal.message)]

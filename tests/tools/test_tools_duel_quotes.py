"""Quoted excerpts in a duel turn are checked against the source: a fabricated quote is refused with a rule id
and the artifact left alone; the true quote is accepted and marked; moot check tells a foreign record's
unverified quote as a warning and a changed source under moot's marks as an error."""

from __future__ import annotations

from pathlib import Path

from tools_helpers import EXAMPLE, EXAMPLE_SOURCE, SOURCE_TEXT, Cli, start_duel

from moot.detect import check_path

TRUE_QUOTE = '"one global LRU list serves all tenants"'
FABRICATED = '"every tenant gets its own LRU list"'


def test_a_fabricated_quote_is_refused_and_the_true_one_accepted_and_marked(cli: Cli) -> None:
    duel = start_duel(cli)
    lock = duel.claim("alice").ok()
    fabricated = duel.turns[0].replace(TRUE_QUOTE, FABRICATED)
    assert fabricated != duel.turns[0]
    refused = duel.append("alice", lock["lease_token"], duel.write_turn(1, fabricated)).refused("CITATION_UNVERIFIED")
    assert "within 5 lines of line 42" in refused["error"]
    assert duel.artifact_bytes() is None  # a refused first turn creates nothing

    appended = duel.append("alice", lock["lease_token"], duel.write_turn(1)).ok()
    assert appended["turn_number"] == 1
    text = duel.debate_path.read_text(encoding="utf-8")
    source = duel.debate_path.parent.parent / "cache-design.md"
    assert f"line 42: {TRUE_QUOTE} (verified at ../{source.name}:42)" in text
    report = check_path(duel.debate_path)
    assert report.exit_code == 0, [str(v) for v in report.violations]
    assert report.summary is not None
    assert report.summary.detail["grounding"] == {"alice": {"cited": 1, "verified": 1, "share": 1.0}}

    # The source changes under moot's mark: the quote no longer verifies, and that is an error.
    source.write_text(SOURCE_TEXT.replace("One global LRU list", "A per-tenant LRU list"), encoding="utf-8")
    changed = check_path(duel.debate_path)
    assert [(v.rule, v.severity.value) for v in changed.violations] == [("CITATION_UNVERIFIED", "error")]


def test_a_foreign_record_with_an_unverified_quote_gets_a_warning(root: Path) -> None:
    source = root / "cache-design.md"
    source.write_text(SOURCE_TEXT.replace("Memory is billed per tenant.", "Memory is free."), encoding="utf-8")
    record = root / "foreign.md"
    record.write_text(EXAMPLE.read_text(encoding="utf-8").replace(EXAMPLE_SOURCE, str(source)), encoding="utf-8")
    report = check_path(record)
    assert report.exit_code == 0
    unverified = [v for v in report.violations if v.rule == "CITATION_UNVERIFIED"]
    assert [(v.severity.value, v.turn) for v in unverified] == [("warning", 2)]
    assert "line 77" in unverified[0].message
    assert report.summary is not None
    assert report.summary.detail["grounding"]["bob"] == {"cited": 2, "verified": 1, "share": 0.5}

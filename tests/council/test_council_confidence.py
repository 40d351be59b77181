"""Confidence in the council: what `moot check` says of the confidences a record states and of the ranking it
aggregates with them, on the record moot writes now and on one written before confidences."""

from __future__ import annotations

from pathlib import Path

from moot.core.files import ExitCode
from moot.detect import check_path
from moot.protocols.council.view import panels

EXAMPLES = Path(__file__).parent / "examples"
# Three members; gpt ranks claude first and is sure of it (0.9), claude and smol rank gpt first and are not
# (0.3, 0.2): Borda puts gpt first (2 points to 1), the confidence-weighted count claude (0.9 to 0.5).
WEIGHTED = EXAMPLES / "valid" / "confidence-weighted.md"
OLD = EXAMPLES / "valid" / "synthesized-three-members.md"  # written before confidences: no Aggregation line


def edited(tmp_path: Path, source: Path, *changes: tuple[str, str]) -> Path:
    text = source.read_text(encoding="utf-8")
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / "edited.md"
    path.write_text(text, encoding="utf-8")
    return path


def line_of(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), start=1) if line.startswith(text))


def test_a_record_with_confidences_checks_valid_and_shows_them_with_its_aggregation() -> None:
    report = check_path(WEIGHTED)
    assert report.exit_code == 0 and report.violations == []
    assert report.summary is not None
    detail = report.summary.detail
    assert detail["aggregation"] == "confidence"
    assert detail["ranking"] == [["claude", 0.9], ["gpt", 0.5], ["smol", 0]]
    assert detail["confidences"]["gpt"] == {"answer": 0.6, "review": 0.9}
    assert "claude ranked first" in report.summary.outcome.reason  # type: ignore[union-attr]


def test_the_same_reviews_under_borda_rank_another_first_and_check_recomputes_with_the_named_aggregation(
    tmp_path: Path,
) -> None:
    path = edited(tmp_path, WEIGHTED, ("- **Aggregation:** confidence", "- **Aggregation:** borda"))
    report = check_path(path)
    aggregate = [v for v in report.violations if v.rule == "COUNCIL_AGGREGATE"]
    assert aggregate and "gpt 2, claude 1, smol 0" in aggregate[0].message
    assert aggregate[0].line == line_of(path, "## Stage 3")


def test_a_hand_edited_ranking_under_the_confidence_aggregation_is_caught(tmp_path: Path) -> None:
    # The plain Borda table, written into a council that aggregates by confidence.
    table = "| 1 | claude | 0.9 |\n| 2 | gpt | 0.5 |"
    path = edited(tmp_path, WEIGHTED, (table, "| 1 | gpt | 0.9 |\n| 2 | claude | 0.5 |"))
    report = check_path(path)
    assert report.exit_code == ExitCode.VIOLATIONS
    (aggregate,) = [v for v in report.violations if v.rule == "COUNCIL_AGGREGATE"]
    assert "(confidence-weighted) is claude 0.9, gpt 0.5, smol 0" in aggregate.message


def test_an_out_of_range_confidence_is_an_error_at_its_line() -> None:
    path = EXAMPLES / "invalid" / "COUNCIL_CONFIDENCE.md"
    report = check_path(path)
    assert [(v.rule, v.line) for v in report.violations] == [
        ("COUNCIL_CONFIDENCE", line_of(path, "- **Confidence:** 1.5"))
    ]
    assert "confidence 1.5" in report.violations[0].message


def test_a_missing_confidence_in_a_record_that_names_its_aggregation_is_an_error_at_its_review(tmp_path: Path) -> None:
    review = "- **Sealed:** sha256:255fe5896235cf5c1856aa8d041b3b136c3911e38e7181eb92fcfd4a77956fdb\n"
    path = edited(tmp_path, WEIGHTED, (review + "- **Confidence:** 0.3\n", review))
    report = check_path(path)
    missing = [v for v in report.violations if v.rule == "COUNCIL_CONFIDENCE"]
    assert len(missing) == 1 and "claude's review states no confidence" in missing[0].message
    assert missing[0].line == line_of(path, "## Stage 2 — Review by claude")


def test_a_confidence_that_is_no_number_is_a_format_error_at_its_line(tmp_path: Path) -> None:
    path = edited(tmp_path, WEIGHTED, ("- **Confidence:** 0.85", "- **Confidence:** high"))
    report = check_path(path)
    formats = [v for v in report.violations if v.rule == "COUNCIL_FORMAT"]
    assert formats and formats[0].line == line_of(path, "- **Confidence:** high")


def test_the_sealed_digest_covers_the_confidence(tmp_path: Path) -> None:
    path = edited(tmp_path, WEIGHTED, ("- **Confidence:** 0.6", "- **Confidence:** 0.65"))  # in range, after sealing
    report = check_path(path)
    sealed = [v for v in report.violations if v.rule == "COUNCIL_SEALED"]
    assert sealed and sealed[0].line == line_of(path, "## Stage 1 — Answer of gpt")


def test_a_record_written_before_confidences_still_checks_and_aggregates_by_borda(tmp_path: Path) -> None:
    text = OLD.read_text(encoding="utf-8")
    assert "Aggregation" not in text and "Confidence" not in text
    report = check_path(OLD)
    assert report.exit_code == 0 and report.violations == []
    assert report.summary is not None and report.summary.detail["aggregation"] == "borda"
    assert "confidences" not in report.summary.detail
    # A confidence in a record that names no aggregation is out of place.
    sealed = "- **Sealed:** sha256:a880c528a083628cf1479c7db523e856068eb767bbb23167840a4ec783ff1041\n"
    path = edited(tmp_path, OLD, (sealed, sealed + "- **Confidence:** 0.8\n"))
    rules = [v.rule for v in check_path(path).violations]
    assert "COUNCIL_CONFIDENCE" in rules


def test_an_unknown_aggregation_is_a_header_error(tmp_path: Path) -> None:
    path = edited(tmp_path, WEIGHTED, ("- **Aggregation:** confidence", "- **Aggregation:** median"))
    report = check_path(path)
    assert report.exit_code == ExitCode.UNREADABLE
    assert [v.rule for v in report.violations] == ["COUNCIL_HEADER"]
    assert "borda or confidence" in report.violations[0].message


def test_the_viewers_panel_names_the_aggregation_and_each_reviewers_confidence() -> None:
    (weighted,) = panels(WEIGHTED, WEIGHTED.read_text(encoding="utf-8"))
    svg = str(weighted.svg)
    assert "aggregate (confidence-weighted Borda)" in svg and ">0.9<" in svg
    assert "gpt (0.9)" in svg and "gpt ranks claude 1, confidence 0.9" in svg
    (plain,) = panels(OLD, OLD.read_text(encoding="utf-8"))
    assert "aggregate (Borda)" in str(plain.svg) and "confidence" not in str(plain.svg)

"""Every example record of every protocol, valid or not, becomes a page that shows all its violations."""

from __future__ import annotations

from html import unescape
from pathlib import Path

import pytest
from web_helpers import TESTS

from moot.web.page import build, record_html

EXAMPLES = sorted(
    path
    for kind in ("valid", "invalid")
    for path in TESTS.glob(f"*/examples/{kind}/*")
    if path.suffix == ".md" or path.is_dir()
)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: f"{p.parts[-4]}/{p.parts[-2]}/{p.name}")
def test_every_example_renders_with_each_violation_on_the_page(example: Path) -> None:
    page = build(example)
    html = record_html(page)
    assert html.count("<script") == 1  # moot's own; nothing from the record
    shown = unescape(html)
    for violation in page.report.violations:
        assert violation.rule in shown and violation.message in shown
    placed = sum(len(line.violations) for s in page.sections for line in s.lines)
    placed += sum(len(s.violations) for s in page.sections) + len(page.unplaced)
    assert placed == len(page.report.violations)
    if example.parent.name == "invalid":
        assert page.report.violations

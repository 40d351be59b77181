"""A turn's Markdown as the viewer renders it: readable, and with nothing from the record that could run, load
or lead anywhere unasked; the record's bookkeeping lines set apart."""

from __future__ import annotations

from moot.web.prose import prose
from moot.web.transcript import Line, Section


def section(*lines: str, title: str = "Turn 1 — alice") -> Section:
    return Section(title, [Line(number, text) for number, text in enumerate(lines, start=1)], turn=True)


def test_markdown_becomes_text_and_the_heading_is_the_sections() -> None:
    shown = prose(section("## Turn 1 — alice", "**Position**", "Keep one cache.", "Status: DONE", "# Aside"))
    assert "Turn 1 — alice" not in shown.html  # the section's title shows it
    assert "<strong>Position</strong><br />\nKeep one cache.<br />\nStatus: DONE" in shown.html
    assert "<h4>Aside</h4>" in shown.html  # under the page's and the section's headings


def test_nothing_from_the_record_can_run_load_or_lead_away() -> None:
    shown = prose(
        section(
            '<script>alert(1)</script><img src=x onerror="alert(2)">',
            "",
            "![tracker](https://example.com/pixel.png) [click](javascript:alert(3)) [data](data:image/png;base64,AA)",
            "",
            "[docs](https://example.com/docs) [path](/etc/passwd)",
        )
    ).html
    assert "<script" not in shown and "<img" not in shown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in shown
    assert "javascript:" not in shown.replace("[click](javascript:alert(3))", "")  # left as the text it was
    assert 'href="data:' not in shown and 'href="/etc/passwd"' not in shown and "<a>path</a>" in shown
    assert '<a href="https://example.com/docs" rel="nofollow noopener noreferrer">docs</a>' in shown


def test_bookkeeping_lines_are_set_apart() -> None:
    chain = "<!-- moot-chain turns=1 head=2dc7a020a15bde098bad47d147d420d073c3aba988501e67bfa68eb43a0cc14d -->"
    sealed = "- **Sealed:** sha256:a880c528a083628cf1479c7db523e856068eb767bbb23167840a4ec783ff1041"
    shown = prose(section("## Turn 1 — alice", sealed, "", "Use one cache.", "", chain))
    assert [line.number for line in shown.keeping] == [2, 6]
    assert "Use one cache." in shown.html and "moot-chain" not in shown.html and "sha256" not in shown.html

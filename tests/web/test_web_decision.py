"""The viewer leads a record's page with its decision: what was decided and where, then what was conceded or
left open; a record's text in it is escaped. Plain HTTP against a real ``moot serve``."""

from __future__ import annotations

import html
import urllib.request
from pathlib import Path

from web_helpers import DECIDED, TESTS, WEB_TOKEN, place_examples, serving


def get(url: str) -> str:
    request = urllib.request.Request(url, headers={"Cookie": f"moot_token={WEB_TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode("utf-8"))


def card(page: str) -> str:
    """The decision card, which must come before the transcript and the state's fields, folded at the end."""
    start = page.index('<div class="card decision">')
    assert start < page.index("<h2>Transcript") < page.index('<details class="internal state"')
    return page[start : page.index("</div>", start)]


def test_every_protocols_page_leads_with_its_decision(tmp_path: Path) -> None:
    placed = place_examples(tmp_path)
    with serving(tmp_path) as url:
        pages = {protocol: get(f"{url}r/{path}") for protocol, path in placed.items()}
    for protocol, (_, text, turn, who) in DECIDED.items():
        where = f"turn {turn}, {who}" if turn is not None else str(who)
        shown = card(pages[protocol])
        decided = shown[shown.index('class="decided"') :]
        assert where in decided and html.escape(text, quote=False) in decided, protocol
    duel = card(pages["duel"])
    assert "Conceded" in duel and "Open" in duel and "turn 6, bob" in duel
    assert "Dissent" in card(pages["council"]) and "Actions" in card(pages["roundtable"])


def test_a_decision_written_as_markup_is_shown_as_text(tmp_path: Path) -> None:
    example = (TESTS / "critique/examples/valid/planning-done.md").read_text(encoding="utf-8")
    summary = example[example.index("Summary:") :].split("\n", 1)[0]
    hostile = example.replace(summary, 'Summary: <script>alert("x")</script><img src=x onerror=alert(1)>')
    record = tmp_path / ".dialogues" / "hostile.md"
    record.parent.mkdir()
    record.write_text(hostile, encoding="utf-8")
    with serving(tmp_path) as url:
        page = get(f"{url}r/.dialogues/hostile.md")
    shown = card(page)
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in shown
    assert "<script>alert" not in page and "<img src=x" not in page

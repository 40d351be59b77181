"""A record's page as a reader sees it in chromium, on a phone (400 px) and a laptop (1280 px): what was decided
first, no sideways scrolling, plot labels that do not overlap, the record's bookkeeping folded away, and the
transcript as text with its source (and each violation under its line) one click away.

Each page is the file ``moot export --html`` writes, the page ``moot serve`` shows."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_helpers import DECIDED, EXAMPLES, TESTS, TOKEN_COOKIE, moot, place_examples, serving

WIDTHS = (400, 1280)
PROTOCOLS = sorted(DECIDED)

# Every label of a plot, as the browser laid it out (getBBox, in the figure's own units), and the figure's size.
LABEL_BOXES = """svg => ({
  width: svg.viewBox.baseVal.width, height: svg.viewBox.baseVal.height,
  boxes: [...svg.querySelectorAll("text")].map(t => {
    const b = t.getBBox(); return {text: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height};
  }),
})"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The exported page of every protocol's example, an invalid duel's and a record that moot wrote."""
    root = tmp_path_factory.mktemp("layout")
    records = {protocol: root / path for protocol, path in place_examples(root).items()}
    for name, example in (("invalid", "duel/examples/invalid/DUEL_AFTER_TERMINAL.md"),
                          ("chained", "critique/examples/valid/moot-written.md")):  # fmt: skip
        records[name] = root / ".dialogues" / f"{name}.md"
        records[name].parent.mkdir(exist_ok=True)
        shutil.copyfile(TESTS / example, records[name])
    records["crowded"] = root / ".dialogues" / "crowded.md"
    records["crowded"].write_text(crowded_critique(), encoding="utf-8")
    agora = (TESTS / EXAMPLES["agora"][0]).read_text(encoding="utf-8")
    records["proposals"] = root / ".agora" / "proposals.md"
    records["proposals"].write_text(agora.replace("proposal-", "a-proposal-with-a-long-name-"), encoding="utf-8")
    pages = {}
    for name, record in records.items():
        pages[name] = root / f"{name}.html"
        done = moot("export", str(record), "--html", str(pages[name]), cwd=root)
        assert done.returncode == 0, done.stderr
    return pages


# Long role names, one of them in a script whose letters are twice as wide, and more rounds than a plot shows.
LONG_ROLE = "the-principal-software-architect-of-the-platform-team"
WIDE_ROLE = "评审员" * 8


def crowded_critique(rounds: int = 150) -> str:
    turns = []
    for number in range(1, rounds + 1):
        for role, other in ((LONG_ROLE, WIDE_ROLE), (WIDE_ROLE, LONG_ROLE)):
            turns.append(
                f"## [{role}] Round {number} — 2026-01-31 15:00\n\nPoint {number}.\n\nStatus: AWAITING {other}\n"
            )
    header = f"# Dialogue: Crowded\nStarted: 2026-01-31 14:00\nTemplate: custom\nMax rounds: {rounds + 1}\n\n"
    header += f"Participants:\n  - {LONG_ROLE}\n  - {WIDE_ROLE} (partner)\n\n---\n\n---\n\n"
    return header + "\n---\n\n".join(turns)


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def sized(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": request.param, "height": 900})
    context.add_cookies([TOKEN_COOKIE])
    shown = context.new_page()
    shown.set_default_timeout(15_000)
    yield shown
    context.close()


def no_sideways_scroll(page: Any) -> None:
    width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"the page is {width} px wide in a window of {inner} px"


def overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    slack = 0.5  # a shared edge is no overlap
    return (
        a["x"] + slack < b["x"] + b["w"]
        and b["x"] + slack < a["x"] + a["w"]
        and a["y"] + slack < b["y"] + b["h"]
        and b["y"] + slack < a["y"] + a["h"]
    )


def labels_apart_and_inside(page: Any) -> int:
    """Asserts that no two labels of a plot overlap and that every label is inside its figure and the figure
    inside its card; returns the labels looked at."""
    plots = page.locator("svg.plot")
    assert plots.count() >= 1
    seen = 0
    for index in range(plots.count()):
        plot = plots.nth(index)
        laid = plot.evaluate(LABEL_BOXES)
        boxes = [box for box in laid["boxes"] if box["w"] > 0]
        for i, box in enumerate(boxes):
            assert box["x"] >= -0.5 and box["x"] + box["w"] <= laid["width"] + 0.5, f"{box} leaves the figure"
            assert box["y"] >= -0.5 and box["y"] + box["h"] <= laid["height"] + 0.5, f"{box} leaves the figure"
            for other in boxes[i + 1 :]:
                assert not overlaps(box, other), f"{box['text']!r} overlaps {other['text']!r}"
        card = plot.locator("xpath=ancestor::div[contains(@class, 'card')][1]").bounding_box()
        drawn = plot.locator("xpath=..").bounding_box()  # what the card shows of it; a wider plot scrolls in it
        assert drawn["x"] + drawn["width"] <= card["x"] + card["width"] + 0.5, "the plot overflows its card"
        seen += len(boxes)
    return seen


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_record_page_reads_at_each_width(sized: Any, exported: dict[str, Path], protocol: str) -> None:
    page = sized
    page.goto(exported[protocol].as_uri())
    no_sideways_scroll(page)
    # The decision and how it ended come first, inside the first screen, before the plots and the transcript.
    outcome, decided, _, _ = DECIDED[protocol]
    lead = page.locator(".card.decision")
    assert page.locator("main .card").first.get_attribute("class") == "card decision"
    assert outcome in page.locator(".lead h2 .badge.outcome").inner_text()
    assert decided[:40] in lead.inner_text() and "Ended after" in lead.inner_text()
    assert lead.bounding_box()["y"] < 900
    transcript = page.locator("section.transcript").bounding_box()
    assert lead.bounding_box()["y"] + lead.bounding_box()["height"] <= page.locator("svg.plot").bounding_box()["y"]
    assert page.locator("svg.plot").bounding_box()["y"] < transcript["y"]
    assert labels_apart_and_inside(page) > 5
    assert page.evaluate("[...document.querySelectorAll('.plot-box')].every(b => b.scrollWidth <= b.clientWidth)")
    # The record's bookkeeping is folded away and closed; the state's fields too.
    folded = page.locator("details.internal")
    assert folded.count() >= 1 and page.locator("details[open]").count() == 0
    assert not page.locator("#state table").is_visible()
    shown = page.evaluate("document.body.innerText")
    assert "sha256:" not in shown and "current_speaker_index" not in shown  # a sealed answer's digest, turn.json
    # The transcript is text, not Markdown's marks; its source is one click away.
    assert page.locator("section.turn .rendered").first.is_visible()
    assert not page.locator("section.turn .source").first.is_visible()
    page.locator('label[for="view-source"]').click()
    assert page.locator("section.turn .source").first.is_visible()
    assert not page.locator("section.turn .rendered").first.is_visible()
    no_sideways_scroll(page)


def test_the_duel_transcript_is_rendered_markdown(sized: Any, exported: dict[str, Path]) -> None:
    page = sized
    page.goto(exported["duel"].as_uri())
    turn = page.locator("section.turn", has_text="Turn 1 — alice")
    assert turn.locator(".rendered strong", has_text="Position").first.is_visible()
    assert "**Position**" not in turn.inner_text()
    page.locator('label[for="view-source"]').click()
    assert "**Position**" in turn.inner_text()  # the source, as the record holds it


def test_the_chain_is_folded_in_text_and_shown_in_the_source(sized: Any, exported: dict[str, Path]) -> None:
    page = sized
    page.goto(exported["chained"].as_uri())
    assert "moot-chain" not in page.evaluate("document.body.innerText")
    kept = page.locator("section.turn", has_text="[proposer] Round 1").locator("details.internal")
    assert kept.locator("summary").inner_text().startswith("Record-keeping: 1 line")
    kept.locator("summary").click()
    assert "<!-- moot-chain turns=1 head=2dc7a020" in kept.inner_text()
    page.locator('label[for="view-source"]').click()
    assert "<!-- moot-chain turns=1" in page.locator("section.turn", has_text="[proposer] Round 1").inner_text()


def test_the_source_shows_each_violation_under_its_line(sized: Any, exported: dict[str, Path]) -> None:
    page = sized
    page.goto(exported["invalid"].as_uri())
    turn = page.locator("section.turn", has_text="Turn 4 — bob")
    # As text, the turn says what is wrong and where, and the line itself is in the source.
    flag = turn.locator(".rendered .flag")
    assert flag.is_visible() and "DUEL_AFTER_TERMINAL line 115" in flag.inner_text()
    violation = turn.locator(".source .violation")
    assert violation.count() == 1 and not violation.is_visible()
    page.locator('label[for="view-source"]').click()
    assert violation.is_visible() and "DUEL_AFTER_TERMINAL" in violation.inner_text()
    before = violation.locator("xpath=preceding-sibling::pre[1]").inner_text()
    assert before.rstrip().endswith("115## Turn 4 — bob (codex / gpt-5) — REVISING")
    line_box, under = violation.locator("xpath=preceding-sibling::pre[1]").bounding_box(), violation.bounding_box()
    assert line_box["y"] + line_box["height"] <= under["y"] + 0.5
    no_sideways_scroll(page)


def test_a_violation_link_opens_its_turn_source_from_the_text(sized: Any, exported: dict[str, Path]) -> None:
    page = sized
    page.goto(exported["invalid"].as_uri())
    turn = page.locator("section.turn", has_text="Turn 4 — bob")
    turn.locator(".rendered .flag a").click()
    assert turn.locator(".source .violation").is_visible()  # the one turn shows its source, the rest stay text
    assert page.locator("section.turn", has_text="Turn 1 — alice").locator(".rendered").is_visible()


@pytest.mark.parametrize("name", ["crowded", "proposals"])
def test_long_names_and_many_turns_keep_labels_apart(sized: Any, exported: dict[str, Path], name: str) -> None:
    page = sized
    page.goto(exported[name].as_uri())
    no_sideways_scroll(page)
    assert labels_apart_and_inside(page) > 5
    if name == "crowded":  # 120 turns: the plot scrolls inside its card, at a size its labels can be read
        box = page.locator(".plot-box")
        assert box.evaluate("b => b.scrollWidth > b.clientWidth")
        assert "the latest 120 of 300 turns" in page.locator(".panel h2").first.inner_text()
        rows = page.locator("svg.plot text[text-anchor=end]").all_text_contents()
        assert any(row.startswith("the-principal") and row.endswith("…") for row in rows)


def test_the_index_scrolls_its_table_not_the_page(sized: Any, tmp_path: Path) -> None:
    page = sized
    place_examples(tmp_path)
    with serving(tmp_path) as url:
        page.goto(url)
        assert page.locator("table.index tbody tr").count() == 5
        no_sideways_scroll(page)

"""The viewer in a real browser: the index, a page per protocol, violations inline, untrusted text, export."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_helpers import TESTS, critique_reply, moot, place_examples, serving, write_script


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """One server over a work root holding an example of every protocol: (its URL, each record's path)."""
    root = tmp_path_factory.mktemp("examples")
    placed = place_examples(root)
    with serving(root) as url:
        yield url, placed


def test_index_lists_every_record_with_its_state(page: Any, examples: tuple[str, dict[str, str]]) -> None:
    url, _ = examples
    page.goto(url)
    rows = page.locator("table.index tbody tr")
    assert rows.count() == 5
    text = page.locator("table.index").inner_text()
    for expected in ("duel", "agora", "critique", "council", "roundtable"):
        assert expected in text
    assert "Shared cache across tenants" in text  # the duel's topic
    assert "ACCEPTED_CONSENSUS" in text and "SYNTHESIZED" in text and "closed" in text
    duel_row = page.locator("tr", has_text="consensus-six-turns.md").inner_text()
    assert re.search(r"\b6\b", duel_row)  # its turns


# What each protocol's page must draw: the plot's accessible name, and what a reader sees in it.
PLOTS = {
    "duel": ("stance of each participant by turn", ["ACCEPTING_CONSENSUS", "DISSENTING", "alice", "bob"]),
    "agora": ("confidence of each participant by turn, with its signal", ["tabs", "spaces", "mediator"]),
    "critique": ("status of each role by round", ["proposer", "critic"]),
    "council": ("council ranking matrix and aggregate ranking", ["aggregate (Borda)", "gpt", "claude", "smol"]),
    "roundtable": ("speaker flow: who spoke after whom", ["architect", "reviewer", "security"]),
}


@pytest.mark.parametrize("protocol", sorted(PLOTS))
def test_record_page_of_each_protocol(page: Any, examples: tuple[str, dict[str, str]], protocol: str) -> None:
    url, placed = examples
    page.goto(url)
    page.locator("a", has_text=Path(placed[protocol]).name).click()
    label, words = PLOTS[protocol]
    plot = page.locator(f'svg[aria-label="{label}"]')
    plot.wait_for()  # the click starts a navigation: the record's page, not the index, is the one counted
    assert plot.count() == 1
    plot_text = plot.text_content()
    state = page.locator("#state table").text_content()
    transcript = page.locator("section.turn")
    assert transcript.count() > 1
    assert page.locator(".violation").count() == 0  # valid examples
    for word in words:
        assert word in plot_text
    assert "status" in state and "turns" in state


def test_duel_plot_has_a_dot_per_turn_and_conformity(page: Any, examples: tuple[str, dict[str, str]]) -> None:
    url, placed = examples
    page.goto(url + "r/" + placed["duel"])
    dots = page.locator('svg[aria-label="stance of each participant by turn"] circle[r="6"]')
    assert dots.count() == 6
    assert "turn 6 · bob · ACCEPTING_CONSENSUS" in dots.nth(5).text_content()
    assert "position changes: 4" in page.locator(".conformity").first.inner_text()


def test_council_matrix_ranks_each_answer(page: Any, examples: tuple[str, dict[str, str]]) -> None:
    url, placed = examples
    page.goto(url + "r/" + placed["council"])
    tips = page.locator('svg[aria-label="council ranking matrix and aggregate ranking"] rect title')
    shown = [tips.nth(i).text_content() for i in range(tips.count())]
    assert (
        "position changes"
        in page.locator("h2", has_text="Conformity: answer").locator("xpath=following-sibling::div[1]").inner_text()
    )
    assert "gpt ranks claude 1" in shown and "gpt ranks smol 2" in shown and "gpt did not rank gpt" in shown


def test_roundtable_page_shows_its_minutes(page: Any, examples: tuple[str, dict[str, str]]) -> None:
    url, placed = examples
    page.goto(url + "r/" + placed["roundtable"])
    minutes = page.locator("h2", has_text="Minutes").locator("xpath=following-sibling::div[1]").inner_text()
    assert "Adopt a write-through Redis cache" in minutes and "action items" in minutes


def test_violations_show_inline_with_rule_and_line(page: Any, work_root: Path) -> None:
    (work_root / "debates").mkdir()
    shutil.copyfile(TESTS / "duel/examples/invalid/DUEL_AFTER_TERMINAL.md", work_root / "debates/after-end.md")
    with serving(work_root) as url:
        page.goto(url)
        assert "invalid" in page.locator("tr", has_text="after-end.md").inner_text()
        page.goto(url + "r/debates/after-end.md")
        turn = page.locator("section.turn", has_text="Turn 4 — bob")
        violation = turn.locator(".violation")
        assert violation.count() == 1
        assert "DUEL_AFTER_TERMINAL" in violation.inner_text() and "line 115" in violation.inner_text()
        # It sits right under the line it names.
        before = violation.locator("xpath=preceding-sibling::pre[1]").inner_text()
        assert before.rstrip().endswith("115## Turn 4 — bob (codex / gpt-5) — REVISING")
        assert page.locator(".lead .badge.invalid").inner_text() == "invalid"
        page.locator(".violations a", has_text="DUEL_AFTER_TERMINAL").click()  # the list leads to it
        assert page.evaluate("location.hash") == "#" + violation.get_attribute("id")


HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def _hostile_record(root: Path) -> Path:
    """A critique whose topic and turn hold markup, written by a real scripted run."""
    script = write_script(
        root / "script.jsonl",
        [
            {"role": "proposer", "reply": critique_reply(f"Use {HOSTILE} everywhere.")},
            {"role": "critic", "reply": critique_reply("Why?", "AWAITING")},
        ],
    )
    done = moot(
        "run", "critique", "--topic", f"Markup {HOSTILE}", "--agent", f"proposer=script:{script}",
        "--agent", f"critic=script:{script}", "--max-rounds", "2", cwd=root,
    )  # fmt: skip
    records = list((root / ".dialogues").glob("markup-*.md"))
    assert len(records) == 1, done.stderr
    return records[0]


def test_markup_in_a_record_shows_as_text(page: Any, work_root: Path) -> None:
    record = _hostile_record(work_root)
    with serving(work_root) as url:
        page.goto(url)
        assert page.evaluate("window.__pwned") is None
        assert HOSTILE in page.locator("table.index").inner_text()
        page.goto(url + "r/.dialogues/" + record.name)
        page.wait_for_timeout(300)
        assert page.evaluate("window.__pwned") is None
        assert page.locator("script").count() == 1  # moot's own
        assert page.locator("img").count() == 0
        assert HOSTILE in page.locator("h1").inner_text()
        assert HOSTILE in page.locator("section.turn").nth(1).inner_text()


def test_export_is_one_file_that_needs_no_network(page: Any, work_root: Path, tmp_path: Path) -> None:
    placed = place_examples(work_root)
    record = _hostile_record(work_root)
    out = tmp_path / "agora.html"
    done = moot("export", str(work_root / placed["agora"]), "--html", str(out), cwd=work_root)
    assert done.returncode == 0, done.stderr
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.route(re.compile(r"^(?!file://).*"), lambda route: route.abort())
    page.goto(out.as_uri())
    assert page.locator('svg[aria-label="confidence of each participant by turn, with its signal"]').count() == 1
    assert page.locator("section.turn").count() > 3
    assert "CONSENSUS" in page.locator(".lead .badge.outcome").inner_text()
    assert [url for url in requests if not url.startswith("file://")] == []
    hostile = tmp_path / "hostile.html"
    assert moot("export", str(record), "--html", str(hostile), cwd=work_root).returncode == 0
    page.goto(hostile.as_uri())
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert HOSTILE in page.locator("h1").inner_text()
    assert [url for url in requests if not url.startswith("file://")] == []


def test_usage_table_lists_every_attempt_of_the_run(page: Any, work_root: Path) -> None:
    record = _hostile_record(work_root)  # two turns, then the script runs out: a failed third attempt
    with serving(work_root) as url:
        page.goto(url + "r/.dialogues/" + record.name)
        rows = page.locator("table.usage tbody tr")
        shown = [rows.nth(i).inner_text() for i in range(rows.count())]
    assert len(shown) >= 3
    assert shown[0].split()[:3] == ["1", "1", "proposer"] and "accepted" in shown[0] and " s" in shown[0]
    assert shown[1].split()[:3] == ["2", "1", "critic"] and "script:" in shown[1]
    assert "rejected" in shown[2] and "no reply left" in shown[2]

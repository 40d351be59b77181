"""A running debate's page shows each new turn as it is committed, without a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from web_helpers import critique_reply, moot, serving, write_script


def test_new_turns_appear_without_reload(page: Any, work_root: Path) -> None:
    opening = write_script(
        work_root / "opening.jsonl",
        [
            {"role": "proposer", "reply": critique_reply("Move every service into one repository.")},
            {"role": "critic", "reply": critique_reply("How do you keep CI fast?")},
        ],
    )
    agents = ["--agent", f"proposer=script:{opening}", "--agent", f"critic=script:{opening}"]
    halted = moot("run", "critique", "--topic", "Adopt a monorepo", *agents, "--max-rounds", "3", cwd=work_root)
    assert halted.returncode != 0  # the script ran out after two turns: the run halted, the record is open
    record = ".dialogues/adopt-a-monorepo.md"
    with serving(work_root) as url:
        page.goto(url + "r/" + record)
        page.locator("#live.on").wait_for()  # the event stream is open
        assert page.locator("[data-turns]").get_attribute("data-turns") == "2"
        page.evaluate("window.__samePage = true")
        page.locator("#state > summary").click()  # the reader opens the state's fields and reads the source
        page.locator('label[for="view-source"]').click()
        rest = write_script(
            work_root / "rest.jsonl",
            [
                {"role": "proposer", "reply": critique_reply("Build only what changed.", "PROPOSING_DONE")},
                {
                    "role": "critic",
                    "reply": critique_reply("Agreed.", "DONE", "One repository; CI builds only what changed."),
                },
            ],
        )
        agents = ["--agent", f"proposer=script:{rest}", "--agent", f"critic=script:{rest}"]
        resumed = moot("resume", record, *agents, cwd=work_root)
        assert resumed.returncode == 0, resumed.stderr
        page.locator('[data-turns="4"]').wait_for()
        assert page.evaluate("window.__samePage") is True  # no reload
        assert page.locator("#live.on").count() == 1
        transcript = page.locator("#live-part").inner_text()
        state = page.locator("#state table").inner_text()
        attempts = page.locator("table.usage tbody tr").count()
        # What the reader opened stays open as the page follows the record.
        assert page.locator("#state").get_attribute("open") is not None
        assert page.locator("section.turn .source").last.is_visible()
        assert not page.locator("section.turn .rendered").last.is_visible()
    assert "Build only what changed." in transcript and "One repository; CI builds only what changed." in transcript
    assert "DONE" in state
    assert attempts >= 4  # the usage log's rows of both runs


def test_the_index_shows_a_new_record_without_reload(page: Any, work_root: Path) -> None:
    script = write_script(
        work_root / "script.jsonl",
        [
            {"role": "proposer", "reply": critique_reply("Cache the read path.")},
            {"role": "critic", "reply": critique_reply("Agreed.", "AWAITING")},
        ],
    )
    with serving(work_root) as url:
        page.goto(url)
        page.locator("#live.on").wait_for()
        assert "No records" in page.locator("#live-part").inner_text()
        page.evaluate("window.__samePage = true")
        agents = ["--agent", f"proposer=script:{script}", "--agent", f"critic=script:{script}"]
        moot("run", "critique", "--topic", "Read cache", *agents, "--max-rounds", "2", cwd=work_root)
        # The index may first show the record mid-run (one turn, its chain row not yet written); it is updated
        # live until the run's end, so wait for that.
        row = page.locator("table.index tr", has_text="read-cache.md").filter(has_text="halted")
        row.wait_for()
        assert page.evaluate("window.__samePage") is True
        shown = row.inner_text()
    assert "Read cache" in shown and "critique" in shown and "halted" in shown

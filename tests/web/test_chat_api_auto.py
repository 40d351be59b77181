"""``moot/auto`` through ``moot serve --openai`` and the official ``openai`` client: a panel that agrees answers with
its vote, labelled as one, and the viewer shows the vote's panel."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import openai
from web_helpers import TESTS, WEB_TOKEN, serving

from moot.detect import check_path

AGENT = f"cmd:{sys.executable} {TESTS / 'engine_auto' / 'auto_agent.py'} 12"


def test_moot_auto_answers_with_the_panels_vote_and_the_viewer_shows_the_tally(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    lines = ['allow_agents = ["cmd"]', f"agents = {json.dumps(AGENT)}", "[panel]"]
    lines += [f"{name} = {json.dumps(AGENT)}" for name in ("ada", "bo", "cy")]
    (root / "moot.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with serving(root, "--openai") as url:
        client = openai.OpenAI(base_url=f"{url}v1", api_key=WEB_TOKEN, max_retries=0)
        assert "moot/auto" in {model.id for model in client.models.list()}
        completion = client.chat.completions.create(
            model="moot/auto", messages=[{"role": "user", "content": "How many apples are in the basket?"}]
        )
        answer = completion.choices[0].message.content or ""
        fields = (completion.model_extra or {})["moot"]
        assert fields["outcome"] == "VOTED" and answer.startswith("Voted answer: 12")
        assert fields["decision"]["decided"]["text"] == answer
        record = root / fields["record"]
        assert check_path(record).exit_code == 0
        # The viewer lists the records of the work root's own folders: the same record there.
        (root / ".auto").mkdir()
        (root / ".auto" / "apples.md").write_text(record.read_text(encoding="utf-8"), encoding="utf-8")
        page = httpx.get(f"{url}r/.auto/apples.md", cookies={"moot_token": WEB_TOKEN}, follow_redirects=True)
    assert page.status_code == 200, page.text[:300]
    assert "Vote" in page.text and "3 of 3 valid answers" in page.text

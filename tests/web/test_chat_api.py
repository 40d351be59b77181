"""``moot serve --openai`` through the official ``openai`` client and simonw's ``llm`` CLI, against a real server
whose panel is the scripted participant (tests/reliability/protocol_agent.py, a ``cmd:`` agent)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from web_helpers import TESTS, WEB_TOKEN, moot, serving

from moot.detect import check_path
from moot.followup import followups
from moot.receipts import Trust, verify

AGENT = f"cmd:{sys.executable} {TESTS / 'reliability' / 'protocol_agent.py'}"
QUESTION = "Should tenants share one cache?"


def panel_root(root: Path, **settings: str) -> Path:
    """A work root whose moot.toml names a panel of three scripted members (and lets this door run them)."""
    lines = [f"{name} = {json.dumps(value)}" for name, value in settings.items()]
    lines += ['allow_agents = ["cmd"]', f"agents = {json.dumps(AGENT)}", "[panel]"]
    lines += [f"{name} = {json.dumps(AGENT)}" for name in ("ada", "bo", "cy")]
    root.mkdir(parents=True, exist_ok=True)
    (root / "moot.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[openai.OpenAI, Path, Path]]:
    """An openai client of a real ``moot serve --openai``, its work root, and the server's receipt key."""
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))  # the server's receipt key goes here, not to ~/.config
    root = panel_root(tmp_path / "root", max_tokens="100000")
    with serving(root, "--openai") as url:
        yield openai.OpenAI(base_url=f"{url}v1", api_key=WEB_TOKEN, max_retries=0), root, config


def test_the_openai_client_lists_deliberations_and_gets_a_councils_answer_with_record_and_receipt(
    api: tuple[openai.OpenAI, Path, Path], tmp_path: Path
) -> None:
    client, root, config = api
    assert {"moot/council", "moot/critique", "moot/agora"} <= {model.id for model in client.models.list()}

    raw = client.chat.completions.with_raw_response.create(
        model="moot/council",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}],
    )
    completion = raw.parse()
    answer = completion.choices[0].message.content
    extra = completion.model_extra or {}
    moot_fields = extra["moot"]
    record = root / moot_fields["record"]
    assert raw.headers["x-moot-record"] == moot_fields["record"]
    assert answer and completion.choices[0].finish_reason == "stop"
    assert moot_fields["outcome"] == "SYNTHESIZED" and moot_fields["follows"] is None
    decided = moot_fields["decision"]["decided"]  # the decision summary, with the turn it comes from
    assert decided["text"] == answer and decided["turn"] == moot_fields["turns"]
    report = check_path(record)
    assert report.exit_code == 0 and report.summary is not None and report.summary.outcome is not None
    assert report.summary.outcome.name == "SYNTHESIZED" and QUESTION in record.read_text(encoding="utf-8")

    receipt = tmp_path / "answer.receipt.json"
    receipt.write_text(json.dumps(moot_fields["receipt"]), encoding="utf-8")
    verdict = verify(receipt, record, Trust.given([config / "moot" / "receipt-key.pub.pem"]))
    assert verdict.ok, verdict.message

    again = client.chat.completions.create(model="moot/council", messages=[{"role": "user", "content": QUESTION}])
    assert (again.model_extra or {})["moot"]["record"] != moot_fields["record"]  # the same question: a new record


def test_a_streamed_answer_reports_turns_as_they_land_then_the_answer_and_usage(
    api: tuple[openai.OpenAI, Path, Path],
) -> None:
    client, root, _ = api
    stream = client.chat.completions.create(
        model="moot/critique",
        messages=[{"role": "user", "content": "Adopt a monorepo?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    events = [(c.model_extra or {}).get("moot", {}).get("event") for c in chunks]
    assert sum(1 for e in events if e and "accepted" in e) >= 2  # progress while the loop ran
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finished = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert len(finished) == 1
    record = root / (finished[0].model_extra or {})["moot"]["record"]
    assert text and text in record.read_text(encoding="utf-8")  # the DONE turn's summary is the answer
    assert chunks[-1].usage is not None and not chunks[-1].choices


def test_a_follow_up_is_a_new_deliberation_that_carries_and_names_the_earlier_one(
    api: tuple[openai.OpenAI, Path, Path],
) -> None:
    client, root, _ = api
    first = client.chat.completions.create(model="moot/council", messages=[{"role": "user", "content": QUESTION}])
    earlier = (first.model_extra or {})["moot"]["record"]
    answer = first.choices[0].message.content or ""
    follow_up = client.chat.completions.create(
        model="moot/council",
        messages=[
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "What would make that wrong?"},
        ],
    )
    moot_fields = (follow_up.model_extra or {})["moot"]
    assert moot_fields["follows"] == earlier and moot_fields["record"] != earlier
    text = (root / moot_fields["record"]).read_text(encoding="utf-8")
    assert "What would make that wrong?" in text and earlier in text and answer in text
    assert check_path(root / moot_fields["record"]).exit_code == 0 and check_path(root / earlier).exit_code == 0
    listed = followups(root / earlier)  # linked both ways: the earlier record lists its follow-up beside it
    assert [(row["record"], row["question"]) for row in listed] == [
        (moot_fields["record"], "What would make that wrong?")
    ]


def test_refusals_come_in_openais_error_shape(api: tuple[openai.OpenAI, Path, Path]) -> None:
    client, root, _ = api
    with pytest.raises(openai.AuthenticationError, match="needs its token"):
        openai.OpenAI(base_url=str(client.base_url), api_key="wrong", max_retries=0).models.list()
    with pytest.raises(openai.NotFoundError, match="use one of moot/"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.BadRequestError, match="over this server's budget of 100000"):
        client.chat.completions.create(
            model="moot/council",
            messages=[{"role": "user", "content": QUESTION}],
            extra_body={"moot": {"max_tokens": 10**6}},
        )
    with pytest.raises(openai.BadRequestError, match=r"moot\.max_tokens must be a whole number of 1 or more"):
        client.chat.completions.create(
            model="moot/council",
            messages=[{"role": "user", "content": QUESTION}],
            extra_body={"moot": {"max_tokens": 0}},
        )
    with pytest.raises(openai.BadRequestError, match="the last message must be the user's question"):
        client.chat.completions.create(model="moot/council", messages=[{"role": "assistant", "content": "Hi."}])
    assert not (root / ".chat").exists() or not any((root / ".chat").iterdir())  # nothing was started


def test_a_panel_agent_the_door_does_not_allow_is_refused_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = panel_root(tmp_path / "root")
    toml = root / "moot.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('allow_agents = ["cmd"]\n', ""), encoding="utf-8")
    with serving(root, "--openai") as url:
        client = openai.OpenAI(base_url=f"{url}v1", api_key=WEB_TOKEN, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="--allow-agent cmd"):
            client.chat.completions.create(model="moot/council", messages=[{"role": "user", "content": QUESTION}])
    assert not any((root / ".chat").iterdir()) if (root / ".chat").exists() else True


def test_serve_openai_without_a_panel_says_how_to_add_one(tmp_path: Path) -> None:
    done = moot("serve", "--root", str(tmp_path), "--openai", "--port", "0", cwd=tmp_path)
    assert done.returncode == 2 and "add a [panel] table to moot.toml" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(shutil.which("llm", path=str(Path(sys.executable).parent)) is None, reason="llm is not installed")
@pytest.mark.parametrize("streamed", [True, False])
def test_simonw_llm_configured_with_moot_as_an_openai_compatible_model_gets_the_answer(
    api: tuple[openai.OpenAI, Path, Path], tmp_path: Path, streamed: bool
) -> None:
    client, root, _ = api
    home = tmp_path / "llm"
    home.mkdir()
    (home / "extra-openai-models.yaml").write_text(
        f"- model_id: moot-council\n  model_name: moot/council\n  api_base: {client.base_url}\n  api_key_name: moot\n",
        encoding="utf-8",
    )
    (home / "keys.json").write_text(json.dumps({"moot": WEB_TOKEN}), encoding="utf-8")
    llm = shutil.which("llm", path=str(Path(sys.executable).parent))
    assert llm is not None
    done = subprocess.run(
        [llm, "-m", "moot-council", *([] if streamed else ["--no-stream"]), QUESTION],
        capture_output=True, text=True, timeout=120, env={**os.environ, "LLM_USER_PATH": str(home)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = sorted((root / ".chat").glob("*/.council/*.md"))
    assert len(records) == 1
    assert done.stdout.strip() and done.stdout.strip() in records[0].read_text(encoding="utf-8")

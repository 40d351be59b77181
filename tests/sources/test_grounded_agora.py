"""A grounded Agora: research from --source, fabricated evidence refused and repaired, the record checked."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sources_helpers import GUIDE, RETRY, line_of, make_project

import forked_moot
from moot.agents import ScriptAgent
from moot.detect import check_path
from moot.engine.loop import Engine
from moot.protocols.agora.driver import RESEARCHER, AgoraDriver, AgoraOptions, research_path

TOPIC = "How should fetch retry failed network calls?"
RETRY_LINE = line_of(RETRY, "exponential backoff")
CACHE_LINE = line_of(GUIDE, "five minutes")
RETRY_FILE = "project/src/net/retry.py"
GUIDE_FILE = "project/docs/guide.md"


def item(source: str, content: str) -> dict[str, Any]:
    return {"source": source, "content": content, "confidence": 0.9}


def drone(signal: str, target: str | None, evidence: list[dict[str, Any]]) -> str:
    message = f"I {signal}: the code shows how retries behave."
    return json.dumps({"signal": signal, "message": message, "confidence": 0.8, "target": target, "evidence": evidence})


TRUE_RETRY = item(f"{RETRY_FILE}:{RETRY_LINE}", "Retries use exponential backoff: 1, 2, then 4 seconds.")
TRUE_CACHE = item(f"{GUIDE_FILE}:{CACHE_LINE}", "The cache keeps responses for five minutes.")
FABRICATED = item(f"{RETRY_FILE}:{RETRY_LINE}", "Retries wait a fixed ten seconds between attempts.")


def script() -> list[dict[str, Any]]:
    """The researcher fabricates, then quotes truly; the skeptic fabricates, then cites the guide truly."""
    return [
        {"role": RESEARCHER, "reply": json.dumps({"evidence": [FABRICATED]})},
        {"role": RESEARCHER, "reply": json.dumps({"evidence": [TRUE_RETRY]})},
        {"role": "advocate", "reply": drone("propose", None, [TRUE_RETRY])},
        {
            "role": "skeptic",
            "reply": drone("approve", "proposal-advocate", [item(f"{GUIDE_FILE}:40", "Caching is off")]),
        },
        {"role": "skeptic", "reply": drone("approve", "proposal-advocate", [TRUE_CACHE])},
        {"role": "advocate", "reply": drone("no-change", None, [item(RETRY_FILE, "exponential backoff")])},
    ]


def test_fabricated_evidence_is_refused_with_a_rule_id_and_the_true_quote_accepted(tmp_path: Path) -> None:
    project = make_project(tmp_path, git=True)
    options = AgoraOptions(topic=TOPIC, methodology="fact-based", research=1, sources=[str(project)])
    driver = AgoraDriver.start(tmp_path, options, "2026-11-24 21:00")
    agent = ScriptAgent()
    for entry in script():
        agent.enqueue(entry["reply"], role=entry["role"])
    result = asyncio.run(Engine(driver, {role: agent for role in driver.roles()}).run())
    assert result.outcome is not None and result.outcome.name == "CONSENSUS"

    first, repair, *rest = agent.requests
    # The research drone read the retrieved passage, line by line, and not the ignored build output.
    assert f"{RETRY_FILE}:{RETRY_LINE}: # Retries use exponential backoff" in first.prompt
    assert "build/out.txt" not in first.prompt and "debug.log" not in first.prompt
    assert "CITATION_UNVERIFIED" in repair.prompt and f"within 5 lines of line {RETRY_LINE}" in repair.prompt
    skeptic_repair = rest[2]
    assert skeptic_repair.role == "skeptic" and "CITATION_UNVERIFIED" in skeptic_repair.prompt

    pool = json.loads(research_path(driver.record_path).read_text(encoding="utf-8"))["reports"][0]["evidence"]
    assert pool == [TRUE_RETRY]
    text = driver.record_path.read_text(encoding="utf-8")
    assert "- Sources: `project`" in text
    assert f"Evidence 1: verified at {GUIDE_FILE}:{CACHE_LINE}" in text
    assert f"Evidence 1: verified at {RETRY_FILE}:{RETRY_LINE}" in text
    assert "ten seconds" not in text and "Caching is off" not in text
    report = check_path(driver.record_path)
    assert report.exit_code == 0, [str(v) for v in report.violations]
    assert report.summary is not None
    assert report.summary.detail["grounding"] == {
        "advocate": {"cited": 2, "verified": 2, "share": 1.0},
        "skeptic": {"cited": 1, "verified": 1, "share": 1.0},
    }

    # The source changes under the record: its citations no longer verify, and moot check says so.
    retry = project / "src" / "net" / "retry.py"
    retry.write_text(RETRY.replace("exponential backoff", "linear backoff"), encoding="utf-8")
    changed = check_path(driver.record_path)
    assert changed.exit_code == 1
    assert {v.rule for v in changed.errors} == {"CITATION_UNVERIFIED"}
    assert changed.summary is not None and changed.summary.detail["grounding"]["advocate"]["share"] == 0.0


def test_an_ignored_file_is_no_source(tmp_path: Path) -> None:
    project = make_project(tmp_path, git=False)
    options = AgoraOptions(topic=TOPIC, methodology="fact-based", sources=[str(project)])
    driver = AgoraDriver.start(tmp_path, options, "2026-11-24 21:00")
    request = driver.request_for("advocate")
    assert "SOURCE PASSAGES" in request.prompt and RETRY_FILE in request.prompt
    ignored = drone("propose", None, [item("project/build/out.txt:1", "exponential backoff table")])
    candidate = driver.read_reply("advocate", ignored, "now")
    assert [v.rule for v in candidate.errors] == ["EVIDENCE_UNGROUNDED", "FACT_BASED_UNVERIFIED"]
    # The offered evidence is the passages' own lines, so a grammar-following model cites truly.
    assert request.json_schema is not None
    offered = request.json_schema["properties"]["evidence"]["items"]["anyOf"]
    chosen = {key: offered[0]["properties"][key]["const"] for key in ("source", "content")}
    good = drone("propose", None, [{**chosen, "confidence": 0.9}])
    assert driver.read_reply("advocate", good, "now").errors == []


def test_a_foreign_record_with_an_unverified_citation_gets_a_warning(tmp_path: Path) -> None:
    make_project(tmp_path, git=False)
    record = tmp_path / ".agora" / "cache.md"
    record.parent.mkdir()
    turn = drone("propose", None, [item(f"{GUIDE_FILE}:{CACHE_LINE}", "The cache keeps responses for an hour.")])
    record.write_text(
        "# Agora Debate: Cache lifetime\n\n- Dialogue: cache\n- Methodology: fact-based\n- Participants:\n"
        "  - advocate: Keep it\n  - skeptic: Drop it\n\n## Turn 1 — advocate\n\nProposal: proposal-advocate\n\n"
        f"```json\n{turn}\n```\n",
        encoding="utf-8",
    )
    report = check_path(record)
    assert report.exit_code == 0
    assert [(v.rule, v.severity.value) for v in report.violations] == [("CITATION_UNVERIFIED", "warning")]
    assert report.summary is not None
    assert report.summary.detail["grounding"] == {"advocate": {"cited": 1, "verified": 0, "share": 0.0}}


def moot(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return forked_moot.run(args, cwd=cwd, timeout=timeout, env=env)


def test_moot_run_agora_with_research_and_source_from_the_command_line(tmp_path: Path) -> None:
    make_project(tmp_path, git=True)
    lines = tmp_path / "script.jsonl"
    lines.write_text("\n".join(json.dumps(entry) for entry in script()) + "\n", encoding="utf-8")
    common = ["run", "agora", "--topic", TOPIC, "--methodology", "fact-based", "--research", "1"]
    refused = moot(*common, "--agents", f"script:{lines}", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--source" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".agora").exists()

    done = moot(*common, "--source", "project", "--agents", f"script:{lines}", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "skipped 1 file(s): 1 binary (project/src/logo.png)" in done.stderr
    record = tmp_path / json.loads(done.stdout)["artifact"]
    checked = moot("check", str(record), "--json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    assert json.loads(checked.stdout)["state"]["detail"]["grounding"]["skeptic"]["share"] == 1.0
    shown = moot("show", str(record), "--plain", cwd=tmp_path)
    assert "grounding: advocate 2/2 verified (100%), skeptic 1/1 verified (100%)" in shown.stdout


@pytest.mark.slow
def test_an_agora_with_research_over_a_directory_runs_on_the_embedded_model(tmp_path: Path) -> None:
    make_project(tmp_path, git=True)
    done = moot(
        *["run", "agora", "--topic", TOPIC, "--methodology", "fact-based", "--research", "1", "--max-turns", "4"],
        *["--source", "project", "--agents", "local", "--json", "--turn-timeout", "1800"],
        cwd=tmp_path,
        timeout=3600,  # five model calls; on a shared, loaded machine each took minutes
    )
    assert done.returncode in (0, 1), done.stderr
    assert "FAILED" not in done.stdout, done.stdout
    result = json.loads(done.stdout)
    assert result["outcome"] in {"CONSENSUS", "TIMEOUT"}, result
    record = tmp_path / result["artifact"]
    report = check_path(record)
    assert report.exit_code == 0, [str(v) for v in report.violations]
    text = record.read_text(encoding="utf-8")
    assert text.count("Evidence 1: verified at project/") == result["turns"]  # fact-based: one per turn
    pool = json.loads(research_path(record).read_text(encoding="utf-8"))
    assert len(pool["reports"]) == 1
    assert all(e["source"].startswith("project/") for r in pool["reports"] for e in r["evidence"])


def test_roundtable_and_critique_participants_get_the_passages_with_path_and_line(tmp_path: Path) -> None:
    from moot.engine.grounding import source_passages

    make_project(tmp_path, git=True)
    passages = source_passages([tmp_path / "project"], tmp_path, "how often do deployments happen")
    deploy = line_of(GUIDE, "Deployments happen")
    assert f"project/docs/guide.md:{deploy}: Deployments happen every Tuesday after the tests pass." in passages
    speeches = tmp_path / "speeches.jsonl"
    speeches.write_text("", encoding="utf-8")
    done = moot(
        *["run", "roundtable", "--topic", "How often should we deploy?", "--speakers", "ops,dev"],
        *["--source", "project", "--agents", f"script:{speeches}"],
        cwd=tmp_path,
    )
    assert done.returncode == 1  # the empty script cannot speak; the meeting and its agenda exist
    agenda = next((tmp_path / ".roundtable").glob("*/AGENDA.md")).read_text(encoding="utf-8")
    assert f"project/docs/guide.md:{deploy}: Deployments happen every Tuesday" in agenda


def test_a_grounded_record_whose_sources_are_gone_is_told_not_failed(tmp_path: Path) -> None:
    project = make_project(tmp_path, git=False)
    options = AgoraOptions(topic=TOPIC, sources=[str(project / "docs")])
    driver = AgoraDriver.start(tmp_path, options, "2026-11-24 21:00")
    (project / "docs" / "guide.md").unlink()
    (project / "docs").rmdir()
    report = check_path(driver.record_path)
    assert report.exit_code == 0
    assert [(v.rule, v.severity.value) for v in report.violations] == [("CITATION_UNVERIFIED", "warning")]
    assert "sources cannot be read" in report.violations[0].message


def test_a_dry_run_reads_a_relative_source_from_where_it_was_given(tmp_path: Path) -> None:
    work = tmp_path / "work"
    project = make_project(work, git=False)
    # The record would go under --root work; the source is given relative to the current directory.
    args = ["run", "agora", "--topic", "Retry policy", "--research", "1", "--source", "work/project/src"]
    done = moot(*args, "--root", "work", "--dry-run", "--agents", "local", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "researcher" in done.stdout and "nothing was asked or written" in done.stdout
    assert list(work.iterdir()) == [project]
    # Not from the root: with --root work/project, `src` is the current directory's (outside that root).
    missing = moot(*args[:-1], "src", "--root", "work/project", "--dry-run", "--agents", "local", cwd=tmp_path)
    assert missing.returncode == 2 and "the source src is outside the work root" in missing.stderr

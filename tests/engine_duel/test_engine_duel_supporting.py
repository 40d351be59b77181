"""`moot run duel --source`: supporting files' lines offered as evidence, quoted after the source citation."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from engine_duel_helpers import STARTED, guided

from moot.agents import FunctionAgent
from moot.agents.base import AgentRequest
from moot.detect import check_path
from moot.engine.loop import Engine, Limits
from moot.protocols.duel.driver import DuelDriver, DuelOptions
from moot.protocols.duel.grounding import supporting_sidecar

CODE = (
    "def evict(cache):\n    # one global list: the oldest key goes first, whoever owns it\n    cache.lru.pop_oldest()\n"
)


def test_evidence_quotes_a_chosen_supporting_line_verified_and_a_resume_offers_it_again(
    tmp_path: Path, source: Path
) -> None:
    code = tmp_path / "src" / "cache.py"
    code.parent.mkdir()
    code.write_text(CODE, encoding="utf-8")
    options = DuelOptions(source=source, supporting=(str(code.parent),), max_turns=2)
    driver = DuelDriver.start(tmp_path, options, STARTED)
    # The supporting files live beside the record, so a resumed duel offers the same lines.
    assert DuelDriver.resume(driver.record_path).supporting == driver.supporting and len(driver.supporting) == 3
    asked: list[AgentRequest] = []

    def answer(request: AgentRequest) -> str:
        asked.append(request)
        offered = request.json_schema["$defs"]["Evidence"]["properties"]["supporting"]["enum"]  # type: ignore[index]
        chosen = next(where for where in offered if where.endswith(":2"))
        number = len(asked)
        reply = json.loads(guided(number, "OPEN_TO_DEBATE" if number == 1 else "DISSENTING", revision=False))
        reply["novel_evidence"] = {"section": "Eviction", "principle": "", "supporting": chosen}
        return json.dumps(reply)

    agent = FunctionAgent(answer)
    result = asyncio.run(Engine(driver, {r: agent for r in driver.roles()}, Limits()).run()).to_json()
    assert result["turns"] == 2, result
    assert "cache.py:2: # one global list" in asked[0].prompt  # the supporting line, shown with path:line
    text = driver.record_path.read_text(encoding="utf-8")
    # Both are cited by their paths relative to the work root, and the sidecar keeps them so.
    quoted = f'supporting file `{code.relative_to(tmp_path).as_posix()}` line 2 "# one global list: the oldest key goes first, whoever owns it"'
    assert f"`{source.relative_to(tmp_path).as_posix()}` § Eviction; {quoted} (verified at src/cache.py:2)" in text
    report = check_path(driver.record_path)
    assert report.exit_code == 0, [str(v) for v in report.violations]
    assert report.summary is not None and report.summary.detail["grounding"]["advocate"]["verified"] == 1
    assert json.loads(supporting_sidecar(driver.record_path).read_text())["supporting"] == ["src"]
    code.write_text(CODE.replace("whoever owns it", "by tenant"), encoding="utf-8")
    changed = [v for v in check_path(driver.record_path).violations if v.rule == "CITATION_UNVERIFIED"]
    assert [v.severity.value for v in changed] == ["error", "error"]  # moot verified them: the file changed


def test_run_duel_source_names_a_missing_path_in_one_sentence(tmp_path: Path, source: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "moot", "run", "duel", str(source), "--source", "nowhere", "--agents", "local"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "nowhere" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "debates").exists()


def test_a_document_given_with_source_instead_of_as_the_argument_is_named_in_the_command_to_run(
    tmp_path: Path, source: Path
) -> None:
    def duel(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "moot", "run", "duel", *args, "--agents", "local"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )

    slipped = duel("--source", str(source))
    assert slipped.returncode == 2 and "Traceback" not in slipped.stderr
    assert slipped.stderr.strip().endswith(f"run moot run duel {source}."), slipped.stderr
    bare = duel()
    assert bare.returncode == 2 and "run moot run duel DOCUMENT.md." in bare.stderr
    assert not (tmp_path / "debates").exists()

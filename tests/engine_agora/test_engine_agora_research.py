"""--research N --source: research drones report evidence from the sources before the debate; the pool reaches
every debater and survives resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from engine_agora_helpers import checks_clean, drone, every_role, run, start

from moot.agents import AgentRequest, FunctionAgent
from moot.errors import AgentError, UserError
from moot.protocols.agora.driver import FAILED, RESEARCHER, AgoraDriver, research_path

NOTES = (
    "Our 14 services live in 14 repositories. A change to the shared auth library needs 14 pull requests.\n"
    "Two teams reported version drift: service A uses auth 2.1 while service B still uses auth 1.8.\n"
)


def notes_source(root: Path) -> str:
    notes = root / "notes.md"
    notes.write_text(NOTES, encoding="utf-8")
    return str(notes)


def findings(*items: tuple[str, str]) -> str:
    return json.dumps({"evidence": [{"source": s, "content": c, "confidence": 0.9} for s, c in items]})


class Debate:
    """Researchers answer from a list; debaters propose, approve and hold, then the agent runs dry."""

    def __init__(self, research: list[str], debate: list[str]) -> None:
        self.research, self.debate = research, debate
        self.requests: list[AgentRequest] = []
        self.agent = FunctionAgent(self.answer)

    def answer(self, request: AgentRequest) -> str:
        self.requests.append(request)
        queue = self.research if request.role == RESEARCHER else self.debate
        if not queue:
            raise AgentError("the test script has no reply left")
        return queue.pop(0)


AGREEING = [drone("propose"), drone("approve", "proposal-advocate"), drone("no-change")]


def test_research_drones_speak_first_and_every_debater_sees_the_pool(tmp_path: Path) -> None:
    driver = start(tmp_path, research=2, sources=[notes_source(tmp_path)])
    assert driver.roles() == ["advocate", "skeptic", "mediator", RESEARCHER]
    debate = Debate(
        [
            findings(("notes.md:1", "A change to the shared auth library needs 14 pull requests")),
            findings(("notes.md:2", "service A uses auth 2.1 while service B still uses auth 1.8")),
        ],
        list(AGREEING),
    )
    result = run(driver, every_role(driver, debate.agent))
    assert result.outcome is not None and result.outcome.name == "CONSENSUS"
    first, second, *debaters = debate.requests
    assert [first.role, second.role] == [RESEARCHER, RESEARCHER]
    assert "RESEARCH DRONE: 1 of 2" in first.prompt and "RESEARCH DRONE: 2 of 2" in second.prompt
    # Each drone reads the passages retrieved for the topic and its focus, line by line with path:line.
    assert "SOURCE PASSAGES" in first.prompt and "notes.md:1: Our 14 services live in 14 repositories." in first.prompt
    assert first.json_schema is not None and first.json_schema["properties"]["evidence"]["minItems"] == 1
    offered = first.json_schema["properties"]["evidence"]["items"]["anyOf"]
    assert {"const": "notes.md:2"} in [o["properties"]["source"] for o in offered]
    for request in debaters:
        lines = request.prompt.split("\n")
        pool = lines.index("EVIDENCE POOL:")
        said = next(i for i, line in enumerate(lines) if line.startswith("OPPONENT SAID:"))
        assert pool < said < lines.index("YOUR TURN. Output JSON only:")  # the pool stays, what was said changes
        assert "- [notes.md:1] A change to the shared auth library needs 14 pull requests (confidence 0.9)" in lines
        assert "- [notes.md:2] service A uses auth 2.1 while service B still uses auth 1.8 (confidence 0.9)" in lines
        assert request.system is not None and "EVIDENCE POOL was gathered by research drones" in request.system
        assert request.json_schema is not None and request.json_schema["properties"]["evidence"]["maxItems"] == 1
    stored = json.loads(research_path(driver.record_path).read_text(encoding="utf-8"))
    assert stored["drones"] == 2 and [r["drone"] for r in stored["reports"]] == [1, 2]
    assert driver.summary().detail["research"] == {"drones": 2, "reported": 2, "evidence": 2}
    checks_clean(driver.record_path)


def test_a_resumed_debate_sees_the_same_pool_and_asks_no_researcher_again(tmp_path: Path) -> None:
    driver = start(tmp_path, research=1, sources=[notes_source(tmp_path)])
    debate = Debate([findings(("notes.md:2", "Two teams reported version drift"))], [drone("propose")])
    broken = run(driver, every_role(driver, debate.agent))
    assert broken.outcome is not None and broken.outcome.name == FAILED
    before = debate.requests[1].prompt.split("EVIDENCE POOL:")[1].split("\n\nTURN:")[0]

    resumed = AgoraDriver.resume(driver.record_path)
    assert resumed.next_speaker() == "skeptic"
    again = Debate([], [drone("approve", "proposal-advocate"), drone("no-change")])
    result = run(resumed, every_role(resumed, again.agent))
    assert result.outcome is not None and result.outcome.name == "CONSENSUS"
    assert all(r.role != RESEARCHER for r in again.requests)
    assert again.requests[0].prompt.split("EVIDENCE POOL:")[1].split("\n\nTURN:")[0] == before
    assert "Two teams reported version drift" in before
    checks_clean(resumed.record_path)


def test_an_interrupted_research_stage_asks_only_the_missing_drones(tmp_path: Path) -> None:
    driver = start(tmp_path, research=3, sources=[notes_source(tmp_path)])
    run(driver, every_role(driver, Debate([findings(("notes.md:1", "Our 14 services"))], []).agent))
    resumed = AgoraDriver.resume(driver.record_path)
    assert resumed.next_speaker() == RESEARCHER
    debate = Debate(
        [findings(("notes.md:1", "14 repositories")), findings(("notes.md:2", "version drift"))], list(AGREEING)
    )
    run(resumed, every_role(resumed, debate.agent))
    assert [r.prompt.split("\n")[1] for r in debate.requests[:2]] == [
        "RESEARCH DRONE: 2 of 3",
        "RESEARCH DRONE: 3 of 3",
    ]
    assert resumed.summary().detail["research"] == {"drones": 3, "reported": 3, "evidence": 3}


def test_a_bad_research_report_is_sent_back(tmp_path: Path) -> None:
    driver = start(tmp_path, research=1, sources=[notes_source(tmp_path)])
    bad = json.dumps({"evidence": [{"source": "notes.md:1", "content": "Our 14 services", "confidence": 1.5}]})
    debate = Debate(["not json", bad, findings(("notes.md:1", "Our 14 services"))], list(AGREEING))
    run(driver, every_role(driver, debate.agent))
    assert "REPLY_FORMAT" in debate.requests[1].prompt
    assert "AGORA_CONFIDENCE" in debate.requests[2].prompt
    stored = json.loads(research_path(driver.record_path).read_text(encoding="utf-8"))
    assert stored["reports"][0]["evidence"] == [
        {"source": "notes.md:1", "content": "Our 14 services", "confidence": 0.9}
    ]


def test_an_unreadable_source_or_sidecar_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist; check the path given to --source"):
        start(tmp_path, research=1, sources=[str(tmp_path / "missing.md")])
    assert not (tmp_path / ".agora").exists() or not any((tmp_path / ".agora").iterdir())
    driver = start(tmp_path, research=1, sources=[notes_source(tmp_path)])
    research_path(driver.record_path).write_text("{broken", encoding="utf-8")
    with pytest.raises(UserError, match="research sidecar"):
        AgoraDriver.resume(driver.record_path)

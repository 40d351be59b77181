"""The duel driver run by the real Engine with scripted participants: outcomes, repair, failure, resume."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from engine_duel_helpers import SOURCE_TEXT, STARTED, guided

from moot.agents import AgentRequest, FunctionAgent, ScriptAgent, ScriptedReply
from moot.agents.local import LocalAgent
from moot.agents.streaming import token_listener
from moot.config import load_settings
from moot.detect import check_path
from moot.engine.loop import Engine, Event, Limits, usage_path
from moot.engine.session import limits_from
from moot.errors import UserError
from moot.protocols.duel import record
from moot.protocols.duel.driver import COMPACT_REPLY_TOKENS, TEMPLATE_TOKENS, DuelDriver, DuelOptions, estimate_tokens


def start(root: Path, source: Path, **options: object) -> DuelDriver:
    return DuelDriver.start(root, DuelOptions(source=source, **options), STARTED)  # type: ignore[arg-type]


def script(*turns: tuple[str, str]) -> ScriptAgent:
    """Replies queued per role, so a reply can only ever reach the participant it was written for."""
    return ScriptAgent([ScriptedReply(text, role) for role, text in turns])


def run(driver: DuelDriver, agent: ScriptAgent | FunctionAgent, **limits: object) -> dict[str, object]:
    engine = Engine(driver, {role: agent for role in driver.roles()}, Limits(**limits))  # type: ignore[arg-type]
    return asyncio.run(engine.run()).to_json()


def conclusion(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return text[text.index("## Terminal Conclusion") :]


def test_a_full_duel_reaches_accepted_consensus(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source, models=("script:a.json", "script:b.json"))
    agent = script(
        ("advocate", guided(1, "OPEN_TO_DEBATE")),
        ("skeptic", guided(2, "CONVERGING", blocking=("timing leaks through the pool",))),
        ("advocate", guided(3, "ACCEPTING_CONSENSUS")),
        ("skeptic", guided(4, "ACCEPTING_CONSENSUS")),
    )
    result = run(driver, agent)

    assert result["outcome"] == "ACCEPTED_CONSENSUS" and result["consensus"] is True
    assert result["turns"] == 4
    path = driver.record_path
    assert path == tmp_path / "debates" / "2026-05-01-shared-cache-across-tenants.md"
    assert check_path(path).exit_code == 0
    ending = conclusion(path)
    assert "**Outcome**: ACCEPTED_CONSENSUS" in ending and "**Candidate Convergence**: true" in ending
    # The conclusion names the source relative to the work root; only the seed's fields hold its absolute path.
    cited = source.relative_to(tmp_path).as_posix()
    assert f"`{cited}`" in ending and str(tmp_path) not in ending and "Shared cache across tenants" in ending
    text = path.read_text(encoding="utf-8")
    # Identities as the seed records them, and evidence cited by moot from the chosen section.
    assert "## Turn 2 — skeptic (moot / script:b.json) — CONVERGING" in text
    assert f"    - `{cited}` § Eviction" in text
    assert "- timing leaks through the pool (blocking)" in text
    assert "- Turn 2: turn 2 answered my concern" in text  # the stance revision support of turn 3
    assert source.read_text(encoding="utf-8") == SOURCE_TEXT
    assert driver.summary().detail["candidate_convergence"] is True
    assert driver.next_speaker() is None


def test_candidate_convergence_is_reported_but_the_duel_runs_to_max_turns(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source, max_turns=4)
    agent = script(
        ("advocate", guided(1, "OPEN_TO_DEBATE")),
        ("skeptic", guided(2, "CONVERGING")),
        ("advocate", guided(3, "CONVERGING")),
        ("skeptic", guided(4, "CONVERGING", revision=False)),
    )
    seen: list[tuple[int, bool, str | None]] = []

    def watch(event: Event) -> None:
        if event.type == "turn_accepted":
            summary = driver.summary()
            outcome = summary.outcome.name if summary.outcome else None
            seen.append((summary.turns, summary.detail["candidate_convergence"], outcome))

    engine = Engine(driver, {"advocate": agent, "skeptic": agent}, subscribers=(watch,))
    result = asyncio.run(engine.run()).to_json()

    assert seen[2] == (3, True, None)  # both lean to agreement after turn 3, yet the duel goes on
    assert result["outcome"] == "MAX_TURNS" and result["consensus"] is False
    assert "**Outcome**: MAX_TURNS" in conclusion(driver.record_path)
    assert "**Candidate Convergence**: true" in conclusion(driver.record_path)
    assert check_path(driver.record_path).exit_code == 0
    assert source.read_bytes() == SOURCE_TEXT.encode()


def test_both_dissenting_ends_in_dissent(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source)
    agent = script(
        ("advocate", guided(1, "OPEN_TO_DEBATE")),
        ("skeptic", guided(2, "DISSENTING", blocking=("isolation is not shown",))),
        ("advocate", guided(3, "DISSENTING")),
    )
    result = run(driver, agent)
    assert result["outcome"] == "DISSENT" and result["turns"] == 3
    assert check_path(driver.record_path).exit_code == 0


def test_an_invalid_turn_goes_back_with_its_violations_and_the_repair_is_accepted(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source, max_turns=2)
    agent = script(
        ("advocate", guided(1, "OPEN_TO_DEBATE")),
        # Accepting consensus while naming a blocking issue breaks DUEL_CONSENSUS_UNRESOLVED.
        ("skeptic", guided(2, "ACCEPTING_CONSENSUS", blocking=("eviction fairness",))),
        ("skeptic", guided(2, "CONVERGING")),
    )
    result = run(driver, agent, repairs=2)

    assert result["outcome"] == "MAX_TURNS" and result["turns"] == 2
    first, repair = [r for r in agent.requests if r.role == "skeptic"]
    assert "DUEL_CONSENSUS_UNRESOLVED" not in first.prompt
    assert "DUEL_CONSENSUS_UNRESOLVED" in repair.prompt and "blocking" in repair.prompt
    assert "Fix the errors and try again." in repair.prompt
    assert repair.json_schema == first.json_schema
    rows = [json.loads(line) for line in usage_path(driver.record_path).read_text().splitlines()]
    assert [(r["role"], r["attempt"], r["accepted"]) for r in rows] == [
        ("advocate", 1, True),
        ("skeptic", 1, False),
        ("skeptic", 2, True),
    ]
    assert check_path(driver.record_path).exit_code == 0


def test_a_reply_that_is_not_json_is_a_reply_format_violation(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source, max_turns=2)
    agent = script(
        ("advocate", '{"stance": "OPEN_TO_DEBATE", "position": "cut off'),
        ("advocate", guided(1, "OPEN_TO_DEBATE")),
        ("skeptic", guided(2, "DISSENTING")),
    )
    run(driver, agent)
    repair = agent.requests[1]
    assert "REPLY_FORMAT" in repair.prompt and "JSON object is incomplete: it ends at line 1" in repair.prompt
    assert check_path(driver.record_path).exit_code == 0


def test_a_participant_that_never_gives_a_valid_turn_ends_the_duel_in_timeout(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source)
    unknown_section = guided(1, "OPEN_TO_DEBATE", novel_evidence={"section": "Security", "principle": ""})
    agent = FunctionAgent(lambda request: unknown_section)
    result = run(driver, agent, repairs=1)

    assert result["outcome"] == "TIMEOUT" and result["turns"] == 0
    assert len(agent.requests) == 2
    assert "'Security' is not one of the choices" in agent.requests[1].prompt
    # The repair keeps the run's turn deadline (it once fell back to the request's default of 120 s).
    assert [r.timeout_s for r in agent.requests] == [Limits().turn_timeout_s] * 2
    ending = conclusion(driver.record_path)
    assert "**Outcome**: TIMEOUT" in ending
    assert "**Reason**: advocate gave no valid turn in 2 attempts (last: REPLY_FORMAT)" in ending
    report = check_path(driver.record_path)
    assert report.exit_code == 0 and report.summary is not None
    assert report.summary.outcome is not None and report.summary.outcome.name == "TIMEOUT"
    assert source.read_text(encoding="utf-8") == SOURCE_TEXT
    # Resuming a concluded duel does nothing more.
    again = DuelDriver(driver.record_path)
    assert again.next_speaker() is None and again.summary().status == "TIMEOUT"


def test_a_failing_agent_ends_the_duel_in_timeout_with_its_reason(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source)
    result = run(driver, script(("advocate", guided(1, "OPEN_TO_DEBATE"))))
    assert result["outcome"] == "TIMEOUT" and result["turns"] == 1
    assert "skeptic's agent failed" in conclusion(driver.record_path)
    assert check_path(driver.record_path).exit_code == 0


def test_text_that_would_not_read_back_is_refused_before_commit(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source)
    candidate = driver.read_reply("advocate", guided(1, "OPEN_TO_DEBATE", position="## Terminal Conclusion"), "t")
    assert [v.rule for v in candidate.errors] == ["DUEL_TURN_STRUCTURE"]
    # Line breaks inside strings (which small models write) are accepted and made single lines.
    broken = guided(1, "OPEN_TO_DEBATE").replace("Position 1:", "Position\n1:")
    candidate = driver.read_reply("advocate", broken, "t")
    assert not candidate.errors and candidate.turn.position.startswith("Position 1:")


def max_chars(pattern: str) -> int:
    """The most characters a compact text field's pattern (core.hollow.content_pattern) lets through."""
    found = re.search(r"\{0,(\d+)\}\$$", pattern)
    assert found is not None, pattern
    return int(found.group(1)) + 1


def without_principles(reply: dict[str, Any]) -> dict[str, Any]:
    """A guided reply as a small model writes it: evidence names its section only."""
    points = [{**c, "evidence": {"section": c["evidence"]["section"]}} for c in reply["counterpoints"]]
    return {**reply, "counterpoints": points, "novel_evidence": {"section": reply["novel_evidence"]["section"]}}


def compact(driver: DuelDriver) -> DuelDriver:
    """The driver as the engine sets it up for the embedded model (its small-context bounds)."""
    driver.turn_bounds = dict.fromkeys(driver.roles(), LocalAgent.turn_bounds)
    return driver


def test_the_request_offers_only_what_is_legal_and_bounds_every_string(tmp_path: Path, source: Path) -> None:
    driver = compact(start(tmp_path, source))
    first = driver.request_for("advocate")
    schema = first.json_schema
    assert schema is not None and first.max_tokens is not None
    assert schema["properties"]["stance"]["enum"] == ["OPEN_TO_DEBATE"]
    assert schema["$defs"]["Evidence"]["properties"]["section"]["enum"] == [
        "Shared cache across tenants",
        "Goals",
        "Eviction",
        "Billing",
    ]
    assert "stance_revision" not in schema["properties"]
    for part in (schema, *schema["$defs"].values()):
        assert part["required"] == list(part["properties"])
        for name, value in part["properties"].items():
            items = value.get("items", value)
            if items.get("type") == "string" and "enum" not in items:
                assert 0 < max_chars(items["pattern"]) <= 160, name
            if value.get("type") == "array":
                assert value["maxItems"] == 1, name
    # The embedded model's evidence names a section only: each principle cost it tokens, not validity.
    assert "principle" not in schema["$defs"]["Evidence"]["properties"] and "principle" not in first.prompt
    assert SOURCE_TEXT.strip() in first.prompt
    assert (
        f"`{source.relative_to(tmp_path).as_posix()}` § <section>" in first.prompt and str(tmp_path) not in first.prompt
    )

    driver.commit(driver.read_reply("advocate", guided(1, "OPEN_TO_DEBATE"), "t").turn)
    driver.commit(driver.read_reply("skeptic", guided(2, "DISSENTING"), "t").turn)
    third = driver.request_for("advocate").json_schema
    assert third is not None
    # Two shapes: any other stance, or ACCEPTING_CONSENSUS with no blocking issue.
    other, accepting = third["anyOf"]
    assert len(other["properties"]["stance"]["enum"]) == 4
    assert accepting["properties"]["stance"]["enum"] == ["ACCEPTING_CONSENSUS"]
    assert other["properties"]["stance_revision"] == {"$ref": "#/$defs/StanceRevision"}
    addresses = third["$defs"]["GuidedCounterpoint"]["properties"]["addresses"]["enum"]
    assert addresses[:2] == ["Turn 1", "Turn 2"] and "source § Goals" in addresses
    assert "Turn 2 — skeptic — DISSENTING" in driver.request_for("advocate").prompt


def test_a_small_models_schema_cannot_accept_consensus_beside_a_blocking_issue(tmp_path: Path, source: Path) -> None:
    # The embedded model used to write ACCEPTING_CONSENSUS with a blocking issue and repeat it under repair,
    # ending the duel with no valid turn; under its grammar that turn cannot be written.
    small, full = compact(start(tmp_path / "small", source)), start(tmp_path / "full", source)
    for driver in (small, full):
        driver.commit(driver.read_reply("advocate", guided(1, "OPEN_TO_DEBATE"), "t").turn)
    both = json.loads(guided(2, "ACCEPTING_CONSENSUS", blocking=("Billing is undecided",)))
    accepting = json.loads(guided(2, "ACCEPTING_CONSENSUS"))
    dissenting = json.loads(guided(2, "DISSENTING", blocking=("Billing is undecided",)))
    small_schema, full_schema = small.request_for("skeptic").json_schema, full.request_for("skeptic").json_schema
    assert not jsonschema.Draft202012Validator(small_schema).is_valid(without_principles(both))
    assert jsonschema.Draft202012Validator(small_schema).is_valid(without_principles(accepting))
    assert jsonschema.Draft202012Validator(small_schema).is_valid(without_principles(dissenting))
    # A full-size model gets one object schema (hosted structured output needs it) and the rule by repair.
    assert "anyOf" not in full_schema and jsonschema.Draft202012Validator(full_schema).is_valid(both)
    assert [v.rule for v in full.read_reply("skeptic", json.dumps(both), "t").errors] == ["DUEL_CONSENSUS_UNRESOLVED"]


def test_a_long_source_is_cut_to_fit_the_small_models_context(tmp_path: Path) -> None:
    source = tmp_path / "long.markdown"
    body = "\n\n".join(f"## Section {n}\n" + f"Sentence {n} about caching. " * 40 for n in range(60))
    source.write_text("# Long design\n\n" + body + "\n\nTHE LAST LINE\n", encoding="utf-8")
    driver = compact(start(tmp_path, source))
    request = driver.request_for("advocate")
    assert "THE LAST LINE" not in request.prompt and "[…]" in request.prompt
    context = LocalAgent.turn_bounds.context_tokens
    assert estimate_tokens((request.system or "") + request.prompt) <= context - COMPACT_REPLY_TOKENS - TEMPLATE_TOKENS
    sections = request.json_schema["$defs"]["Evidence"]["properties"]["section"]["enum"]  # type: ignore[index]
    assert sections[:2] == ["Long design", "Section 0"] and len(sections) == 40


def test_topic_comes_from_the_option_then_the_first_heading_then_the_file_stem(tmp_path: Path, source: Path) -> None:
    assert start(tmp_path / "a", source, topic="Eviction  policy").config.topic == "Eviction policy"
    assert start(tmp_path / "b", source).config.topic == "Shared cache across tenants"
    plain = tmp_path / "tenant-notes.md"
    plain.write_text("No headings here, only text.\n", encoding="utf-8")
    driver = start(tmp_path / "c", plain)
    assert driver.config.topic == "tenant-notes"
    # A source without headings is cited by its line range, which still counts as a source locator.
    assert driver.sections == ["lines 1-1"]


def test_bad_input_is_a_one_sentence_user_error(tmp_path: Path, source: Path) -> None:
    text_file = tmp_path / "notes.txt"
    text_file.write_text("# Notes\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"not a Markdown file; give a \.md or \.markdown"):
        start(tmp_path, text_file)
    with pytest.raises(UserError, match="cannot read the source document"):
        start(tmp_path, tmp_path / "missing.md")
    with pytest.raises(UserError, match=r"--max-turns 7 is outside 2\.\.6"):
        start(tmp_path, source, max_turns=7)
    start(tmp_path, source)
    with pytest.raises(UserError, match="already exists; resume it with `moot resume"):
        start(tmp_path, source)
    with pytest.raises(UserError, match="cannot start the duel"):
        start(tmp_path, source, topic="Other", roles=("a(b)", "c"))


class Killed(BaseException):
    """Stands in for a SIGKILL mid-turn: not an Exception, so the engine does not turn it into an outcome."""


def test_resume_after_a_crash_finishes_with_no_lost_or_repeated_turn(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source, max_turns=4)
    replies = {1: guided(1, "OPEN_TO_DEBATE"), 2: guided(2, "CONVERGING")}

    def until_crash(request: AgentRequest) -> str:
        number = driver.summary().turns + 1
        if number not in replies:
            raise Killed("the process was killed")
        return replies[number]

    with pytest.raises(Killed, match="killed"):
        run(driver, FunctionAgent(until_crash))
    assert check_path(driver.record_path).exit_code == 0

    resumed = DuelDriver(driver.record_path)
    assert resumed.summary().turns == 2 and resumed.next_speaker() == "advocate"
    agent = script(("advocate", guided(3, "ACCEPTING_CONSENSUS")), ("skeptic", guided(4, "ACCEPTING_CONSENSUS")))
    result = run(resumed, agent)
    assert result["outcome"] == "ACCEPTED_CONSENSUS" and result["turns_this_run"] == 2
    text = resumed.record_path.read_text(encoding="utf-8")
    assert [text.count(f"## Turn {n} —") for n in range(1, 6)] == [1, 1, 1, 1, 0]
    assert check_path(resumed.record_path).exit_code == 0


def test_a_crash_between_the_last_turn_and_the_conclusion_is_finished_on_resume(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source, max_turns=2)
    driver.commit(driver.read_reply("advocate", guided(1, "OPEN_TO_DEBATE"), "t").turn)
    last = driver.read_reply("skeptic", guided(2, "CONVERGING"), "t").turn
    record.append_turn(driver.record_path, last)  # the turn is written, then the process dies
    assert "DUEL_CONCLUSION_MISSING" in [v.rule for v in check_path(driver.record_path).violations]

    resumed = DuelDriver(driver.record_path)
    assert resumed.next_speaker() is None and resumed.summary().status == "MAX_TURNS"
    report = check_path(resumed.record_path)
    assert report.exit_code == 0 and report.violations == []


def test_without_repairs_the_reason_counts_one_attempt(tmp_path: Path, source: Path) -> None:
    driver = start(tmp_path, source)
    agent = FunctionAgent(lambda request: "not a turn")
    result = run(driver, agent, repairs=0)
    assert result["outcome"] == "TIMEOUT" and len(agent.requests) == 1
    assert "advocate gave no valid turn in 1 attempt (last: REPLY_FORMAT)" in conclusion(driver.record_path)


class SlowHere(FunctionAgent):
    """An agent that computes its turns on this machine: 0.6 s a turn, which it expects (like the embedded model)."""

    def __init__(self) -> None:
        turns = iter([guided(1, "OPEN_TO_DEBATE"), guided(2, "DISSENTING")])

        async def slowly(request: AgentRequest) -> str:
            await asyncio.sleep(0.6)
            return next(turns)

        super().__init__(slowly)

    def expected_seconds(self, request: AgentRequest) -> float | None:
        return 0.6


@pytest.mark.parametrize("stretches", [True, False])
def test_the_default_turn_timeout_stretches_to_a_slow_local_agents_measured_speed(
    tmp_path: Path, source: Path, stretches: bool
) -> None:
    # The embedded model on a busy machine is slow, not stuck: moot's default timeout (here 0.3 s) stretches to
    # twice what it expects; a timeout that someone set (stretches=False) holds, and the run halts resumably.
    driver = start(tmp_path, source, max_turns=2)
    agent = SlowHere()
    limits = Limits(turn_timeout_s=0.3, turn_timeout_stretches=stretches)
    result = asyncio.run(Engine(driver, {"advocate": agent, "skeptic": agent}, limits).run())
    if stretches:
        assert result.outcome is not None and result.summary.turns == 2  # both turns written, none cut
        assert all(request.timeout_s == 2 for request in agent.requests)  # 2 × 0.6 s, in whole seconds
    else:
        assert result.outcome is None and result.halted is not None and result.halted["cause"] == "turn_timeout"
        assert "turn timeout of 0.3 s" in result.halted["reason"]


def test_only_moots_own_default_turn_timeout_stretches(tmp_path: Path) -> None:
    assert limits_from(load_settings(tmp_path)).turn_timeout_stretches
    assert not limits_from(load_settings(tmp_path), turn_timeout_s=60).turn_timeout_stretches  # --turn-timeout 60
    (tmp_path / "moot.toml").write_text("turn_timeout_s = 600\n", encoding="utf-8")
    assert not limits_from(load_settings(tmp_path)).turn_timeout_stretches


class TricklingHere(FunctionAgent):
    """Computes its turns here, 1.5 s each, a token every 0.1 s; it expects 0.2 s (the machine got busier)."""

    def __init__(self, *, tokens: bool) -> None:
        turns = iter([guided(1, "OPEN_TO_DEBATE"), guided(2, "DISSENTING")])

        async def trickle(request: AgentRequest) -> str:
            heard = token_listener()
            for count in range(1, 16):
                await asyncio.sleep(0.1)
                if tokens:
                    heard(count)
            return next(turns)

        super().__init__(trickle)

    def expected_seconds(self, request: AgentRequest) -> float | None:
        return 0.2


@pytest.mark.parametrize("tokens", [True, False])
def test_a_stretched_turn_goes_on_while_tokens_keep_coming(tmp_path: Path, source: Path, tokens: bool) -> None:
    # Past its stretched deadline (1 s) a turn still writing tokens goes on; one silent as long is cut.
    driver = start(tmp_path, source, max_turns=2)
    agent = TricklingHere(tokens=tokens)
    limits = Limits(turn_timeout_s=0.5, turn_timeout_stretches=True)
    result = asyncio.run(Engine(driver, {"advocate": agent, "skeptic": agent}, limits).run())
    if tokens:
        assert result.outcome is not None and result.summary.turns == 2
    else:
        assert result.outcome is None and result.halted is not None and result.halted["cause"] == "turn_timeout"

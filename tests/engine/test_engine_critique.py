"""moot drives a Critique Loop itself: prompts per the seed, repair, failure outcomes, budgets, usage."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from engine_helpers import reply

from moot.agents import AgentRequest, FunctionAgent, ScriptAgent
from moot.agents.base import TurnBounds
from moot.cli.check import report_text
from moot.core.run_state import RUN_HALTED
from moot.detect import check_path
from moot.engine.loop import Engine, Limits, usage_path
from moot.errors import AgentUnavailable
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions

STARTED = "2026-11-22 09:00"


def start(tmp_path: Path, **options: object) -> CritiqueDriver:
    values: dict[str, object] = {"topic": "Adopt a monorepo"}
    values.update(options)
    return CritiqueDriver.start(tmp_path, CritiqueOptions(**values), STARTED)  # type: ignore[arg-type]


def run(driver: CritiqueDriver, agents: dict[str, object], limits: Limits | None = None):
    clock = iter(f"2026-11-22 09:{minute:02d}" for minute in range(1, 60))
    return asyncio.run(Engine(driver, agents, limits, clock=lambda: next(clock)).run())  # type: ignore[arg-type]


def recording(replies: list[str]) -> tuple[FunctionAgent, list[AgentRequest]]:
    seen: list[AgentRequest] = []
    queue = list(replies)

    def answer(request: AgentRequest) -> str:
        seen.append(request)
        return queue.pop(0)

    return FunctionAgent(answer), seen


def test_a_full_dialogue_reaches_done_and_the_record_checks_clean(tmp_path: Path) -> None:
    driver = start(tmp_path)
    agent = ScriptAgent()
    agent.enqueue(reply("Use one repository."), role="proposer")
    agent.enqueue(reply("What about CI time?"), role="critic")
    agent.enqueue(reply("Build only what changed.", "PROPOSING_DONE"), role="proposer")
    agent.enqueue(reply("Agreed.", "DONE", "One repo; scoped builds."), role="critic")
    result = run(driver, {"proposer": agent, "critic": agent})
    assert result.outcome is not None and result.outcome.name == "DONE" and result.outcome.consensus
    assert result.summary.turns == 4
    report = check_path(driver.record_path)
    assert report.exit_code == 0, report.violations
    text = driver.record_path.read_text()
    last_turn, mark = text.rstrip().rsplit("\n\n", 1)  # the last turn, then the chain's head after it
    assert "## [critic] Round 2 — 2026-11-22 09:04" in text and last_turn.endswith("Status: DONE")
    assert mark.startswith("<!-- moot-chain turns=4 head=")


def test_the_partner_never_receives_the_users_context(tmp_path: Path) -> None:
    driver = start(tmp_path, context="SECRET-CONTEXT: we have 12 services")
    proposer, proposer_saw = recording([reply("Proposal."), reply("Revised.", "PROPOSING_DONE")])
    critic, critic_saw = recording([reply("Concern."), reply("Fine.", "DONE", "Agreed on the proposal.")])
    run(driver, {"proposer": proposer, "critic": critic})
    assert all("SECRET-CONTEXT" in r.prompt for r in proposer_saw)
    assert critic_saw and not any("SECRET-CONTEXT" in (r.prompt + (r.system or "")) for r in critic_saw)
    assert "SECRET-CONTEXT" not in driver.record_path.read_text()


def test_the_partner_reads_the_dialogue_itself(tmp_path: Path) -> None:
    driver = start(tmp_path)
    proposer, _ = recording([reply("Use trunk-based development."), reply("x", "PROPOSING_DONE")])
    critic, critic_saw = recording([reply("Concern."), reply("Fine.", "DONE", "Done.")])
    run(driver, {"proposer": proposer, "critic": critic})
    assert "Use trunk-based development." in critic_saw[0].prompt


def test_the_reply_schema_offers_only_legal_statuses(tmp_path: Path) -> None:
    driver = start(tmp_path)
    first = driver.request_for("proposer").json_schema
    assert first is not None and first["properties"]["status"]["enum"] == ["AWAITING"]
    proposer, _ = recording([reply("One repo."), reply("Ready.", "PROPOSING_DONE")])
    critic, critic_saw = recording([reply("Concern."), reply("Agreed.", "DONE", "One repo.")])
    run(driver, {"proposer": proposer, "critic": critic})
    after_proposal = critic_saw[1].json_schema
    assert after_proposal is not None and after_proposal["properties"]["status"]["enum"] == ["DONE", "AWAITING"]


def test_an_invalid_reply_goes_back_with_the_rule_ids_and_is_repaired(tmp_path: Path) -> None:
    driver = start(tmp_path, max_rounds=1)
    proposer, proposer_saw = recording(["this is not json", reply("One repo.")])
    critic, _ = recording([reply("Fine.")])
    result = run(driver, {"proposer": proposer, "critic": critic})
    assert len(proposer_saw) == 2
    assert "REPLY_FORMAT" in proposer_saw[1].prompt and "Fix the errors and try again." in proposer_saw[1].prompt
    assert result.summary.turns == 2
    rows = [json.loads(line) for line in usage_path(driver.record_path).read_text().splitlines()]
    assert [(r["turn"], r["role"], r["attempt"], r["accepted"]) for r in rows] == [
        (1, "proposer", 1, False),
        (1, "proposer", 2, True),
        (2, "critic", 1, True),
    ]


def test_a_protocol_violation_is_sent_back_too(tmp_path: Path) -> None:
    driver = start(tmp_path)
    proposer, proposer_saw = recording([reply("", "STUCK"), reply("One repo.")])  # STUCK must explain itself
    critic, _ = recording([reply("Concern.")])
    run(driver, {"proposer": proposer, "critic": critic}, Limits(max_turns=2))
    assert "CRITIQUE_STUCK_EXPLANATION" in proposer_saw[1].prompt
    assert driver.summary().turns == 2


def test_an_empty_message_is_sent_back_and_the_repaired_dialogue_checks_clean(tmp_path: Path) -> None:
    driver = start(tmp_path, max_rounds=1)
    proposer, proposer_saw = recording([reply("]["), reply("One repository for all services.")])
    critic, _ = recording([reply("What about CI time?")])
    result = run(driver, {"proposer": proposer, "critic": critic})
    assert len(proposer_saw) == 2 and "CRITIQUE_EMPTY_MESSAGE" in proposer_saw[1].prompt
    assert result.outcome is not None and result.outcome.name == "MAX_ROUNDS" and result.summary.turns == 2
    report = check_path(driver.record_path)
    assert report.exit_code == 0 and report.violations == []
    assert "][" not in driver.record_path.read_text()


def test_an_echoed_turn_is_kept_with_a_warning_in_a_run(tmp_path: Path) -> None:
    """An echo is not sent back: the embedded model repeats itself on every repair, and its runs would halt."""
    driver = start(tmp_path, max_rounds=1)
    said = "Use one repository for all services, with scoped builds."
    proposer, _ = recording([reply(said)])
    critic, critic_saw = recording([reply(said.upper())])
    result = run(driver, {"proposer": proposer, "critic": critic})
    assert len(critic_saw) == 1 and result.summary.turns == 2
    (echo,) = check_path(driver.record_path).violations
    assert (echo.rule, echo.severity, echo.turn) == ("CRITIQUE_ECHO", "warning", 2)


def test_a_small_models_schema_opens_the_message_with_a_letter_or_digit(tmp_path: Path) -> None:
    driver = start(tmp_path)
    driver.turn_bounds = {"proposer": TurnBounds(compact=True)}
    message = driver.request_for("proposer").json_schema["properties"]["message"]  # type: ignore[index]
    assert re.fullmatch(message["pattern"].strip("^$"), "One repo, scoped builds.")
    assert not re.fullmatch(message["pattern"].strip("^$"), "][")
    assert "pattern" not in driver.request_for("critic").json_schema["properties"]["message"]  # type: ignore[index]


def test_a_participant_that_never_gives_a_valid_turn_ends_the_run_with_the_reason(tmp_path: Path) -> None:
    driver = start(tmp_path)
    before = driver.record_path.read_text()
    proposer, proposer_saw = recording(["nope"] * 3)
    result = run(driver, {"proposer": proposer, "critic": ScriptAgent()})
    assert len(proposer_saw) == 3  # the first try and two repairs (the default)
    assert result.outcome is not None and result.outcome.name == RUN_HALTED and not result.outcome.consensus
    assert "3 attempts" in result.outcome.reason and "REPLY_FORMAT" in result.outcome.reason
    assert driver.record_path.read_text() == before  # the orchestrator never writes a turn
    # The halt is durable: a later `moot check` (a fresh process) reports it beside the open state.
    report = check_path(driver.record_path)
    assert report.exit_code == 0 and report.summary is not None and report.summary.status == "open"
    halted = report.summary.detail["run_halted"]
    assert halted["cause"] == "repairs_exhausted" and halted["role"] == "proposer" and "3 attempts" in halted["reason"]
    assert RUN_HALTED in report_text(report) and f"moot resume {driver.record_path}" in report_text(report)
    # Every attempt is kept with its raw reply and the violations that refused it.
    rows = [json.loads(line) for line in usage_path(driver.record_path).read_text().splitlines()]
    assert [(r["attempt"], r["reply"], r["accepted"]) for r in rows] == [
        (1, "nope", False),
        (2, "nope", False),
        (3, "nope", False),
    ]
    assert all(r["violations"][0]["rule"] == "REPLY_FORMAT" and r["violations"][0]["message"] for r in rows)


def test_a_resumed_run_clears_the_halt_once_it_moves_on(tmp_path: Path) -> None:
    driver = start(tmp_path, max_rounds=1)
    run(driver, {"proposer": FunctionAgent(lambda r: "nope"), "critic": ScriptAgent()})
    assert "run_halted" in check_path(driver.record_path).summary.detail  # type: ignore[union-attr]
    proposer, _ = recording([reply("One repo.")])
    critic, _ = recording([reply("Fine.")])
    run(CritiqueDriver.resume(driver.record_path), {"proposer": proposer, "critic": critic})
    report = check_path(driver.record_path)
    assert report.summary is not None and report.summary.status == "MAX_ROUNDS"
    assert "run_halted" not in report.summary.detail


def test_done_that_confirms_no_proposal_is_refused_in_a_run(tmp_path: Path) -> None:
    """Consensus needs both parties: the opener cannot end the dialogue alone in turn 1."""
    driver = start(tmp_path)
    proposer, proposer_saw = recording([reply("Done already.", "DONE", "We agree."), reply("One repo.")])
    critic, _ = recording([reply("Concern.")])
    run(driver, {"proposer": proposer, "critic": critic}, Limits(max_turns=2))
    assert len(proposer_saw) == 2 and "CRITIQUE_DONE_CONFIRMS" in proposer_saw[1].prompt
    report = check_path(driver.record_path)
    assert report.summary is not None and report.summary.turns == 2 and report.summary.status == "open"
    assert "Status: DONE" not in driver.record_path.read_text()


def test_an_unreachable_agent_ends_the_run_cleanly(tmp_path: Path) -> None:
    driver = start(tmp_path)

    def down(request: AgentRequest) -> str:
        raise AgentUnavailable("cannot reach http://127.0.0.1:9: start the server")

    result = run(driver, {"proposer": FunctionAgent(down), "critic": FunctionAgent(down)})
    assert result.outcome is not None and "cannot reach" in result.outcome.reason
    assert check_path(driver.record_path).exit_code == 0


def test_an_agent_that_raises_something_unexpected_ends_the_run_with_its_cause(tmp_path: Path) -> None:
    """A plugin agent's own bug (here a KeyError) ends the debate as a failure that names it, not a crash."""
    driver = start(tmp_path)

    def broken(request: AgentRequest) -> str:
        raise KeyError("choices")

    result = run(driver, {"proposer": FunctionAgent(broken), "critic": FunctionAgent(broken)})
    assert result.outcome is not None and result.outcome.name == RUN_HALTED
    assert result.outcome.reason == "proposer's agent failed unexpectedly: KeyError: 'choices'"
    assert check_path(driver.record_path).exit_code == 0


def test_budgets_stop_the_run_with_the_reason(tmp_path: Path) -> None:
    driver = start(tmp_path)
    agent, _ = recording([reply(f"turn {n}") for n in range(10)])
    result = run(driver, {"proposer": agent, "critic": agent}, Limits(max_turns=3))
    assert result.summary.turns == 3
    assert result.outcome is not None and "cap of 3 turns" in result.outcome.reason


def test_resuming_continues_from_the_record_without_repeating_a_turn(tmp_path: Path) -> None:
    driver = start(tmp_path, max_rounds=2)
    agent, _ = recording([reply("one"), reply("two")])
    run(driver, {"proposer": agent, "critic": agent}, Limits(max_turns=2))
    resumed = CritiqueDriver.resume(driver.record_path)
    assert resumed.summary().turns == 2 and resumed.next_speaker() == "proposer"
    agent2, _ = recording([reply("three"), reply("four")])
    result = run(resumed, {"proposer": agent2, "critic": agent2})
    assert result.summary.turns == 4 and result.outcome is not None and result.outcome.name == "MAX_ROUNDS"
    text = driver.record_path.read_text()
    assert [text.count(word) for word in ("one", "two", "three", "four")] == [1, 1, 1, 1]
    assert check_path(driver.record_path).exit_code == 0


def test_a_person_answers_stuck_and_the_other_role_continues(tmp_path: Path) -> None:
    driver = start(tmp_path)
    proposer, _ = recording([reply("We need a budget decision.", "STUCK")])
    critic, critic_saw = recording([reply("With that budget, one repository works.")])
    first = run(driver, {"proposer": proposer, "critic": critic})
    assert first.outcome is not None and first.outcome.name == "STUCK"
    driver.answer_stuck("The budget is 2 CI runners.")
    run(driver, {"proposer": proposer, "critic": critic}, Limits(max_turns=1))
    assert "The budget is 2 CI runners." in critic_saw[0].prompt
    assert driver.summary().turns == 2
    assert check_path(driver.record_path).exit_code == 0

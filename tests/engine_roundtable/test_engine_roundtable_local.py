"""A roundtable whose speakers and moderator are the real embedded model (SmolLM2-135M via llama.cpp)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from moot.agents import resolve_agent
from moot.detect import check_path
from moot.engine.loop import Engine, Limits
from moot.errors import AgentUnavailable
from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions


# About 45 s on two shared CPU cores: under the ~60 s the slow marker is for.
@pytest.mark.model
def test_the_embedded_model_holds_a_meeting_to_a_terminal_outcome_with_a_valid_record(tmp_path: Path) -> None:
    try:
        agent = resolve_agent("local")
    except AgentUnavailable as exc:
        pytest.skip(str(exc))
    options = RoundtableOptions(
        speakers=("architect", "reviewer"), topic="Should we cache database reads?", max_rounds=1
    )
    driver = RoundtableDriver.start(tmp_path, options, "2026-05-01 10:00")

    started = time.monotonic()
    engine = Engine(driver, {role: agent for role in driver.roles()}, Limits(repairs=2, turn_timeout_s=240))
    result = asyncio.run(engine.run())
    elapsed = time.monotonic() - started

    # closed (the moderator's minutes) or failed (a speaker gave no valid speech; the record stays open).
    report = check_path(driver.record_path)
    assert report.exit_code == 0, report.violations
    if result.outcome is None:  # a loaded machine: a speech ran past the 240 s limit, and the run halted resumably
        assert result.halted is not None and result.halted["cause"] == "turn_timeout" and result.resumable
        return
    assert result.outcome.name in {"closed", "RUN_HALTED"}, result.outcome
    if result.outcome.name == "closed":
        assert (driver.record_path / "MINUTES.md").is_file()
    assert all(row["prompt_tokens"] + row["completion_tokens"] <= 2048 for row in result.usage)
    print(
        f"\nlocal roundtable: {result.outcome.name} after {result.summary.turns} speech(es), {len(result.usage)} "
        f"call(s), {result.prompt_tokens}+{result.completion_tokens} tokens, {elapsed:.1f} s"
    )

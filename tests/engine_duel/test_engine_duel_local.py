"""A duel between two instances of the real embedded model (SmolLM2-135M via llama.cpp)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from moot.agents import AgentUnavailable, resolve_agent
from moot.detect import check_path
from moot.engine.loop import Engine, Limits
from moot.protocols.duel.driver import DuelDriver, DuelOptions
from moot.protocols.roundtable.guide import GUIDE_TEXT

TERMINAL = {"ACCEPTED_CONSENSUS", "DISSENT", "MAX_TURNS", "TIMEOUT"}


@pytest.mark.slow  # 110-190 s on two shared CPU cores: two grammar-constrained turns of ~400 tokens each
def test_the_embedded_model_duels_to_a_terminal_outcome_with_a_valid_record(tmp_path: Path) -> None:
    try:
        agent = resolve_agent("local")
    except AgentUnavailable as exc:
        pytest.skip(str(exc))
    # A real protocol document (the roundtable guide moot ships), too long for the model's context
    # together with the instructions: the prompt must be cut to fit.
    source = tmp_path / "roundtable-guide.md"
    source.write_text(GUIDE_TEXT, encoding="utf-8")
    before = source.read_bytes()
    driver = DuelDriver.start(
        tmp_path, DuelOptions(source=source, max_turns=2, models=("local", "local")), "2026-05-01 10:00"
    )

    started = time.monotonic()
    result = asyncio.run(
        Engine(driver, {"advocate": agent, "skeptic": agent}, Limits(repairs=2, turn_timeout_s=240)).run()
    )
    elapsed = time.monotonic() - started

    report = check_path(driver.record_path)
    assert report.exit_code == 0, report.violations
    if result.outcome is None:  # a loaded machine: a turn ran past the 240 s limit, and the run halted resumably
        assert result.halted is not None and result.halted["cause"] == "turn_timeout" and result.resumable
        return
    assert result.outcome.name in TERMINAL, result.outcome
    assert "## Terminal Conclusion" in driver.record_path.read_text(encoding="utf-8")
    assert source.read_bytes() == before
    # Every call fitted the 2048-token context (an overflow would have failed the agent instead).
    assert all(row["prompt_tokens"] + row["completion_tokens"] <= 2048 for row in result.usage)
    print(
        f"\nlocal duel: {result.outcome.name} after {result.summary.turns} turn(s), {len(result.usage)} call(s), "
        f"{result.prompt_tokens}+{result.completion_tokens} tokens, {elapsed:.1f} s"
    )

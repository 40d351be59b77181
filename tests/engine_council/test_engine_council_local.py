"""The embedded SmolLM2 as every member and as the drones and speakers of sealed openings: each run ends and
its record checks clean."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from council_helpers import start

from moot.agents import resolve_agent
from moot.detect import check_path
from moot.engine.loop import Engine, Limits
from moot.engine.sealed import read_commitments
from moot.errors import AgentUnavailable
from moot.protocols.agora.driver import AgoraDriver, AgoraOptions
from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions

LIMITS = Limits(turn_timeout_s=900)  # the embedded model on a loaded 2-core machine


@pytest.fixture(scope="module")
def local() -> object:
    from moot.agents.local import default_weights, llama_cpp_available

    if not llama_cpp_available():
        pytest.skip("llama-cpp-python is not installed (pip install 'moot[local]')")
    try:
        default_weights()
    except AgentUnavailable as exc:
        pytest.skip(str(exc))
    return resolve_agent("local")


def clean(path: Path) -> None:
    report = check_path(path)
    assert report.exit_code == 0, [str(v) for v in report.violations]


@pytest.mark.slow
def test_a_council_of_embedded_models_ends_and_its_record_checks(tmp_path: Path, local: object) -> None:
    driver = start(tmp_path, members=(("ada", "local"), ("bo", "local"), ("cy", "local")))
    result = asyncio.run(Engine(driver, dict.fromkeys(driver.roles(), local), LIMITS).run())  # type: ignore[arg-type]
    assert result.outcome is not None and result.outcome.name in {"SYNTHESIZED", "NO_QUORUM", "FAILED"}
    assert len(read_commitments(driver.record_path, "stage-1")) == 3
    clean(driver.record_path)


@pytest.mark.slow
def test_sealed_openings_on_the_embedded_model_end_and_their_records_check(tmp_path: Path, local: object) -> None:
    agora = AgoraDriver.start(
        tmp_path, AgoraOptions(topic="Tabs or spaces", max_turns=4, sealed=True), "2026-11-24 21:00"
    )
    result = asyncio.run(Engine(agora, dict.fromkeys(agora.roles(), local), LIMITS).run())  # type: ignore[arg-type]
    assert result.summary.turns >= 2, result.outcome  # both openings were revealed
    clean(agora.record_path)
    options = RoundtableOptions(speakers=("architect", "reviewer"), topic="Cache design", max_rounds=1, sealed=True)
    meeting = RoundtableDriver.start(tmp_path, options, "2026-11-24 21:00")
    result = asyncio.run(Engine(meeting, dict.fromkeys(meeting.roles(), local), LIMITS).run())  # type: ignore[arg-type]
    assert result.summary.turns >= 2, result.outcome
    clean(meeting.record_path)

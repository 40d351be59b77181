"""The embedded SmolLM2 as every debate drone: a real debate ends, its record checks, replies fit 100 tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from engine_agora_helpers import checks_clean, every_role, run, start

from moot.agents import resolve_agent
from moot.core.confidence import CONFIDENCES
from moot.engine.loop import usage_path
from moot.errors import AgentUnavailable
from moot.protocols.agora.driver import (
    EVIDENCE_CONTENT_CHARS,
    EVIDENCE_SOURCE_CHARS,
    MESSAGE_CHARS,
    MESSAGE_CHARS_WITH_EVIDENCE,
    REPLY_MAX_TOKENS,
)

# English as the seed writes it, to fill every string of a reply to its cap.
PROSE = (
    "While Strategy enables runtime switching, Decorator adds behavior without changing the object. "
    "Strategy requires upfront abstraction that our simple use case doesn't justify at all today. "
)


@pytest.fixture(scope="module")
def weights() -> Path:
    from moot.agents.local import default_weights, llama_cpp_available

    if not llama_cpp_available():
        pytest.skip("llama-cpp-python is not installed (pip install 'moot[local]')")
    try:
        return default_weights()
    except AgentUnavailable as exc:
        pytest.skip(str(exc))


def longest_reply(message_chars: int, evidence: bool) -> str:
    """The longest reply the offered schema allows, written as the grammar lets a model write it."""
    item = {"source": PROSE[:EVIDENCE_SOURCE_CHARS], "content": PROSE[:EVIDENCE_CONTENT_CHARS], "confidence": 0.85}
    reply: dict[str, Any] = {
        "signal": "no-change",
        "message": PROSE[:message_chars],
        "confidence": max(CONFIDENCES, key=lambda c: len(str(c))),
        "target": "proposal-advocate",
        "evidence": [item] if evidence else [],
    }
    return json.dumps(reply)


def test_the_longest_allowed_reply_fits_the_seeds_100_tokens(weights: Path) -> None:
    from llama_cpp import Llama

    tokenizer = Llama(model_path=str(weights), vocab_only=True, verbose=False)
    for chars, evidence in ((MESSAGE_CHARS, False), (MESSAGE_CHARS_WITH_EVIDENCE, True)):
        text = longest_reply(chars, evidence)
        tokens = len(tokenizer.tokenize(text.encode("utf-8"), add_bos=False))
        assert tokens <= REPLY_MAX_TOKENS, (tokens, text)


@pytest.mark.slow
def test_a_debate_between_embedded_models_ends_and_its_record_checks(tmp_path: Path, weights: Path) -> None:
    driver = start(tmp_path, topic="Should our services share one repository", max_turns=4)
    result = run(driver, every_role(driver, resolve_agent("local")))
    assert result.outcome is not None and result.outcome.name in {"CONSENSUS", "TIMEOUT"}, result.outcome
    assert 3 <= result.summary.turns <= 4
    checks_clean(driver.record_path)
    rows = [json.loads(line) for line in usage_path(driver.record_path).read_text(encoding="utf-8").splitlines()]
    assert rows and all(0 < row["completion_tokens"] <= REPLY_MAX_TOKENS for row in rows)
    assert all(row["model"] == "local:SmolLM2-135M-Instruct.Q4_1" for row in rows)

"""The dry run's expected figures hold: for each protocol, a run of real-length scripted turns spends within 1.5× the
calls, prompt and completion tokens that ``moot run --dry-run`` (moot.engine.estimate) predicts for it.

The participant is the tests' scripted one (tests/reliability/protocol_agent.py, its turns lengthened to what a
capable model writes) behind a model server that caches prefixes and reports usage, counted here as a token per
word and punctuation mark: another count than the estimate's four characters a token.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from moot.agents import AgentReply, AgentRequest, FunctionAgent
from moot.agents.base import TurnBounds
from moot.engine.driver import Driver
from moot.engine.estimate import contingent_totals, estimate
from moot.engine.loop import Engine, Limits
from moot.protocols.agora.driver import AgoraDriver, AgoraOptions
from moot.protocols.auto.driver import AutoDriver, AutoOptions
from moot.protocols.council.driver import CouncilDriver, CouncilOptions
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions
from moot.protocols.duel.driver import DuelDriver, DuelOptions
from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions

STARTED = "2026-11-22 09:00"
SOURCE = "# Shared cache\n\n## Goals\nTenant isolation first.\n\n## Eviction\nOne global LRU list for all tenants.\n"
FACTOR = 1.5
_spec = importlib.util.spec_from_file_location(
    "protocol_agent", Path(__file__).parents[1] / "reliability" / "protocol_agent.py"
)
assert _spec is not None and _spec.loader is not None
protocol_agent = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(protocol_agent)


def words_as_tokens(text: str) -> int:
    """A token per word and per punctuation mark, as a BPE tokenizer's pre-tokenizer splits text at least."""
    return len(re.findall(r"\w+|[^\w\s]", text))


class HostedModel(FunctionAgent):
    """A full-size model whose server caches prefixes (as OpenAI's does) and reports its usage."""

    turn_bounds = TurnBounds(prefix_cache=True)


def real_length(protocol: str) -> HostedModel:
    def answer(request: AgentRequest) -> AgentReply:
        schema = request.json_schema or {}
        text = (request.system or "") + "\n" + request.prompt
        reply = protocol_agent.real_length_reply(protocol, request.role, schema, text)
        sent = text + json.dumps(schema)
        return AgentReply(
            text=reply,
            prompt_tokens=words_as_tokens(sent),
            completion_tokens=words_as_tokens(reply),
            latency_s=0.0,
            model="hosted",
        )

    return HostedModel(answer)


def start(protocol: str, root: Path) -> Driver:
    (root / "doc.md").write_text(SOURCE, encoding="utf-8")
    starts: dict[str, Callable[[], Driver]] = {
        "critique": lambda: CritiqueDriver.start(
            root, CritiqueOptions(topic="Adopt a monorepo", max_rounds=2), STARTED
        ),
        "duel": lambda: DuelDriver.start(root, DuelOptions(source=root / "doc.md", max_turns=4), STARTED),
        "agora": lambda: AgoraDriver.start(root, AgoraOptions(topic="Tabs or spaces", max_turns=6), STARTED),
        "roundtable": lambda: RoundtableDriver.start(
            root, RoundtableOptions(speakers=("a", "b", "c"), topic="Cache design", max_rounds=2), STARTED
        ),
        "council": lambda: CouncilDriver.start(
            root,
            CouncilOptions(question="Cache reads?", members=[("ada", "x"), ("bo", "x"), ("cy", "x")], seed=1),
            STARTED,
        ),
        # The scripted members agree (12), so the vote decides; cy alone says 13, so with it the panel splits.
        "auto": lambda: AutoDriver.start(
            root, AutoOptions(question="Weekly backups in 90 days?", members=[("ada", "x"), ("bo", "x")]), STARTED
        ),
        "auto-split": lambda: AutoDriver.start(
            root,
            AutoOptions(question="Weekly backups in 90 days?", members=[("ada", "x"), ("bo", "x"), ("cy", "x")]),
            STARTED,
        ),
    }
    return starts[protocol]()


@pytest.mark.parametrize("protocol", ["critique", "duel", "agora", "roundtable", "council", "auto"])
def test_the_dry_runs_expected_tokens_are_within_1_5x_of_a_real_length_run(tmp_path: Path, protocol: str) -> None:
    driver = start(protocol, tmp_path)
    agent = real_length(protocol.removesuffix("-split"))
    agents = {role: agent for role in driver.roles()}
    predicted = estimate(driver, agents, Limits())
    result = asyncio.run(Engine(driver, agents, Limits()).run())
    assert result.outcome is not None and len(result.usage) == result.turns  # every turn accepted at once

    def within(expected: int, spent: int) -> bool:
        return spent / FACTOR <= expected <= spent * FACTOR

    calls = sum(row.calls for row in predicted)
    prompt = sum(row.prompt_tokens for row in predicted)
    completion = sum(row.completion_tokens for row in predicted)
    figures: dict[str, Any] = {
        "prompt": (prompt, result.prompt_tokens),
        "completion": (completion, result.completion_tokens),
    }
    assert calls == result.turns, (calls, result.turns)
    assert all(within(*pair) for pair in figures.values()), figures


def test_an_auto_panel_that_splits_spends_the_expected_answers_and_what_the_split_adds(tmp_path: Path) -> None:
    # The dry run expects the answers alone and shows the escalation apart: together they are what a split spends.
    driver = start("auto-split", tmp_path)
    agent = real_length("auto")
    agents = {role: agent for role in driver.roles()}
    predicted = estimate(driver, agents, Limits())
    (split,) = contingent_totals(predicted)
    result = asyncio.run(Engine(driver, agents, Limits()).run())
    assert result.summary.detail["vote"] == "ESCALATED"
    assert (sum(row.calls for row in predicted), split.when, split.calls) == (3, "the panel splits", 4)
    assert sum(row.calls for row in predicted) + split.calls == len(result.usage)
    prompt = sum(row.prompt_tokens for row in predicted) + split.prompt_tokens
    completion = sum(row.completion_tokens for row in predicted) + split.completion_tokens
    for expected, spent in ((prompt, result.prompt_tokens), (completion, result.completion_tokens)):
        assert spent / FACTOR <= expected <= spent * FACTOR, (expected, spent)

"""A full-size model writes full-size turns: through a real loopback server speaking OpenAI's chat-completions
API (a stand-in for the paid API), a multi-paragraph critique turn and a duel turn with full lists land whole in
the record; only the embedded model gets the small bounds."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agents_helpers import scripted_http_server

from moot.agents import resolve_agent
from moot.agents.base import DEFAULT_TURN_TOKENS
from moot.agents.local import LocalAgent
from moot.detect import check_path
from moot.engine.loop import Engine, Limits, usage_path
from moot.protocols.critique.driver import COMPACT_MESSAGE_CHARS, COMPACT_REPLY_TOKENS, CritiqueDriver, CritiqueOptions
from moot.protocols.duel.driver import DuelDriver, DuelOptions

STARTED = "2026-11-22 09:00"
PROPOSAL = (
    "I propose that we move all twelve services into a single repository over the next quarter, starting with the "
    "four services that already share the billing client library. Today every change to that library needs four "
    "pull requests, four reviews and four releases, and the versions drift: last month two services ran different "
    "retry policies for the same payment provider, which is how the duplicate-charge incident happened.",
    "The build is the real risk. A naive monorepo rebuilds and retests everything on every commit, and our CI "
    "already takes eighteen minutes for the largest service. I propose a dependency-aware build (Bazel or Pants, "
    "decided by a two-week spike) so that a commit rebuilds only the targets it touches, with remote caching "
    "shared between CI and laptops. Ownership stays per directory through CODEOWNERS, so review load does not "
    "concentrate on one team.",
    "Finally, the migration must be reversible until the last step: each service moves with its full history via "
    "git subtree, keeps its own deploy pipeline for the first month, and the old repository stays read-only but "
    "available. If build times regress by more than twenty percent after the first four services, we stop and "
    "re-evaluate before moving the rest.",
)
CRITIQUE = (
    "The incident you cite is a strong argument for shared libraries being versioned together, but it does not by "
    "itself argue for moving all twelve services. Eight of them share nothing with billing, and for those the "
    "monorepo buys coordination overhead without a matching benefit. I would rather see the four billing "
    "services move first and the decision on the rest made from measured results.",
    "On the build: a two-week spike to choose between Bazel and Pants underestimates the cost. Neither tool "
    "understands our Gradle builds out of the box, and writing the BUILD files for four services is itself weeks "
    "of work. What is the fallback if the spike shows that neither tool fits? Without one, the plan stalls "
    "halfway with two repositories and two build systems, the worst of both.",
)


def completion(content: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """A chat completion shaped as OpenAI's API reference documents it, with real-length usage."""
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
    }


def test_a_multi_paragraph_critique_turn_lands_whole_in_the_record(tmp_path: Path) -> None:
    proposal = "\n\n".join(PROPOSAL)
    critique = "\n\n".join(CRITIQUE)
    replies = [
        json.dumps({"message": proposal, "status": "AWAITING", "summary": ""}),
        json.dumps({"message": critique, "status": "AWAITING", "summary": ""}),
    ]
    answers = [(200, completion(text, 912, 380), {}) for text in replies]
    driver = CritiqueDriver.start(tmp_path, CritiqueOptions(topic="Adopt a monorepo", max_rounds=1), STARTED)
    with scripted_http_server(answers) as (url, seen):
        agent = resolve_agent(f"openai:gpt-4o-mini@{url}")
        result = asyncio.run(Engine(driver, {"proposer": agent, "critic": agent}).run())
    assert result.summary.turns == 2 and result.outcome is not None and result.outcome.name == "MAX_ROUNDS"
    text = driver.record_path.read_text(encoding="utf-8")
    assert proposal in text and critique in text and len(proposal) > 3 * COMPACT_MESSAGE_CHARS
    assert check_path(driver.record_path).exit_code == 0
    body = seen[0].body
    assert body["max_tokens"] == DEFAULT_TURN_TOKENS
    schema = body["response_format"]["json_schema"]["schema"]
    assert "maxLength" not in schema["properties"]["message"]
    assert "several paragraphs" in body["messages"][-1]["content"]


def test_the_turn_token_flag_and_the_embedded_models_bounds(tmp_path: Path) -> None:
    driver = CritiqueDriver.start(tmp_path / "a", CritiqueOptions(topic="Adopt a monorepo", max_rounds=1), STARTED)
    reply = json.dumps({"message": "Short.", "status": "AWAITING", "summary": ""})
    with scripted_http_server([(200, completion(reply, 300, 20), {})]) as (url, seen):
        agent = resolve_agent(f"openai:gpt-4o-mini@{url}")
        asyncio.run(Engine(driver, {"proposer": agent, "critic": agent}, Limits(max_turn_tokens=1500)).run())
    assert {s.body["max_tokens"] for s in seen} == {1500}

    small = CritiqueDriver.start(tmp_path / "b", CritiqueOptions(topic="Adopt a monorepo", max_rounds=1), STARTED)
    small.turn_bounds = dict.fromkeys(small.roles(), LocalAgent.turn_bounds)
    request = small.request_for("proposer")
    assert request.max_tokens == COMPACT_REPLY_TOKENS
    assert request.json_schema is not None
    assert request.json_schema["properties"]["message"]["maxLength"] == COMPACT_MESSAGE_CHARS


SOURCE = """# Shared cache across tenants

## Goals
Tenant isolation comes first; memory savings second.

## Eviction
One global LRU list serves all tenants. A tenant that scans its whole key space evicts everyone else's hot
entries, and nothing bounds how much of the cache one tenant may hold.

## Billing
Memory is billed per tenant, from each tenant's share of the cache at the end of every hour.
"""


NOVEL = (
    "Billing from an end-of-hour snapshot rewards tenants who evict others just before the hour and punishes quiet "
    "tenants whose entries were evicted, so the billing design and the eviction design cannot be judged apart.",
    "A per-tenant admission filter in front of the shared LRU stops one-off scans from entering the cache at all, "
    "which protects hot entries of quiet tenants without any quota bookkeeping.",
)


def duel_turn(number: int, stance: str) -> dict[str, Any]:
    """A full duel turn as a capable model writes it: long texts and full lists."""
    return {
        "stance": stance,
        "position": (
            f"Turn {number}: a shared cache is defensible only with per-tenant quotas. Without a floor for each tenant, "
            "one tenant's full scan of its key space evicts every other tenant's hot entries, and the hourly billing "
            "snapshot then charges the noisy tenant for memory it held only because it pushed everyone else out. "
            "With quotas and a shared overflow, the pooling gain survives and isolation holds."
        ),
        "counterpoints": [
            {
                "addresses": "source § Eviction" if number == 1 else "Turn 1",
                "claim": f"Counterpoint {number}.{i}: " + "the global LRU gives no tenant a bounded share, " * 3,
                "evidence": {
                    "section": section,
                    "principle": f"Principle {number}.{i}: isolation bounds the worst case",
                },
            }
            for i, section in enumerate(["Eviction", "Goals", "Billing", "Eviction"], start=1)
        ],
        "agreements": [
            f"Agreement {number}.{i}: pooling lowers the total memory footprint for bursty tenants of kind {i}."
            for i in range(1, 5)
        ],
        "novel_argument": NOVEL[number - 1],
        "novel_evidence": {"section": "Billing", "principle": "a price should follow the resource actually used"},
        "limitation": f"Turn {number}: no load test yet measures the hit rate of quiet tenants under a full scan.",
        "blocking_issues": [
            f"Blocking {number}.{i}: no per-tenant floor is specified in the design." for i in (1, 2, 3)
        ],
    }


def test_a_duel_turn_with_full_lists_lands_whole_in_the_record(tmp_path: Path) -> None:
    source = tmp_path / "cache.md"
    source.write_text(SOURCE, encoding="utf-8")
    options = DuelOptions(source=source, models=("openai:gpt-4o-mini", "openai:gpt-4o-mini"), max_turns=2)
    driver = DuelDriver.start(tmp_path, options, STARTED)
    turns = [duel_turn(1, "OPEN_TO_DEBATE"), duel_turn(2, "DISSENTING")]
    answers = [(200, completion(json.dumps(turn), 1400, 900), {}) for turn in turns]
    with scripted_http_server(answers) as (url, seen):
        agent = resolve_agent(f"openai:gpt-4o-mini@{url}")
        result = asyncio.run(Engine(driver, {"advocate": agent, "skeptic": agent}).run())
    assert result.outcome is not None and result.outcome.name == "DISSENT", result.outcome
    text = driver.record_path.read_text(encoding="utf-8")
    for turn in turns:
        texts = [turn["position"], turn["novel_argument"], turn["limitation"], *turn["agreements"]]
        texts += [c["claim"].strip() for c in turn["counterpoints"]] + turn["blocking_issues"]
        missing = [t for t in texts if t not in text]
        assert not missing, missing
    assert check_path(driver.record_path).exit_code == 0
    assert seen[0].body["max_tokens"] == DEFAULT_TURN_TOKENS
    rows = [json.loads(line) for line in usage_path(driver.record_path).read_text().splitlines()]
    assert [r["completion_tokens"] for r in rows] == [900, 900]

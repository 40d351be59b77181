"""caching: how much of a debate's prompt the providers' caches read, and what the debate costs with and without.

A 6-turn critique, a 4×3 roundtable and a 3-member council run through ``moot run`` against a loopback server
(bench/cache_server.py) that is OpenAI-shaped for ``openai:gpt-4.1-mini@URL`` and Anthropic-shaped for
``anthropic:claude-sonnet-4-6`` (``ANTHROPIC_BASE_URL``), applies each provider's documented cache rule, and
answers every request with a valid, real-length turn built from the request's own schema. The figures come
from moot's own usage log: the share of prompt tokens read from the cache from turn 3 on, and the debate's
price at the genai-prices table's rates with the cache (read and write rates) and without it.

The baseline is the same debates run on the code of ``BASELINE``, the last commit before the drivers built
their prompts prefix-stable (extracted with ``git archive`` and put first on the subprocesses' ``PYTHONPATH``).

Beside them, the same cache rules applied to a 6-turn critique-shaped conversation that the benchmark builds
to the prefix contract of ``AgentRequest`` (rules in the system message, the transcript in append-only parts,
the per-turn instruction last, one schema for every turn), sent through moot's own agents: what the agents
do with a request built that way, before any protocol's driver builds them so.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.cache_server import CacheServer, Count, serving
from bench.common import BenchResult, Table, fmt
from bench.tokens import smollm_tokenizer
from moot.agents.base import Agent, AgentReply, AgentRequest, debate_cache_key
from moot.agents.llama_server import embedded_model_missing
from moot.agents.pricing import table_price_usd, usd_text
from moot.engine.loop import usage_path

BASELINE = "07afe56"  # the last commit whose drivers marked no prefix and narrowed every role's schema per turn
REPO = Path(__file__).resolve().parent.parent
FROM_TURN = 3
GOAL_SHARE = 0.70  # of prompt tokens read from the cache from turn 3 on
GOAL_CRITIQUE_RATIO = 0.5  # an Anthropic-priced critique at most half its uncached price
PROVIDERS = {  # provider: (model, the agent spec for a server at URL)
    "openai": ("gpt-4.1-mini", "openai:gpt-4.1-mini@{url}/v1"),
    "anthropic": ("claude-sonnet-4-6", "anthropic:claude-sonnet-4-6"),
}
TOPIC = "Adopt a monorepo for our twelve services"
QUESTION = "Should our twelve services move into one repository?"
SPEAKERS = "architect,reviewer,security,operations"
PROTOCOLS = {  # protocol: (label, the arguments of `moot run PROTOCOL` but the agents, turns expected)
    "critique": ("6-turn critique", ["--topic", TOPIC, "--max-rounds", "3"], 6),
    "roundtable": ("4×3 roundtable + minutes", ["--topic", TOPIC, "--speakers", SPEAKERS, "--max-rounds", "3"], 13),
    "council": ("3-member council", ["--question", QUESTION, "--seed", "1"], 7),
}


def agent_args(protocol: str, spec: str) -> list[str]:
    if protocol == "council":
        return [arg for name in ("ada", "bo", "cy") for arg in ("--member", f"{name}={spec}")]
    return ["--agents", spec]


def moot_run(protocol: str, provider: str, url: str, work: Path, src: str) -> list[dict[str, Any]]:
    """Run one debate through ``moot run`` (moot's sources at ``src``) against the server; its usage log's rows,
    every reply accepted."""
    spec = PROVIDERS[provider][1]
    label, args, turns = PROTOCOLS[protocol]
    # The current sources after the baseline's: their distribution's metadata names the protocols' entry points.
    path = os.pathsep.join(dict.fromkeys([src, _src()]))
    env = {**os.environ, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-bench", "PYTHONPATH": path}
    command = [sys.executable, "-m", "moot", "run", protocol, *args, *agent_args(protocol, spec.format(url=url))]
    done = subprocess.run(
        [*command, "--json", "--quiet"], cwd=work, env=env, capture_output=True, text=True, timeout=900
    )
    try:
        ran = json.loads(done.stdout)
    except ValueError:
        raise RuntimeError(f"moot run {protocol} ({provider}) failed: {done.stderr.strip()[-500:]}") from None
    rows = [json.loads(line) for line in usage_path(work / ran["artifact"]).read_text().splitlines()]
    if ran["turns"] != turns or not all(row["accepted"] for row in rows):
        raise RuntimeError(
            f"the {label} ({provider}) ended {ran['outcome']} after {ran['turns']} of {turns} turns with "
            f"{sum(not row['accepted'] for row in rows)} rejected replies: the server's turns no longer fit it"
        )
    return rows


def _src() -> str:
    """moot's sources for the subprocess: the ones this benchmark imported."""
    import moot

    return str(Path(moot.__file__).resolve().parent.parent)


def baseline_source(work: Path) -> str:
    """The ``src`` directory of ``BASELINE``, extracted from git."""
    target = work / "baseline"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", BASELINE, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return str(target / "src")


def figures(rows: Sequence[dict[str, Any]], provider: str) -> dict[str, Any]:
    """Share of prompt tokens from the cache from turn 3 on, and the debate's price with and without the cache."""
    model = PROVIDERS[provider][0]
    late = [row for row in rows if row["turn"] >= FROM_TURN]
    prompt_late = sum(row["prompt_tokens"] for row in late)
    cached_price = uncached_price = output_price = 0.0
    for row in rows:
        tokens = (row["prompt_tokens"], row["completion_tokens"])
        cached = table_price_usd(
            model,
            *tokens,
            cached_tokens=row.get("cached_tokens", 0),
            cache_write_tokens=row.get("cache_write_tokens", 0),
            provider=provider,
        )
        uncached = table_price_usd(model, *tokens, provider=provider)
        assert cached is not None and uncached is not None, f"the price table lacks {model}"
        output = table_price_usd(model, 0, row["completion_tokens"], provider=provider)
        cached_price += cached
        uncached_price += uncached
        output_price += output or 0.0
    return {
        "requests": len(rows),
        "prompt_tokens": sum(row["prompt_tokens"] for row in rows),
        "cached_tokens": sum(row.get("cached_tokens", 0) for row in rows),
        "cache_write_tokens": sum(row.get("cache_write_tokens", 0) for row in rows),
        "share_from_turn_3": sum(row.get("cached_tokens", 0) for row in late) / prompt_late if prompt_late else 0.0,
        "price_cached_usd": cached_price,
        "price_uncached_usd": uncached_price,
        "price_ratio": cached_price / uncached_price if uncached_price else 1.0,
        "output_share": output_price / uncached_price if uncached_price else 0.0,
        "logged_cost_usd": sum(row.get("cost_usd") or 0.0 for row in rows),  # moot's own price (0 on loopback)
        "per_turn": [
            [row["turn"], row["prompt_tokens"], row.get("cached_tokens", 0), row.get("cache_write_tokens", 0)]
            for row in rows
        ],
    }


# --- the contract's own check: a conversation built prefix-stable, through moot's agents -------------------

CRITIQUE_RULES = (
    "A structured dialogue between a proposer and a critic about: " + TOPIC + ".\n"
    "The proposer drives the discussion forward, makes concrete proposals and revises them; the critic finds "
    "flaws, asks for evidence and says what would change its mind.\n"
    "Rules: respond to the latest turn. Status AWAITING passes the turn on. PROPOSING_DONE says you believe the "
    "dialogue can conclude. DONE only confirms the other's PROPOSING_DONE and needs a summary of what was agreed. "
    "STUCK means a human must decide; explain the blocker in the message."
)
CRITIQUE_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "Your turn: respond to the last turn."},
        "status": {"type": "string", "enum": ["AWAITING", "PROPOSING_DONE", "DONE", "STUCK"]},
        "summary": {"type": "string", "maxLength": 0},
    },
    "required": ["message", "status", "summary"],
    "additionalProperties": False,
}


def make_agent(provider: str, url: str) -> Agent:
    model = PROVIDERS[provider][0]
    if provider == "anthropic":
        from moot.agents.anthropic_agent import AnthropicAgent

        return AnthropicAgent(model, api_key="sk-ant-bench", base_url=url)
    from moot.agents.openai_compat import OpenAIAgent

    return OpenAIAgent(model, base_url=f"{url}/v1")


async def prefix_stable_critique(agent: Agent, turns: int) -> list[dict[str, Any]]:
    """A critique-shaped conversation of ``turns`` turns whose requests keep the prefix contract; usage rows.

    Both roles share one prefix (the rules, the topic, the transcript), as the design note asks of every
    protocol: the role is named in the instruction, so both roles' requests carry one cache key.
    """
    roles = ("proposer", "critic")
    parts = [f"Topic: {TOPIC}\n\n"]
    rows = []
    for number in range(1, turns + 1):
        role = roles[(number - 1) % 2]
        request = AgentRequest.with_prefix(
            parts,
            f"You are the {role}. Write your turn for round {(number + 1) // 2} of {turns // 2}.",
            system=CRITIQUE_RULES,
            json_schema=CRITIQUE_SCHEMA,
            role=role,
            protocol="critique",
            cache_key=debate_cache_key("bench-prefix-stable", "every role"),
        )
        reply: AgentReply = await agent.reply(request)
        parts.append(f"## Turn {number} ({role})\n{json.loads(reply.text)['message']}\n\n")
        rows.append(
            {
                "turn": number,
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "cached_tokens": reply.cached_tokens,
                "cache_write_tokens": reply.cache_write_tokens,
            }
        )
    await agent.aclose()
    return rows


# --- the benchmark --------------------------------------------------------------------------------


def locked(count: Count) -> Count:
    """The tokenizer for the server's threads, one at a time."""
    lock = threading.Lock()

    def counted(text: str) -> int:
        with lock:
            return count(text)

    return counted


def run(quick: bool) -> BenchResult:
    missing = embedded_model_missing()
    if missing:
        return BenchResult("caching", "", [], {}, skipped=f"no SmolLM2 tokenizer: {missing}")
    state = CacheServer(locked(smollm_tokenizer()))
    found: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    contract: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp, serving(state) as url:
        for side, src in (("baseline", baseline_source(Path(tmp))), ("current", _src())):
            for protocol in PROTOCOLS:
                for provider in PROVIDERS:
                    state.reset()  # each debate meets a cold cache, as a new debate does
                    work = Path(tmp) / f"{side}-{protocol}-{provider}"
                    work.mkdir()
                    rows = moot_run(protocol, provider, url, work, src)
                    found.setdefault(side, {}).setdefault(protocol, {})[provider] = figures(rows, provider)
        for provider in PROVIDERS:
            state.reset()
            rows = asyncio.run(prefix_stable_critique(make_agent(provider, url), PROTOCOLS["critique"][2]))
            contract[provider] = figures(rows, provider)
    return report(found, contract)


def report(found: dict[str, dict[str, dict[str, dict[str, Any]]]], contract: dict[str, dict[str, Any]]) -> BenchResult:
    rows = []
    for protocol in PROTOCOLS:
        for provider in PROVIDERS:
            for side, label in (("baseline", f"baseline ({BASELINE})"), ("current", "current")):
                rows.append(_row(f"{PROTOCOLS[protocol][0]}, {label}", provider, found[side][protocol][provider]))
    for provider, f in contract.items():
        rows.append(_row("6-turn critique-shaped, built to the prefix contract (not moot's driver)", provider, f))
    table = Table(
        "prompt tokens read from the provider's cache, and the debate's price with and without it",
        [
            "debate",
            "provider (model)",
            "requests",
            "prompt tokens",
            "from cache, turn ≥ 3",
            "written to cache",
            "price with cache",
            "price without",
            "with ÷ without",
        ],
        rows,
        [
            f"baseline ({BASELINE}): no driver marked a prefix (AgentRequest.prefix_ends), so Anthropic got no "
            "breakpoint, and each role's schema and system message changed between its turns. current: each "
            "turn's prompt is the previous one plus what was said since (fixed context, the transcript a turn a "
            "part, then who speaks and the instruction), one schema per role, and the roles share one prefix where "
            "their prompts agree; a roundtable speaker reads every speech, not the latest three.",
            "Cache rules (bench/cache_server.py): OpenAI reads the longest prefix of an earlier prompt (its schema "
            "first, then the messages) in 128-token steps from 1,024 tokens; Anthropic reads and writes prefixes "
            "ending at a cache_control breakpoint of at least 1,024 tokens (Claude Sonnet 4.x), looking 20 blocks "
            "back. Each debate starts with a cold cache; tokens by SmolLM2's tokenizer.",
            "Prices: genai-prices' rates per million tokens: gpt-4.1-mini $0.40 input, $0.10 cached input, $1.60 "
            "output; claude-sonnet-4-6 $3 input, $3.75 cache write (5 minutes), $0.30 cache read, $15 output. A "
            "turn is the usage log's turn number (a council's three answers are turns 1-3, its reviews 4-6).",
            "The last rows: the benchmark builds a critique-shaped conversation to the prefix contract itself and "
            "sends it through moot's agents, to check what the agents and the cache rules do with such requests.",
        ],
    )
    now, before = found["current"], found["baseline"]
    critique = now["critique"]["anthropic"]
    share = {(p, v): now[p][v]["share_from_turn_3"] for p in now for v in now[p]}
    was = {(p, v): before[p][v]["share_from_turn_3"] for p in before for v in before[p]}
    summary = (
        f"From turn 3 on, {_pct(min(share.values()))}–{_pct(max(share.values()))} of prompt tokens come from the "
        f"cache (baseline {BASELINE}: {_pct(min(was.values()))}–{_pct(max(was.values()))}; goal ≥ {_pct(GOAL_SHARE)}): "
        + ", ".join(f"{PROTOCOLS[p][0]} ({v}) {_pct(s)}" for (p, v), s in share.items())
        + f". An Anthropic-priced critique costs {critique['price_ratio']:.2f}× its uncached price (baseline "
        f"{before['critique']['anthropic']['price_ratio']:.2f}×; goal ≤ {GOAL_CRITIQUE_RATIO:g}×)."
    )
    losses = []
    short = [f"{PROTOCOLS[p][0]} ({v}) {_pct(s)}" for (p, v), s in share.items() if s < GOAL_SHARE]
    if short:
        losses.append(
            f"caching: from turn 3 on, less than {_pct(GOAL_SHARE)} of the prompt tokens come from the cache: "
            f"{'; '.join(short)}. A prefix is read only once a request has sent 1,024 tokens of it, and each turn's "
            "newest turn and instruction are new: a six-turn critique reaches the minimum only at turn 4 (turn 3 "
            "shares the topic and one turn with turn 2). A council asks each prompt once, its stages' members at "
            "once and each reviewer with its own order of the answers: nothing is there to read, so it marks no "
            "breakpoint and writes nothing."
        )
    if critique["price_ratio"] > GOAL_CRITIQUE_RATIO:
        losses.append(
            f"caching: an Anthropic-priced critique costs {critique['price_ratio']:.2f}× its uncached price "
            f"(goal ≤ {GOAL_CRITIQUE_RATIO:g}×): its output alone costs {critique['output_share']:.2f}× the "
            "uncached price ($15 per million output tokens against $3 input, with real-length turns), which no "
            "prompt cache reduces."
        )
    per_turn = Table(
        "a 6-turn critique per turn, current drivers and the prefix contract's conversation",
        [
            "turn",
            *(f"moot {v}: prompt / from cache / written" for v in PROVIDERS),
            *(f"contract {v}: prompt / from cache / written" for v in contract),
        ],
        [
            [turns[0][0], *(f"{fmt(t[1], 0)} / {fmt(t[2], 0)} / {fmt(t[3], 0)}" for t in turns)]
            for turns in zip(
                *(now["critique"][v]["per_turn"] for v in PROVIDERS),
                *(contract[v]["per_turn"] for v in contract),
                strict=True,
            )
        ],
        [
            "Nothing is read until a prefix of 1,024 tokens has been seen (both providers' minimum): with turns of "
            "about 300 words, the topic and the first two turns reach it only by turn 4. A longer fixed context (a "
            "source document, an agenda) reaches it at once.",
        ],
    )
    return BenchResult("caching", summary, [table, per_turn], {"moot": found, "prefix_contract": contract}, losses)


def _row(label: str, provider: str, f: dict[str, Any]) -> list[Any]:
    return [
        label,
        f"{provider} ({PROVIDERS[provider][0]})",
        f["requests"],
        fmt(f["prompt_tokens"], 0),
        _pct(f["share_from_turn_3"]),
        fmt(f["cache_write_tokens"], 0),
        usd_text(f["price_cached_usd"]),
        usd_text(f["price_uncached_usd"]),
        f"{f['price_ratio']:.2f}×",
    ]


def _pct(value: float) -> str:
    return f"{value:.0%}"

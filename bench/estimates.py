"""estimates: does ``moot run --dry-run`` predict what a run spends? Per protocol, the prediction beside the run.

Each protocol runs through ``moot run`` against a loopback OpenAI-shaped server (bench/cache_server.py: OpenAI's
prompt-cache rule, usage reported with SmolLM2's tokenizer) that answers every request with a legal turn whose
free texts are real length (tests/reliability/protocol_agent.py's ``real_length_reply``: about 300 words for a
turn's main text, a sentence or two for every other one). The agent is ``openai:gpt-4.1-mini@URL``, priced through
moot.toml's ``[prices]`` at gpt-4.1-mini's rates (a loopback server is otherwise free), so the run's ledger and
the dry run both price with the cache. Actual figures are the run's usage log: its calls, prompt and completion
tokens and cost. The prediction is ``moot run … --dry-run --json`` of the same command, in the same directory.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.reliability.protocol_agent import real_length_reply

from bench.cache_server import CacheServer, serving
from bench.caching import locked
from bench.common import BenchResult, Table, fmt
from bench.scripts import DUEL_SOURCE
from bench.tokens import smollm_tokenizer
from moot.agents.llama_server import embedded_model_missing
from moot.agents.pricing import usd_text
from moot.engine.loop import usage_path

MODEL = "gpt-4.1-mini"
PRICE = {"input": 0.40, "cached_input": 0.10, "output": 1.60}  # genai-prices' gpt-4.1-mini, USD per million
GOAL = (0.67, 1.5)
QUESTION = "Should our twelve services move into one repository?"
PROTOCOLS = {  # protocol: (label, the arguments of `moot run PROTOCOL` but the agents)
    "critique": ("6-turn critique", ["--topic", "Adopt a monorepo for our twelve services", "--max-rounds", "3"]),
    "duel": ("4-turn duel", ["doc.md", "--max-turns", "4"]),
    "agora": (
        "8-turn Agora",
        [
            "--topic",
            "Tabs or spaces",
            "--position",
            "tabs=Use tabs",
            "--position",
            "spaces=Use spaces",
            "--max-turns",
            "8",
        ],
    ),
    "roundtable": ("3×3 roundtable + minutes", ["--topic", "Cache design", "--speakers", "a,b,c", "--max-rounds", "3"]),
    "council": ("3-member council", ["--question", QUESTION, "--seed", "1"]),
}
FIGURES = ("calls", "prompt_tokens", "completion_tokens", "cost_usd")


def answer_for(protocol: str) -> Any:
    """The server's answer for ``protocol``: a legal, real-length turn for the role the request names."""

    def answer(schema: dict[str, Any], seed: str, context: str) -> Any:
        named = re.search(r"YOUR ROLE: (\S+)", context)  # only the Agora's replies depend on who is asked
        return json.loads(real_length_reply(protocol, named.group(1) if named else "member", schema, context))

    return answer


def agent_args(protocol: str, spec: str) -> list[str]:
    if protocol == "council":
        return [arg for name in ("ada", "bo", "cy") for arg in ("--member", f"{name}={spec}")]
    return ["--agents", spec]


def moot(work: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "moot", *args], cwd=work, capture_output=True, text=True, timeout=600, env=os.environ
    )
    try:
        found: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise RuntimeError(f"moot {' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}") from None
    return found


def one(protocol: str, url: str, work: Path) -> dict[str, Any]:
    """The dry run's prediction and the run's actual figures for one protocol."""
    spec = f"openai:{MODEL}@{url}/v1"
    price = ", ".join(f"{key} = {value}" for key, value in PRICE.items())
    (work / "moot.toml").write_text(f'[prices]\n"{spec}" = {{ {price} }}\n', encoding="utf-8")
    (work / "doc.md").write_text(DUEL_SOURCE, encoding="utf-8")
    command = ["run", protocol, *PROTOCOLS[protocol][1], *agent_args(protocol, spec), "--json"]
    predicted = moot(work, *command, "--dry-run")["total"]
    ran = moot(work, *command, "--quiet")
    rows = [json.loads(line) for line in usage_path(work / ran["artifact"]).read_text().splitlines()]
    actual = {
        "calls": len(rows),
        "prompt_tokens": sum(row.get("prompt_tokens", 0) for row in rows),
        "cached_tokens": sum(row.get("cached_tokens", 0) for row in rows),
        "completion_tokens": sum(row.get("completion_tokens", 0) for row in rows),
        "cost_usd": sum(row.get("cost_usd") or 0.0 for row in rows),
        "rejected": sum(not row["accepted"] for row in rows),
        "outcome": ran["outcome"],
    }
    return {"predicted": predicted, "actual": actual}


def run(quick: bool) -> BenchResult:
    missing = embedded_model_missing()
    if missing:
        return BenchResult("estimates", "", [], {}, skipped=f"no SmolLM2 tokenizer: {missing}")
    count = locked(smollm_tokenizer())
    found: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for protocol in PROTOCOLS:
            with serving(CacheServer(count, answer_for(protocol))) as url:  # a cold cache for each debate
                work = Path(tmp) / protocol
                work.mkdir()
                found[protocol] = one(protocol, url, work)
    return report(found)


def ratio(found: dict[str, Any], key: str) -> float:
    actual = found["actual"][key]
    return found["predicted"][key] / actual if actual else float("inf")


def report(found: dict[str, dict[str, Any]]) -> BenchResult:
    rows = []
    for protocol, f in found.items():
        p, a = f["predicted"], f["actual"]
        rows.append(
            [
                PROTOCOLS[protocol][0],
                f"{p['calls']} / {a['calls']}",
                f"{fmt(p['prompt_tokens'], 0)} / {fmt(a['prompt_tokens'], 0)} ({ratio(f, 'prompt_tokens'):.2f}×)",
                f"{fmt(p['cached_tokens'], 0)} / {fmt(a['cached_tokens'], 0)}",
                f"{fmt(p['completion_tokens'], 0)} / {fmt(a['completion_tokens'], 0)} "
                f"({ratio(f, 'completion_tokens'):.2f}×)",
                f"{usd_text(p['cost_usd'])} / {usd_text(a['cost_usd'])} ({ratio(f, 'cost_usd'):.2f}×)",
                f"{fmt(p['max_prompt_tokens'], 0)} ({p['max_prompt_tokens'] / a['prompt_tokens']:.1f}×)",
                a["outcome"] + (f", {a['rejected']} rejected" if a["rejected"] else ""),
            ]
        )
    table = Table(
        "the dry run's expected figures / the run's actual ones (predicted ÷ actual)",
        [
            "debate",
            "calls",
            "prompt tokens",
            "of them cached",
            "completion tokens",
            "cost with the cache",
            "at most: prompt tokens (÷ actual)",
            "outcome",
        ],
        rows,
        [
            "Predicted: `moot run … --dry-run --json` (its expected figures: each role's first request as the "
            "driver builds it, plus the typical length of each earlier reply its prompt carries, ~400 tokens a "
            "main text; the OpenAI cache rule; tokens at four characters each). Actual: the run's usage log. "
            "The server counts tokens with SmolLM2's tokenizer and caches by OpenAI's rule (bench/cache_server.py).",
            "Replies are legal turns of the tests' scripted participant with their free texts lengthened to about "
            "300 words (the turn's main text) and 30 (every other one): the reply length the dry run assumes, so "
            "the ratios check its model of each protocol's prompts, their growth and their caching, not how long a "
            "real model writes. The Agora's debate ends at its turn limit (TIMEOUT) here, as its plan assumes.",
            "At most: the upper bound the dry run prints beside (every reply its whole budget, every prompt grown "
            "by a whole budget per earlier call, no cache), which is what it printed alone before.",
            f"Prices: moot.toml [prices] at gpt-4.1-mini's rates (${PRICE['input']} input, ${PRICE['cached_input']} "
            f"cached input, ${PRICE['output']} output per million tokens).",
        ],
    )
    ratios = {(p, key): ratio(f, key) for p, f in found.items() for key in FIGURES}
    low, high = min(ratios.values()), max(ratios.values())
    summary = (
        f"The dry run's expected calls, prompt and completion tokens and cost are {low:.2f}–{high:.2f}× what the "
        f"runs spent (goal {GOAL[0]}–{GOAL[1]}×); its upper bound was "
        + ", ".join(
            f"{f['predicted']['max_prompt_tokens'] / f['actual']['prompt_tokens']:.1f}×" for f in found.values()
        )
        + " the prompt tokens."
    )
    off = [f"{p} {key} {r:.2f}×" for (p, key), r in ratios.items() if not GOAL[0] <= r <= GOAL[1]]
    losses = [f"estimates: outside {GOAL[0]}–{GOAL[1]}×: {'; '.join(off)}"] if off else []
    rejected = [f"{p} ({f['actual']['rejected']})" for p, f in found.items() if f["actual"]["rejected"]]
    if rejected:
        losses.append(f"estimates: replies rejected and repaired (repairs are not predicted): {', '.join(rejected)}")
    return BenchResult("estimates", summary, [table], found, losses)

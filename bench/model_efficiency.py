"""model-efficiency: what moot costs on top of a real model server, per token the model generates.

A real ``python -m llama_cpp.server`` with the embedded SmolLM2 GGUF runs on loopback (2 threads). moot runs
debates against it with the ``openai:smollm2@URL`` agent; every HTTP request that agent sends is captured on
the wire, and the very same body (messages, response_format with the JSON Schema, max_tokens) is sent straight
to the server with plain HTTP and timed, right after moot's request or, every other turn, right before it.
Pairing each request with its direct twin keeps the two sides under the same load on a noisy machine.
Temperature is pinned to 0 on moot's side so that the twin generates the same reply, and a tiny warm-up
request goes before each of the two, so llama.cpp's reuse of the previous prompt's prefix is the same for both.

moot's time is the whole debate (starting the record, prompts, validation, durable commits, and any request
the server refuses: a prompt longer than the model's context, which moot then learns) less the time spent on
the twins and warm-ups; the direct time is the sum of the twins. The server's refusal of json_schema is learnt
by the priming request, and remembered, so no debate sends that form.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import openai

from bench.common import BenchResult, Table, fmt, fmt_ratio, median, ratio
from bench.scripts import DUEL_SOURCE
from moot.agents import Agent, AgentReply, AgentRequest, OpenAIAgent
from moot.agents.base import TurnBounds
from moot.agents.llama_server import embedded_model_missing, llama_server
from moot.engine.loop import Limits, now_minutes
from moot.engine.session import run_driver
from moot.engine.specs import build_driver

MODEL = "smollm2"
N_THREADS = 2  # the model server shares the machine's two cores
TOPIC = "Adopt a monorepo for our services"
QUICK_SETUPS: dict[str, dict[str, Any]] = {"critique, 1 round": {"protocol": "critique", "max_rounds": 1}}
FULL_SETUPS: dict[str, dict[str, Any]] = {
    "critique, 2 rounds": {"protocol": "critique", "max_rounds": 2},
    "duel, 2 turns": {"protocol": "duel", "max_turns": 2},
    "roundtable, 2 speakers × 1 round": {
        "protocol": "roundtable",
        "speakers": ["architect", "reviewer"],
        "max_rounds": 1,
    },
}
FULL_RUNS = 3
CLIENT_PATH_SAMPLES = 20
TURN_TIMEOUT_S = 1800.0  # a turn here includes its direct twin and warm-ups; a loaded machine is slow
WARM_UP = b'{"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 1, "temperature": 0}'
PRIME_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@dataclass(frozen=True)
class Pair:
    """One turn request: through moot's agent, and the same body sent directly."""

    moot_s: float
    moot_tokens: int
    direct_s: float
    direct_tokens: int
    same_reply: bool


@dataclass
class Run:
    """One debate: its wall time through moot (twins excluded) and its request pairs."""

    wall_s: float
    http_requests: int  # what moot's agent sent, refused requests included
    pairs: list[Pair] = field(default_factory=list)

    @property
    def moot_tokens(self) -> int:
        return sum(p.moot_tokens for p in self.pairs)

    @property
    def agent_s(self) -> float:
        return sum(p.moot_s for p in self.pairs)

    @property
    def direct_s(self) -> float:
        return sum(p.direct_s for p in self.pairs)

    @property
    def direct_tokens(self) -> int:
        return sum(p.direct_tokens for p in self.pairs)

    @property
    def efficiency(self) -> float:
        """moot's tokens/s over the direct tokens/s."""
        return ratio(self.moot_tokens / self.wall_s, self.direct_tokens / self.direct_s)


class Direct:
    """Plain synchronous HTTP to the server: the baseline, with nothing of moot's in the way."""

    def __init__(self, base_url: str) -> None:
        self.url = f"{base_url}/chat/completions"
        self.client = httpx2.Client(timeout=600, headers={"content-type": "application/json"})
        self.spent_s = 0.0  # time in warm-ups and twins, taken out of moot's wall time

    def send(self, body: bytes) -> tuple[float, dict[str, Any]]:
        started = time.perf_counter()
        answer = self.client.post(self.url, content=body)
        answer.raise_for_status()
        parsed: dict[str, Any] = answer.json()
        seconds = time.perf_counter() - started
        self.spent_s += seconds
        return seconds, parsed

    def warm_up(self) -> None:
        """The same small request before every timed one: each starts with the same cached prompt."""
        self.send(WARM_UP)

    def send_after_warm_up(self, body: bytes) -> tuple[float, dict[str, Any]]:
        self.warm_up()
        return self.send(body)

    def close(self) -> None:
        self.client.close()


class PairingAgent(Agent):
    """moot's OpenAI-compatible agent (temperature pinned to 0), each answered request paired with a direct twin.

    The twin goes after moot's request, or, on every other turn, just before it (sent from the HTTP hook that
    sees moot's body on its way out), so that neither side always runs first. The twin blocks the event loop
    on purpose: nothing else runs meanwhile, and the baseline should carry no asyncio or SDK cost.
    """

    name = "openai"
    supports_schema = True
    needs_network = True

    def __init__(self, base_url: str, direct: Direct) -> None:
        self.sent: list[bytes] = []  # every HTTP body moot's agent sent, refused ones included
        self.pairs: list[Pair] = []
        self.direct = direct
        self.twin_first = False
        self.twin: tuple[float, dict[str, Any]] | None = None

        async def keep(request: httpx2.Request) -> None:
            self.sent.append(request.content)
            # Only once the server's refusal of json_schema is known is the body sure to be the answered one.
            if self.twin_first and self.inner.json_schema_refused:
                self.twin = self.direct.send_after_warm_up(request.content)
                self.direct.warm_up()

        client = openai.DefaultAsyncHttpxClient(event_hooks={"request": [keep]})
        self.inner = OpenAIAgent(MODEL, base_url=base_url, http_client=client)

    def bounds(self) -> TurnBounds:
        return self.inner.bounds()  # what moot's agent learnt of the server (its context) sizes the requests

    async def reply(self, request: AgentRequest) -> AgentReply:
        self.twin_first, self.twin = len(self.pairs) % 2 == 1, None
        self.direct.warm_up()
        spent_before = self.direct.spent_s
        started = time.perf_counter()
        answer = await self.inner.reply(request.model_copy(update={"temperature": 0.0}))
        moot_s = time.perf_counter() - started - (self.direct.spent_s - spent_before)
        if self.twin is None:
            # The call's last request is the one the server answered (an earlier one may have been refused).
            self.twin = self.direct.send_after_warm_up(self.sent[-1])
        direct_s, body = self.twin
        text = body["choices"][0]["message"]["content"] or ""
        tokens = body["usage"]["completion_tokens"]
        self.pairs.append(Pair(moot_s, answer.completion_tokens, direct_s, tokens, text == answer.text))
        return answer

    async def aclose(self) -> None:
        await self.inner.aclose()


async def debate(base_url: str, setup: dict[str, Any], root: Path, direct: Direct) -> Run:
    """One debate as ``moot run`` runs it (one agent for every role), each request paired with its twin."""
    agent = PairingAgent(base_url, direct)
    spent_before = direct.spent_s
    started = time.perf_counter()
    driver = build_driver({**setup, "topic": TOPIC}, root, now_minutes())
    await run_driver(driver, {role: agent for role in driver.roles()}, Limits(turn_timeout_s=TURN_TIMEOUT_S))
    wall_s = time.perf_counter() - started - (direct.spent_s - spent_before)
    if not agent.pairs:
        raise RuntimeError(f"moot sent no answered request in the {setup['protocol']} debate")
    return Run(wall_s, len(agent.sent), agent.pairs)


async def prime(base_url: str) -> None:
    """One schema-constrained request through moot's agent before anything is timed.

    The server's first grammar costs about a second of one-time set-up, which would otherwise land on
    whichever side sent the first request.
    """
    async with OpenAIAgent(MODEL, base_url=base_url) as agent:
        await agent.reply(AgentRequest(prompt="Hello", json_schema=PRIME_SCHEMA, max_tokens=8, temperature=0))


async def client_path_ms(base_url: str, direct: Direct) -> tuple[float, float]:
    """Median ms of a 1-token request whose prompt the server has cached, through moot's agent and sent directly.

    Model time is nearly nil there, so the difference is what moot's HTTP path (agent, openai SDK) costs.
    """
    request = AgentRequest(prompt="Hello", max_tokens=1, temperature=0)  # the same messages as WARM_UP
    through_moot, plain = [], []
    async with OpenAIAgent(MODEL, base_url=base_url) as agent:
        for _ in range(CLIENT_PATH_SAMPLES):
            started = time.perf_counter()
            await agent.reply(request)
            through_moot.append((time.perf_counter() - started) * 1000)
            plain.append(direct.send(WARM_UP)[0] * 1000)
    return median(through_moot), median(plain)


def measure(
    base_url: str, setups: dict[str, dict[str, Any]], runs: int
) -> tuple[dict[str, list[Run]], tuple[float, float]]:
    """The client path, then ``runs`` rounds over the setups, each debate in a fresh directory."""
    found: dict[str, list[Run]] = {name: [] for name in setups}
    asyncio.run(prime(base_url))
    direct = Direct(base_url)
    try:
        client_path = asyncio.run(client_path_ms(base_url, direct))
        with tempfile.TemporaryDirectory() as work:
            for index in range(runs):
                for number, (name, setup) in enumerate(setups.items()):
                    root = Path(work) / f"run{index}-setup{number}"
                    if setup["protocol"] == "duel":  # the duel's read-only document, inside its work root
                        root.mkdir()
                        source = root / "cache-design.md"
                        source.write_text(DUEL_SOURCE, encoding="utf-8")
                        setup = {**setup, "source": str(source)}
                    found[name].append(asyncio.run(debate(base_url, setup, root, direct)))
    finally:
        direct.close()
    return found, client_path


def figures(runs: list[Run]) -> dict[str, Any]:
    """The median run of one setup (by efficiency, so that its row adds up), and medians over every request."""
    middle = sorted(runs, key=lambda r: r.efficiency)[(len(runs) - 1) // 2]
    pairs = [p for r in runs for p in r.pairs]
    return {
        "runs": len(runs),
        "requests_per_debate": len(middle.pairs),
        "http_requests_per_debate": middle.http_requests,
        "completion_tokens_moot": middle.moot_tokens,
        "completion_tokens_direct": middle.direct_tokens,
        "wall_s_moot": middle.wall_s,
        "wall_s_direct": middle.direct_s,
        "tokens_per_s_moot": middle.moot_tokens / middle.wall_s,
        "tokens_per_s_direct": middle.direct_tokens / middle.direct_s,
        "efficiency": middle.efficiency,
        "efficiency_per_run": [r.efficiency for r in runs],
        "per_request_time_ratio": median([ratio(p.moot_s, p.direct_s) for p in pairs]),
        "overhead_ms_per_request": (middle.wall_s - middle.direct_s) / len(middle.pairs) * 1000,
        # moot's own work between model calls: record, prompts, validation, durable commits.
        "engine_ms_per_request": median([(r.wall_s - r.agent_s) / len(r.pairs) * 1000 for r in runs]),
        "identical_replies": f"{sum(p.same_reply for p in pairs)}/{len(pairs)}",
        "most_uneven_pair": max(max(p.moot_s / p.direct_s, p.direct_s / p.moot_s) for p in pairs),
        "request_s_moot_direct": [[[round(p.moot_s, 3), round(p.direct_s, 3)] for p in r.pairs] for r in runs],
    }


def loss(name: str, f: dict[str, Any], client_path: dict[str, float]) -> str:
    """Where the time went when moot delivered fewer tokens/s than the direct requests: the measured parts."""
    return (
        f"{name}: through moot the model delivers {f['efficiency']:.0%} of the tokens/s of the same requests sent "
        f"directly ({f['overhead_ms_per_request']:.0f} ms more per request; the median request took "
        f"{f['per_request_time_ratio']:.2f}× as long). Measured parts: moot's own work between requests (prompts, "
        f"validation, durable commits) {f['engine_ms_per_request']:.0f} ms; its HTTP path (agent, openai SDK) "
        f"{client_path['moot'] - client_path['direct']:.1f} ms per request; any request the server refused (the "
        "HTTP-sent column). The rest is the variance of model time on this shared machine, "
        f"which strikes either side (the most uneven pair of this run: {f['most_uneven_pair']:.1f}× apart)."
    )


def run(quick: bool) -> BenchResult:
    missing = embedded_model_missing()
    if missing:
        return BenchResult("model-efficiency", "", [], {}, skipped=missing)
    setups, runs = (QUICK_SETUPS, 1) if quick else (FULL_SETUPS, FULL_RUNS)
    started = time.perf_counter()
    with llama_server(n_threads=N_THREADS) as base_url:
        server_up_s = time.perf_counter() - started
        found, (moot_ms, direct_ms) = measure(base_url, setups, runs)
    data: dict[str, Any] = {
        "server_start_s": server_up_s,
        "client_path_ms": {"moot": moot_ms, "direct": direct_ms},
        "setups": {n: figures(r) for n, r in found.items()},
    }
    rows = [
        [
            name,
            f"{f['requests_per_debate']:g} ({f['http_requests_per_debate']:g})",
            f"{f['completion_tokens_moot']:g} / {f['completion_tokens_direct']:g}",
            f"{fmt(f['wall_s_moot'])} / {fmt(f['wall_s_direct'])}",
            f"{fmt(f['tokens_per_s_moot'], 1)} / {fmt(f['tokens_per_s_direct'], 1)}",
            fmt_ratio(f["efficiency"]),
            fmt_ratio(f["per_request_time_ratio"]),
            fmt(f["engine_ms_per_request"], 1),
            f["identical_replies"],
        ]
        for name, f in data["setups"].items()
    ]
    table = Table(
        "model-efficiency: SmolLM2-135M on llama_cpp.server (loopback, 2 threads), "
        "moot vs the same requests sent directly",
        [
            "debate",
            "turn requests (HTTP sent)",
            "completion tokens moot / direct",
            "wall s moot / direct",
            "tokens/s moot / direct",
            "efficiency (moot ÷ direct tokens/s)",
            "time per request moot ÷ direct",
            "moot's own ms per request",
            "identical replies",
        ],
        rows,
        [
            f"{runs} run(s) per debate: the row shows the median run by efficiency; the per-request ratio is the "
            "median over every request of all runs, moot's own ms the median over the runs. "
            "Each request moot sent was also sent directly right after it (every other turn: right before it), so "
            "both saw the same load.",
            "moot's wall time is the whole debate: record, prompts, validation, durable commits, and any request the "
            "server refused (a prompt longer than the model's context, which moot then learns and fits). The "
            "server's refusal of json_schema is learnt by the priming request below and remembered, so no debate "
            "sends that form. "
            "'moot's own ms' is the part spent outside the model calls. Before anything is timed, one schema request "
            "primes the server: its first grammar costs seconds once and would land on whichever side went first.",
            "Temperature 0 on both sides; 'identical replies' counts requests whose direct reply matched moot's.",
            f"moot's HTTP path: a 1-token request with a cached prompt takes {moot_ms:.1f} ms through moot's agent "
            f"and {direct_ms:.1f} ms sent directly (median of {CLIENT_PATH_SAMPLES} each).",
            "A request takes seconds here, and with 2 llama.cpp threads on a shared 2-core machine a single request "
            "now and then takes many times as long, on either side: the median per-request ratio and moot's own ms "
            "are the robust figures; tokens/s over a whole debate moves with such outliers.",
        ],
    )
    losses = [loss(name, f, data["client_path_ms"]) for name, f in data["setups"].items() if f["efficiency"] < 1]
    worst = min(data["setups"].values(), key=lambda f: f["efficiency"])
    summary = (
        f"Through moot the model delivers {fmt_ratio(worst['efficiency'])} of its direct tokens/s (worst debate; "
        f"the median request takes {fmt_ratio(worst['per_request_time_ratio'])} as long); moot's own work is "
        f"{worst['engine_ms_per_request']:.0f} ms per request."
    )
    return BenchResult("model-efficiency", summary, [table], data, losses)

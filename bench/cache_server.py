"""A loopback server shaped after OpenAI's chat completions and Anthropic's Messages API, each applying its
provider's documented prompt-cache rule and reporting cached tokens in that provider's usage format.

- OpenAI (``POST /v1/chat/completions``): automatic. The prompt is the reply schema (``response_format``,
  which OpenAI reads before the messages), then the messages in order. A prompt reads from the cache the
  longest prefix it shares with an earlier prompt still alive (5 minutes since last use), counted in
  128-token steps from 1,024 tokens; ``usage.prompt_tokens_details.cached_tokens`` reports it.
- Anthropic (``POST /v1/messages``): explicit. The prompt is tools, then system blocks, then message content
  blocks. A block with ``cache_control`` (at most 4) is a breakpoint; a prefix up to a breakpoint is written
  to the cache if it holds at least the model's minimum (1,024 tokens for Claude Sonnet 4.x), lives 5
  minutes from its last use, and is read by a later request that has the same prefix ending on one of the 20
  block boundaries before (and at) one of its breakpoints. ``cache_read_input_tokens``,
  ``cache_creation_input_tokens`` and ``input_tokens`` (what follows the last breakpoint) split the prompt.

Every request is answered with a valid turn built from the request's own JSON Schema (:func:`fill`, unless the
caller gives the server another ``answer``):
real-length prose in text fields (hundreds of words a turn), the first allowed value of an enum (the n-th in
the n-th item of a list, so a ranking is a permutation), nothing in a text whose description says it is
otherwise empty, and, for a text that must name someone (a pattern), a sentence naming the first word of
the request that the pattern accepts. No script: what a turn
holds follows from what moot asked. Tokens are counted with one tokenizer throughout (the caller's).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Count = Callable[[str], int]
Answer = Callable[[dict[str, Any], str, str], Any]  # (the reply's schema, a seed, the request's text) -> the turn

LIFETIME_S = 300.0  # both providers: five minutes from last use
OPENAI_MIN, OPENAI_STEP = 1024, 128
ANTHROPIC_MIN = 1024  # Claude Sonnet 4.x; Haiku 4.5 and Opus 4.5/4.6 need 4,096
ANTHROPIC_LOOKBACK = 20
ANTHROPIC_BREAKPOINTS = 4

SENTENCES = (
    "The costs we can measure today are build minutes, review latency and the hours lost to version drift.",
    "Each of these has a number in last quarter's reports, and the proposal should be judged against them.",
    "A change that touches a shared library now needs one pull request per consumer and a release per service.",
    "That overhead is small for one change but it compounds, and it falls on the teams with the least slack.",
    "The strongest objection is that the build grows with every service unless it is scoped to what changed.",
    "A dependency-aware build answers it only if the dependency graph is kept accurate, which takes owners.",
    "Ownership has to be explicit: a directory without an owner is a directory nobody reviews properly.",
    "The migration should be reversible at every step, so that a failed pilot costs weeks and not a quarter.",
    "We should pilot with the services that already share the most code, and decide the rest from the pilot.",
    "If the pilot's build times regress by more than a fifth, the plan stops and the numbers are published.",
    "Security reviews get simpler when every service pins the same versions of the same dependencies.",
    "On-call load may rise for a while, because one broken commit can now block several teams at once.",
    "The answer to that is a fast revert path and a rule that the main branch stays green before anything else.",
    "None of this is free, and the honest comparison is with the cost of the drift we already live with.",
    "What would change my mind is evidence that the drift incidents have causes a single repository keeps.",
    "I would rather agree on the measurements first and argue about the tooling once we have them.",
)
WORDS_LONG = 300  # a top-level text: a turn's main argument, hundreds of words with its other fields
WORDS_SHORT = 30  # a text the schema calls short, or one inside a list
PATTERN_FILL_CHARS = 400


def prose(seed: str, words: int) -> str:
    """About ``words`` words of plain prose (no quotes or backslashes), the same for the same seed."""
    start = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
    out: list[str] = []
    index = 0
    while sum(len(s.split()) for s in out) < words:
        out.append(SENTENCES[(start + index * 7) % len(SENTENCES)])
        index += 1
    return " ".join(out)


def fill(schema: dict[str, Any], seed: str, context: str, *, defs: dict[str, Any] | None = None) -> Any:
    """A value that ``schema`` accepts, as a capable model would write it (see the module docstring)."""
    defs = schema.get("$defs", defs or {})
    return _fill(schema, seed, context, defs, depth=0, index=0)


def _fill(schema: dict[str, Any], seed: str, context: str, defs: dict[str, Any], depth: int, index: int) -> Any:
    if "$ref" in schema:
        return _fill(defs[schema["$ref"].rsplit("/", 1)[-1]], seed, context, defs, depth, index)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return _fill(options[0], seed, context, defs, depth, index)
    if "enum" in schema:
        return schema["enum"][min(index, len(schema["enum"]) - 1)]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        # An object's enums take its place in a list too: the n-th ranked item names the n-th answer.
        return {name: _fill(sub, f"{seed}/{name}", context, defs, depth + 1, index) for name, sub in props.items()}
    if kind == "array":
        count = max(schema.get("minItems", 1), 1)
        item = schema.get("items", {"type": "string"})
        return [_fill(item, f"{seed}/{i}", context, defs, depth + 1, i) for i in range(count)]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        low = schema.get("minimum", 0)
        return low if kind == "integer" else max(low, min(0.7, schema.get("maximum", 1.0)))
    return _text(schema, seed, context, depth)


def _text(schema: dict[str, Any], seed: str, context: str, depth: int) -> str:
    limit = schema.get("maxLength")
    if limit == 0:
        return ""
    if "pattern" in schema:
        return _naming(schema["pattern"], seed, context)
    description = str(schema.get("description", "")).lower()
    if "otherwise empty" in description:
        return ""  # a text only some turns fill (a critique's summary with DONE): the first enum value is not one
    short = depth > 1 or "short" in description
    text = prose(seed, WORDS_SHORT if short else WORDS_LONG)
    return text[:limit] if limit else text


def _naming(pattern: str, seed: str, context: str) -> str:
    """A sentence about the first word of ``context`` that makes the text match ``pattern``."""
    rest = prose(seed, WORDS_SHORT)[:PATTERN_FILL_CHARS]
    for word in dict.fromkeys(re.findall(r"[A-Za-z][\w-]*", context)):
        text = f"The ranking put {word} first, and this answer builds on the points of {word}. {rest}"
        if re.search(pattern, text):
            return text
    for size in range(len(rest), 0, -10):  # a pattern that only bounds the text's characters: as much as it takes
        if re.search(pattern, rest[:size].rstrip()):
            return rest[:size].rstrip()
    raise ValueError(f"no word of the request makes a text that matches {pattern!r}")


@dataclass
class Cache:
    """One provider's prompt cache: entries keyed by a prefix's digest, each with its tokens and last use."""

    entries: dict[str, tuple[int, float]] = field(default_factory=dict)
    prompts: list[tuple[str, float]] = field(default_factory=list)  # OpenAI: every prompt seen, with its last use

    def alive(self, used: float, now: float) -> bool:
        return now - used <= LIFETIME_S


@dataclass
class Served:
    """One answered request, for the benchmark's report."""

    provider: str
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    completion_tokens: int


class CacheServer:
    """The state behind the loopback server: the two caches, the tokenizer, what was served."""

    def __init__(self, count: Count, answer: Answer | None = None) -> None:
        self.count = count
        self.answer = answer or fill
        self.lock = threading.Lock()
        self.openai = Cache()
        self.anthropic = Cache()
        self.served: list[Served] = []
        self.requests = 0

    def reset(self) -> None:
        with self.lock:
            self.openai, self.anthropic, self.served = Cache(), Cache(), []

    # --- OpenAI ---------------------------------------------------------------------------------------

    def openai_reply(self, body: dict[str, Any]) -> dict[str, Any]:
        schema = _openai_schema(body)
        messages = body.get("messages", [])
        prompt = (json.dumps(schema) + "\n" if schema else "") + "".join(
            f"<|{m.get('role')}|>{m.get('content')}\n" for m in messages
        )
        with self.lock:
            cached = self._openai_cached(prompt)
            self.requests += 1
        seed = _digest(prompt)  # each request's own texts, the same on every run
        context = "\n".join(str(m.get("content")) for m in messages)
        text = json.dumps(self.answer(schema, seed, context)) if schema else prose(seed, WORDS_LONG)
        total, completion = self.count(prompt), self.count(text)
        self._served("openai", total, min(cached, total), 0, completion)
        return {
            "id": f"chatcmpl-bench{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": total,
                "completion_tokens": completion,
                "total_tokens": total + completion,
                "prompt_tokens_details": {"cached_tokens": min(cached, total), "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
            },
        }

    def _openai_cached(self, prompt: str) -> int:
        """The longest prefix shared with a live earlier prompt, in 128-token steps from 1,024 tokens."""
        now = time.monotonic()
        cache = self.openai
        live = [(text, used) for text, used in cache.prompts if cache.alive(used, now)]
        shared, matched = 0, -1
        for position, (text, _) in enumerate(live):
            common = len(_common_prefix(text, prompt))
            if common > shared:
                shared, matched = common, position
        if matched >= 0:
            live[matched] = (live[matched][0], now)  # a hit keeps the entry alive
        cache.prompts = [*live, (prompt, now)]
        tokens = self.count(prompt[:shared])
        return 0 if tokens < OPENAI_MIN else tokens // OPENAI_STEP * OPENAI_STEP

    # --- Anthropic ------------------------------------------------------------------------------------

    def anthropic_reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        blocks = _anthropic_blocks(body)
        breakpoints = [i for i, (_, marked) in enumerate(blocks) if marked]
        if len(breakpoints) > ANTHROPIC_BREAKPOINTS:
            error = f"A maximum of {ANTHROPIC_BREAKPOINTS} blocks with cache_control may be provided."
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": error}}
        ends = list(itertools.accumulate(self.count(text) for text, _ in blocks))  # tokens up to each boundary
        digests = _prefix_digests([text for text, _ in blocks])
        with self.lock:
            read, written = self._anthropic_cache(breakpoints, ends, digests)
            self.requests += 1
        seed = digests[-1] if digests else ""
        tools = body.get("tools") or []
        schema = tools[0].get("input_schema") if tools else None
        context = "\n".join(text for text, _ in blocks)
        turn = fill(schema, seed, context) if schema else None
        text = json.dumps(turn) if turn is not None else prose(seed, WORDS_LONG)
        total, completion = (ends[-1] if ends else 0), self.count(text)
        self._served("anthropic", total, read, written, completion)
        content = (
            [{"type": "tool_use", "id": f"toolu_bench{self.requests}", "name": tools[0]["name"], "input": turn}]
            if turn is not None
            else [{"type": "text", "text": text}]
        )
        return 200, {
            "id": f"msg_bench{self.requests}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude"),
            "content": content,
            "stop_reason": "tool_use" if turn is not None else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": total - read - written,
                "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read,
                "output_tokens": completion,
            },
        }

    def _anthropic_cache(self, breakpoints: list[int], ends: list[int], digests: list[str]) -> tuple[int, int]:
        """(tokens read, tokens written) for a request with these breakpoints, and the cache updated."""
        now = time.monotonic()
        cache = self.anthropic
        read = 0
        for point in breakpoints:
            for boundary in range(point, max(-1, point - ANTHROPIC_LOOKBACK), -1):
                hit = cache.entries.get(digests[boundary])
                if hit is not None and cache.alive(hit[1], now):
                    cache.entries[digests[boundary]] = (hit[0], now)
                    read = max(read, hit[0])
                    break
        last = read
        for point in breakpoints:
            if ends[point] >= ANTHROPIC_MIN and ends[point] > read:
                cache.entries[digests[point]] = (ends[point], now)
                last = max(last, ends[point])
        return read, last - read

    def _served(self, provider: str, prompt: int, cached: int, written: int, completion: int) -> None:
        with self.lock:
            self.served.append(Served(provider, prompt, cached, written, completion))


def _openai_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    form = body.get("response_format") or {}
    if form.get("type") == "json_schema":
        schema: dict[str, Any] = form["json_schema"]["schema"]
        return schema
    return form.get("schema")


def _anthropic_blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request as (text, has a breakpoint) blocks, in the order of its prefix: tools, system, messages."""
    blocks = [(json.dumps(tool, sort_keys=True), "cache_control" in tool) for tool in body.get("tools") or []]
    system = body.get("system")
    for block in [{"text": system}] if isinstance(system, str) else system or []:
        blocks.append((str(block.get("text")), "cache_control" in block))
    for message in body.get("messages", []):
        content = message.get("content")
        for block in [{"text": content}] if isinstance(content, str) else content:
            blocks.append((f"<|{message.get('role')}|>{block.get('text')}", "cache_control" in block))
    return blocks


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _prefix_digests(texts: list[str]) -> list[str]:
    """The digest of each prefix that ends on a block boundary."""
    digest = hashlib.sha256()
    found = []
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
        found.append(digest.copy().hexdigest())
    return found


def _common_prefix(a: str, b: str) -> str:
    limit = min(len(a), len(b))
    low, high = 0, limit
    while low < high:  # the longest common prefix by bisection: slices compare at C speed
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return a[:low]


@contextmanager
def serving(state: CacheServer) -> Iterator[str]:
    """Serve ``state`` on 127.0.0.1 in a thread; yields the base URL (``/v1`` for OpenAI, bare for Anthropic)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # the agents' reachability probe: a list of one model
            self._answer(200, {"data": [{"id": "bench", "type": "model"}], "has_more": False, "object": "list"})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.endswith("/chat/completions"):
                self._answer(200, state.openai_reply(body))
            elif self.path.endswith("/messages"):
                self._answer(*state.anthropic_reply(body))
            else:
                self._answer(404, {"error": {"message": f"no route {self.path}"}})

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()

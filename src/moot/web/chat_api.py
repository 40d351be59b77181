"""``moot serve --openai``: deliberations behind OpenAI's chat-completions API, beside the viewer's pages.

``GET /v1/models`` lists one model per protocol that answers a question (its Analysis can pose a question to a
panel and read the answer back): ``moot/council``, ``moot/critique``, ``moot/agora``. ``POST /v1/chat/completions``
puts the conversation's last user message to the work root's panel (``[panel]`` in moot.toml) under that
protocol, and answers with the protocol's answer once the deliberation ends: at once (a ``chat.completion``) or
streamed (``"stream": true``: ``chat.completion.chunk`` events, one per accepted turn while it runs, then the
answer). Besides the usual fields every answer carries a ``moot`` object (the record's id, the protocol, its
outcome and reason, its decision summary, the record it follows, its signed receipt) and ``X-Moot-Record`` / ``X-Moot-Protocol``
headers. A deliberation that ends without an answer is an error in OpenAI's shape, never an answer.

A conversation's next question is a new deliberation whose question carries the earlier question and answer and
whose ``follows`` names the earlier record; the earlier record is found by the answer the client sends back, which
this server remembers while it runs.

Closed as the other doors are: every request carries the server's token as its bearer token; a client names a
model and sends messages, and nothing it sends becomes an agent spec, a path or a URL; the body, the messages and
the question are bounded; deliberations count against moot.toml's ``max_running_debates``; the panel's agent specs
obey the door's agent policy, as MCP's do.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from moot import registry
from moot.agents.family import one_family_warning
from moot.agents.policy import AgentPolicy
from moot.config import Settings, load_settings
from moot.decision import decision_json
from moot.engine.runner import DebateRun, Runner, RunState
from moot.errors import ChatError, MootError, RunnerBusy, UserError
from moot.followup import follow_up_question, note_followup, open_items
from moot.limits import subject_problem
from moot.plugin import Analysis

API_PREFIX = "/v1/"
MODEL_PREFIX = "moot/"
# Each question's deliberation gets a folder of its own (the same question twice is two records).
CHAT_DIR = ".chat"
MAX_BODY_BYTES = 1024 * 1024  # a conversation of questions and answers, not a corpus
MAX_MESSAGES = 256
REMEMBERED_ANSWERS = 10_000  # answers this server gave, to find the record a follow-up continues
HEARTBEAT_S = 15.0  # a stream sends a progress event at least this often, so that proxies keep it open
BUDGETS = ("max_tokens", "max_cost_usd")  # what a request's moot object may lower
PANEL_FIX = 'add a [panel] table to moot.toml naming its members, e.g. ada = "openai:gpt-4o-mini"'


def error_response(error: ChatError) -> JSONResponse:
    """``error`` as the HTTP response OpenAI's clients read."""
    return JSONResponse(error.body(), status_code=error.status)


def answering_protocols() -> dict[str, Analysis]:
    """The protocols a question can be put to: their Analysis poses it to a panel and reads the answer."""
    found: dict[str, Analysis] = {}
    for name, plugin in registry.protocols().items():
        try:
            analysis = plugin.analysis.load() if plugin.analysis is not None else None
        except MootError:  # a broken plugin: `moot protocols --check` says why
            continue
        if analysis is not None and analysis.answer is not None and analysis.pose is not None:
            found[name] = analysis
    return found


def panel_of(root: Path) -> list[tuple[str, str]]:
    """The panel from moot.toml, refused in one sentence when there is none."""
    panel = list(load_settings(root).panel.items())
    if not panel:
        raise UserError(f"moot serve --openai needs the members a question goes to; {PANEL_FIX}.")
    return panel


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _digest(answer: str) -> str:
    return hashlib.sha256(answer.strip().encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Answered:
    """An answer this server gave: its record, and what that deliberation left open (for a follow-up)."""

    record: str
    left_open: list[str]


@dataclass(frozen=True)
class Asked:
    """What a chat-completions request asks for, read and bounded."""

    protocol: str
    question: str  # what the panel is asked: the last question, with the earlier exchange it follows
    last_question: str  # the user's last message alone
    follows: str | None
    stream: bool
    include_usage: bool
    budgets: dict[str, float]  # the deliberation's max_tokens, max_cost_usd: never over the server's own


def read_request(body: bytes, protocols: Mapping[str, Analysis], answers: Mapping[str, Answered]) -> Asked:
    """The request ``body`` read, or a :class:`ChatError` naming what to fix."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise ChatError(400, "the body is not JSON; send a chat-completions request object.", "invalid_json") from None
    if not isinstance(data, dict):
        raise ChatError(400, "the body is not a JSON object; send a chat-completions request object.", "invalid_json")
    model = data.get("model")
    protocol = model.removeprefix(MODEL_PREFIX) if isinstance(model, str) and model.startswith(MODEL_PREFIX) else None
    if protocol is None or protocol not in protocols:
        known = ", ".join(MODEL_PREFIX + name for name in protocols)
        raise ChatError(
            404, f"the model {model!r} does not exist here; use one of {known}.", "model_not_found", "model"
        )
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages or len(messages) > MAX_MESSAGES:
        raise ChatError(
            400, f"messages must be a list of 1 to {MAX_MESSAGES} messages; send the conversation.", "invalid_messages"
        )
    said = [(m.get("role"), _text(m.get("content"))) for m in messages if isinstance(m, dict)]
    if not said or said[-1][0] != "user" or not said[-1][1].strip():
        raise ChatError(400, "the last message must be the user's question; end messages with it.", "invalid_messages")
    question = last = said[-1][1].strip()
    follows, earlier = _earlier(said[:-1], answers)
    if earlier is not None:
        question = follow_up_question(question, follows, *earlier)
    problem = subject_problem("question", question)
    if problem is not None:
        raise ChatError(400, problem, "question_too_long", "messages")
    options = data.get("stream_options")
    return Asked(
        protocol=protocol,
        question=question,
        last_question=last,
        follows=follows,
        stream=data.get("stream") is True,
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
        budgets=_budgets(data.get("moot")),
    )


def _budgets(asked: object) -> dict[str, float]:
    """The budgets a request's ``moot`` object asks for: ``max_tokens`` and ``max_cost_usd`` of the whole
    deliberation (OpenAI's ``max_tokens`` bounds one reply, not a deliberation of many calls: it is not applied)."""
    if asked is None:
        return {}
    if not isinstance(asked, dict) or set(asked) - set(BUDGETS):
        raise ChatError(
            400, f"moot takes only {' and '.join(BUDGETS)}; fix the request's moot object.", "invalid_value"
        )
    found: dict[str, float] = {}
    for name, value in asked.items():
        whole = name == "max_tokens"
        least = 1 if whole else 0  # a token budget of 0 could start nothing
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) or value < least:
            kind = "whole number" if whole else "number"
            raise ChatError(
                400, f"moot.{name} must be a {kind} of {least} or more; fix it or leave it out.", "invalid_value"
            )
        found[name] = value
    return found


def over_budget(asked: Mapping[str, float], settings: Settings) -> ChatError | None:
    """A request asking for more than the server's own budget (moot.toml) allows, refused before anything runs."""
    for name, value in asked.items():
        cap = getattr(settings, name)
        if cap is not None and value > cap:
            return ChatError(
                400,
                f"moot.{name} {value:g} is over this server's budget of {cap:g} for a deliberation ({name} in its "
                "moot.toml); ask for that much or less.",
                "budget",
                f"moot.{name}",
            )
    return None


def _earlier(
    history: list[tuple[object, str]], answers: Mapping[str, Answered]
) -> tuple[str | None, tuple[str, str, list[str]] | None]:
    """The record the conversation's last answer came from (if this server gave it), and that exchange: the
    question, the answer and what its deliberation left open."""
    replies = [i for i, (role, _) in enumerate(history) if role == "assistant"]
    if not replies:
        return None, None
    last = replies[-1]
    answer = history[last][1].strip()
    asked = next((text.strip() for role, text in reversed(history[:last]) if role == "user"), "")
    known = answers.get(_digest(answer))
    return (known.record, (asked, answer, known.left_open)) if known else (None, (asked, answer, []))


class ChatApi:
    """The deliberations this server runs for chat clients, and the answers it gave."""

    def __init__(self, root: Path, policy: AgentPolicy) -> None:
        self.root = root
        self.runner = Runner(root, policy)
        self.protocols = answering_protocols()
        self.answers: OrderedDict[str, Answered] = OrderedDict()  # answer digest -> its record
        self.panel_warnings: dict[str, str | None] = {}  # debate id -> the one-family warning of its panel

    async def start(self, asked: Asked) -> DebateRun:
        analysis = self.protocols[asked.protocol]
        assert analysis.pose is not None
        try:
            panel = panel_of(self.root)
            spec = {"protocol": asked.protocol, **analysis.pose(asked.question, panel), "panel": dict(panel)}
            refused = over_budget(asked.budgets, load_settings(self.root))
            if refused is not None:
                raise refused
            under = f"{CHAT_DIR}/{time.strftime('%Y-%m-%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
            run = await self.runner.start(
                spec,
                under=under,
                max_tokens=asked.budgets.get("max_tokens"),
                max_cost_usd=asked.budgets.get("max_cost_usd"),
            )
            self.panel_warnings[run.id] = one_family_warning(dict(panel))
            return run
        except RunnerBusy as busy:
            raise ChatError(429, str(busy), "rate_limit_exceeded") from None
        except UserError as refused:
            raise ChatError(400, str(refused), "invalid_request") from None

    async def finish(self, run: DebateRun) -> dict[str, Any]:
        """Wait for ``run``'s end; the ``moot`` object of its answer, whose ``answer`` is the protocol's answer."""
        seen = -1
        while run.active:
            seen = run.version
            await run.next_change(seen, HEARTBEAT_S)
        return await asyncio.to_thread(self._outcome, run)

    def _outcome(self, run: DebateRun) -> dict[str, Any]:
        analysis = self.protocols[run.protocol]
        assert analysis.answer is not None
        outcome = run.driver.outcome()
        halted = run.result.halted if run.result is not None else None
        answer = analysis.answer(run.record_path) if run.state is RunState.ended else None
        if answer:
            self.answers[_digest(answer)] = Answered(run.id, open_items(run.protocol, run.record_path))
            while len(self.answers) > REMEMBERED_ANSWERS:
                self.answers.popitem(last=False)
        reason = (halted or {}).get("reason") or (outcome.reason if outcome is not None else None) or run.error
        return {
            "answer": answer,
            "record": run.id,
            "protocol": run.protocol,
            "state": run.state.value,
            "outcome": outcome.name if outcome is not None else None,
            "reason": reason,
            "degraded": outcome.degraded if outcome is not None else None,
            "panel_warning": self.panel_warnings.pop(run.id, None),
            "halted": (halted or {}).get("cause"),
            "turns": run.driver.summary().turns,
            "decision": decision_json(run.record_path),
            "receipt": _receipt(run.record_path),
        }


def _receipt(record: Path) -> dict[str, Any] | None:
    """The record's signed receipt with this server's key, or None when moot's receipts extra is missing."""
    try:
        from moot.receipts import build_receipt, load_or_create_key

        return build_receipt(record, load_or_create_key(None))
    except (ImportError, MootError):
        return None


def _no_answer(done: Mapping[str, Any]) -> ChatError:
    what = f"the {done['protocol']} {done['record']} ended {done['outcome'] or done['state']} without an answer"
    if done["halted"] == "budget":
        return ChatError(400, f"{what}: {done['reason']}; raise max_tokens or the budget in moot.toml.", "budget")
    return ChatError(502, f"{what} ({done['reason']}); its record says more (moot show).", "no_answer")


def _usage(run: DebateRun) -> dict[str, int]:
    return {
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "total_tokens": run.prompt_tokens + run.completion_tokens,
    }


def _headers(run: DebateRun) -> dict[str, str]:
    return {"X-Moot-Record": run.id, "X-Moot-Protocol": run.protocol}


async def _body(request: Request) -> bytes:
    """The request's body, refused past :data:`MAX_BODY_BYTES` before more is read."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ChatError(413, f"the body is over {MAX_BODY_BYTES:,} bytes; send a shorter conversation.", "too_large")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise ChatError(
                    413, f"the body is over {MAX_BODY_BYTES:,} bytes; send a shorter conversation.", "too_large"
                )
    except ClientDisconnect:
        raise ChatError(400, "the client left before sending the whole body.", "incomplete") from None
    return bytes(body)


async def models(request: Request) -> Response:
    api: ChatApi = request.app.state.chat
    data = [{"id": MODEL_PREFIX + name, "object": "model", "created": 0, "owned_by": "moot"} for name in api.protocols]
    return JSONResponse({"object": "list", "data": data})


async def completions(request: Request) -> Response:
    api: ChatApi = request.app.state.chat
    try:
        asked = read_request(await _body(request), api.protocols, api.answers)
        run = await api.start(asked)
    except ChatError as refused:
        return error_response(refused)
    if asked.follows is not None:
        await asyncio.to_thread(note_followup, api.root / asked.follows, run.id, asked.last_question, run.started_at)
    reply = _Reply(run, asked, follows=asked.follows)
    if asked.stream:
        return StreamingResponse(reply.chunks(api), media_type="text/event-stream", headers=_headers(run))
    done = await api.finish(run)
    if not done["answer"]:
        return error_response(_no_answer(done))
    return JSONResponse(reply.completion(done), headers={**_headers(run), "X-Moot-Outcome": str(done["outcome"])})


class _Reply:
    """One answer's fields, at once or as chunks."""

    def __init__(self, run: DebateRun, asked: Asked, follows: str | None) -> None:
        self.run, self.asked, self.follows = run, asked, follows
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = MODEL_PREFIX + asked.protocol

    def _moot(self, done: Mapping[str, Any]) -> dict[str, Any]:
        return {**{k: v for k, v in done.items() if k != "answer"}, "follows": self.follows}

    def completion(self, done: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": done["answer"]}, "finish_reason": "stop"}
            ],
            "usage": _usage(self.run),
            "moot": self._moot(done),
        }

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"

    async def chunks(self, api: ChatApi) -> AsyncIterator[str]:
        """The stream: who speaks as turns land (a ``moot`` field with an empty delta), then the answer."""
        run = self.run
        yield self._chunk({"role": "assistant", "content": ""}, moot={"record": run.id, "event": "started"})
        seen = run.version
        while run.active:
            await run.next_change(seen, HEARTBEAT_S)
            seen = run.version
            yield self._chunk({}, moot={"record": run.id, "event": run.last_event, "turns": run.turns_this_run})
        done = await api.finish(run)
        if not done["answer"]:
            yield f"data: {json.dumps(_no_answer(done).body())}\n\n"
            yield "data: [DONE]\n\n"
            return
        yield self._chunk({"content": done["answer"]})
        yield self._chunk({}, "stop", moot=self._moot(done))
        if self.asked.include_usage:
            usage = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model}
            yield f"data: {json.dumps({**usage, 'choices': [], 'usage': _usage(run)})}\n\n"
        yield "data: [DONE]\n\n"


def routes() -> list[Route]:
    return [Route(f"{API_PREFIX}models", models), Route(f"{API_PREFIX}chat/completions", completions, methods=["POST"])]

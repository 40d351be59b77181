"""Participants whose replies are prepared: for tests, demos and replaying a debate.

:class:`ScriptAgent` hands out queued replies in order (``enqueue`` adds more, like llm's
MockModel); a reply queued for a role goes only to that role. :class:`FunctionAgent` computes each
reply from the request (like pydantic-ai's FunctionModel). Both record the requests they got.

``script:FILE`` holds a JSON array, or JSON lines, one entry per call:

- a string is the reply text, for whichever role asks next;
- ``{"reply": ..., "role": "critic"}`` is a reply for that role only (``role`` may be left out);
  a string ``reply`` is used as is, any other JSON value is sent as compact JSON;
- any other JSON value (a turn object, say) is sent as compact JSON, for whichever role asks.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moot.agents.base import Agent, AgentReply, AgentRequest
from moot.errors import AgentError, AgentUnavailable, UnknownAgentSpec


@dataclass(frozen=True)
class ScriptedReply:
    text: str
    role: str | None = None  # None: any role


class ScriptAgent(Agent):
    """Replays prepared replies in order; raises AgentError when none is left for the asking role."""

    name = "script"

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        return 0.0  # prepared replies: no model is called

    def __init__(self, replies: Iterable[str | ScriptedReply] = (), *, source: str = "script") -> None:
        self.source = source
        self._queue: list[ScriptedReply] = []
        self.requests: list[AgentRequest] = []
        self.enqueue(*replies)

    def enqueue(self, *replies: str | ScriptedReply, role: str | None = None) -> ScriptAgent:
        """Queue replies; plain strings get ``role`` (None: any role)."""
        for item in replies:
            self._queue.append(item if isinstance(item, ScriptedReply) else ScriptedReply(item, role))
        return self

    @property
    def remaining(self) -> int:
        return len(self._queue)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptAgent:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise AgentUnavailable(f"script file {path} was not found: check the path in script:FILE") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise AgentUnavailable(f"cannot read script file {path} ({exc}): fix the file or its permissions") from exc
        return cls(parse_script(text, str(path)), source=str(path))

    async def reply(self, request: AgentRequest) -> AgentReply:
        self.requests.append(request)
        for index, item in enumerate(self._queue):
            if item.role is None or item.role == request.role:
                del self._queue[index]
                return AgentReply(text=item.text, latency_s=0.0, model=f"script:{self.source}")
        who = f" for role '{request.role}'" if request.role else ""
        raise AgentError(
            f"{self.source} has no reply left{who} after {len(self.requests) - 1} calls: "
            "add replies to the script or end the run sooner"
        )


ReplyFunction = Callable[[AgentRequest], "str | AgentReply | Awaitable[str | AgentReply]"]


class FunctionAgent(Agent):
    """Each reply is ``function(request)``: a str or an AgentReply, returned or awaited."""

    name = "function"

    def __init__(self, function: ReplyFunction, *, model: str = "function") -> None:
        self.function = function
        self.model = model
        self.requests: list[AgentRequest] = []

    async def reply(self, request: AgentRequest) -> AgentReply:
        self.requests.append(request)
        start = time.perf_counter()
        result = self.function(request)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, AgentReply):
            return result
        return AgentReply(text=result, latency_s=time.perf_counter() - start, model=self.model)


def parse_script(text: str, source: str = "script") -> list[ScriptedReply]:
    """Entries of a script file: a JSON array, else JSON lines (blank lines skipped)."""
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or a number too long or nesting too deep to read
        whole = None
        entries: list[tuple[int, Any]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entries.append((number, json.loads(line)))
            except (ValueError, RecursionError) as exc:
                problem = exc.msg if isinstance(exc, json.JSONDecodeError) else "too long or too deeply nested"
                raise AgentError(
                    f"{source} line {number} is not JSON ({problem}): write one JSON value per line or a JSON array"
                ) from None
    else:
        values = whole if isinstance(whole, list) else [whole]
        entries = [(0, value) for value in values]
    return [_entry(value, source, number) for number, value in entries]


def _entry(value: Any, source: str, line: int) -> ScriptedReply:
    if isinstance(value, str):
        return ScriptedReply(value)
    if isinstance(value, dict) and "reply" in value:
        role = value.get("role")
        if role is not None and not isinstance(role, str):
            where = f" line {line}" if line else ""
            raise AgentError(f"{source}{where} has a non-string role {role!r}: write the role as a string")
        reply = value["reply"]
        return ScriptedReply(reply if isinstance(reply, str) else _compact(reply), role)
    return ScriptedReply(_compact(value))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def from_spec(rest: str) -> ScriptAgent:
    """``script:FILE``."""
    if not rest.strip():
        raise UnknownAgentSpec("script needs a file: use script:FILE with a JSON array or JSON lines of replies")
    return ScriptAgent.from_file(rest.strip())

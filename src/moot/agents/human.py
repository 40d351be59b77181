"""A person at a terminal as a participant.

The person reads the request (the other side's latest turn is in it; the JSON Schema is never
shown) and answers in words: moot walks the turn's schema field by field, asking for each with its
description — a choice for a fixed set of values (the critique status, a duel stance, an Agora
signal), a number, yes or no, or free text. Free text is plain text or Markdown over as many lines
as needed, ended by a line holding only ``.``; a line holding only ``e`` opens ``$EDITOR`` instead.
moot builds the JSON turn from the answers. A turn without a schema is free text.

On a real terminal the input is read without a helper thread, so Ctrl-C ends the run at once.
Without an injected input stream the agent needs stdin to be a terminal, and says so (at its probe,
before a run starts, and when asked) instead of hanging on a pipe; choosing it needs none, so a dry
run prices a person without a terminal. ``timeout_s`` is not enforced: people take the time they need.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from typing import Any, TextIO

from moot.agents.base import Agent, AgentReply, AgentRequest
from moot.agents.human_form import HINT, FormError, fixed_value, form_of, read_form, resolve
from moot.errors import AgentBadReply, AgentUnavailable, UnknownAgentSpec

END_OF_TURN = "."
OPEN_EDITOR = "e"
OPEN_FORM = "form"  # typed alone at any question: the whole turn as one Markdown form in $EDITOR
FORM_PROBLEM = re.compile(r"^<!-- moot: .*?-->\n?", re.S)  # the note on why a form opened again
ASK = "› "  # marks each question, so the person (and a test) tells it from the prompt's text


class HumanAgent(Agent):
    """Reads each turn from a person."""

    name = "human"
    interactive = True

    def price_usd(
        self, prompt_tokens: int, completion_tokens: int, *, cached_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        return 0.0  # a person's turn calls no model: --max-cost counts only the models' spend

    def __init__(self, input_stream: TextIO | None = None, output_stream: TextIO | None = None) -> None:
        self._terminal = input_stream is None  # stdin, which must be a terminal when the person is asked
        input_stream = sys.stdin if input_stream is None else input_stream
        self._input = input_stream
        # A real terminal is read straight from its descriptor in the event loop (Ctrl-C cancels at once).
        self._fd = _terminal_fd(input_stream) if input_stream is sys.stdin else None
        self._pending: list[str] = []
        self._eof = False
        self._form: str | None = None  # the current turn's form, when its shape can be written as one
        # Prompts go to stderr by default so that stdout stays clean for whatever moot prints there.
        self._output = output_stream or sys.stderr

    async def probe(self) -> None:
        if self._terminal and not sys.stdin.isatty():
            raise AgentUnavailable(
                "the human agent needs a terminal on stdin: run moot in a terminal, "
                "or use script:FILE to replay prepared replies"
            )

    async def reply(self, request: AgentRequest) -> AgentReply:
        await self.probe()
        start = time.perf_counter()
        self._show(request)
        if request.json_schema is None:
            text = await self._text("your turn")
        else:
            schema = request.json_schema
            try:
                answer = await self._value(schema, schema, "")
            except _FormWanted:
                answer = await self._fill_form(schema, request)
            text = json.dumps(answer, ensure_ascii=False)
        if not text.strip():
            raise AgentBadReply(f"no turn was typed: type the turn, then a line with only '{END_OF_TURN}'")
        return AgentReply(text=text, latency_s=time.perf_counter() - start, model="human")

    # --- what the person sees ---

    def _say(self, text: str) -> None:
        self._output.write(text)
        self._output.flush()

    def _show(self, request: AgentRequest) -> None:
        who = request.role or "you"
        where = f" ({request.protocol})" if request.protocol else ""
        self._say(f"\n── turn for {who}{where} ──\n{request.prompt}\n")
        self._say(
            f"── write plain text or Markdown; end each answer with a line holding only '{END_OF_TURN}', "
            f"or type '{OPEN_EDITOR}' alone to use $EDITOR ──\n"
        )
        self._form = form_of(request.json_schema, _form_title(request)) if request.json_schema else None
        if self._form is not None:
            self._say(
                f"── or type '{OPEN_FORM}' alone at any question to write the whole turn as one form in $EDITOR ──\n"
            )

    async def _fill_form(self, schema: dict[str, Any], request: AgentRequest) -> dict[str, Any]:
        """The whole turn from one Markdown form; a form that cannot be read opens again, saying why."""
        offered = self._form or ""
        while True:
            text = await asyncio.to_thread(edit_text, offered)
            if not HINT.sub("", text).strip():
                raise AgentBadReply(f"the form was saved empty: no turn was given by {request.role or 'you'}")
            try:
                return read_form(text, schema)
            except FormError as exc:
                if text == offered.strip():
                    raise AgentBadReply(
                        f"the form came back unchanged and cannot be read ({exc}): check that $EDITOR saves the file"
                    ) from None
                self._say(f"  the form cannot be read: {exc}. It opens again.\n")
                offered = f"<!-- moot: {exc}. -->\n{FORM_PROBLEM.sub('', text).lstrip()}\n"

    async def _answer(self) -> str:
        """One typed answer line, stripped; the form word opens the whole turn as a form instead."""
        typed = (await self._line()).strip()
        if typed == OPEN_FORM and self._form is not None:
            raise _FormWanted
        return typed

    # --- the form, walked from the schema ---

    async def _value(self, schema: dict[str, Any], root: dict[str, Any], name: str) -> Any:
        schema = resolve(schema, root)
        label = name or "answer"
        description = schema.get("description", "")
        kind = schema.get("type")
        fixed, value = fixed_value(schema)  # a field with nothing to ask now
        if fixed:
            return value
        if "enum" in schema:
            values = list(schema["enum"])
            if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                return await self._number(label, description, float, allowed=values)
            return await self._choice(label, description, values)
        if kind == "object":
            return {
                key: await self._value(sub, root, f"{name}.{key}" if name else key)
                for key, sub in schema.get("properties", {}).items()
            }
        if kind == "array":
            return await self._list(schema, root, label, description)
        if kind == "boolean":
            return await self._yes_no(label, description)
        if kind in ("integer", "number"):
            return await self._number(label, description, int if kind == "integer" else float)
        return await self._text(f"{label}" + (f" — {description}" if description else ""))

    async def _choice(self, label: str, description: str, options: list[Any]) -> Any:
        if len(options) == 1:
            self._say(f"{ASK}{label}: {options[0]} (the only choice now)\n")
            return options[0]
        listed = "  ".join(f"{n}) {option}" for n, option in enumerate(options, start=1))
        while True:
            self._say(
                f"{ASK}{label}{' — ' + description if description else ''}\n  {listed}\n  choose 1-{len(options)}: "
            )
            typed = await self._answer()
            if typed.isdigit() and 1 <= int(typed) <= len(options):
                return options[int(typed) - 1]
            by_name = [o for o in options if str(o).lower() == typed.lower()]
            if by_name:
                return by_name[0]

    async def _yes_no(self, label: str, description: str) -> bool:
        while True:
            self._say(f"{ASK}{label}{' — ' + description if description else ''} [y/n]: ")
            typed = (await self._answer()).lower()
            if typed in ("y", "yes", "n", "no"):
                return typed.startswith("y")

    async def _number(
        self, label: str, description: str, kind: type[int] | type[float], allowed: list[Any] | None = None
    ) -> int | float:
        shown = ""
        if allowed:
            step = f", in steps of {allowed[1] - allowed[0]:g}" if len(allowed) > 1 else ""
            shown = f" ({allowed[0]} to {allowed[-1]}{step})"
        while True:
            self._say(f"{ASK}{label}{' — ' + description if description else ''}{shown}: ")
            typed = await self._answer()
            try:
                value = kind(typed)
            except ValueError:
                self._say(f"  '{typed}' is not a number; type one, like 0.7.\n")
                continue
            if allowed is None:
                return value
            closest = min(allowed, key=lambda option: abs(option - value))
            if abs(closest - value) < 1e-9:
                return closest  # type: ignore[no-any-return]
            self._say(f"  {typed} is not one of the values allowed; the nearest is {closest}.\n")

    async def _list(self, schema: dict[str, Any], root: dict[str, Any], label: str, description: str) -> list[Any]:
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
        bounds = f"{low} to {high}" if high is not None else f"at least {low}"
        while True:
            self._say(f"{ASK}{label}{' — ' + description if description else ''}\n  how many ({bounds})? ")
            typed = await self._answer()
            if typed.isdigit() and int(typed) >= low and (high is None or int(typed) <= int(high)):
                count = int(typed)
                break
        items = schema.get("items", {})
        return [await self._value(items, root, f"{label} {n}") for n in range(1, count + 1)]

    async def _text(self, label: str) -> str:
        self._say(f"{ASK}{label}:\n")
        lines: list[str] = []
        while True:
            line = await self._line()
            stripped = line.rstrip("\r\n")
            if stripped == OPEN_EDITOR and not lines:
                return await asyncio.to_thread(edit_text, "")
            if stripped == OPEN_FORM and not lines and self._form is not None:
                raise _FormWanted
            if not line or stripped == END_OF_TURN:
                return "".join(lines).rstrip("\r\n")
            lines.append(line)

    # --- reading ---

    async def _line(self) -> str:
        """One line with its newline, or '' at end of input."""
        if self._fd is None:
            return await asyncio.to_thread(self._input.readline)
        while not self._pending and not self._eof:
            chunk = await _read_ready(self._fd)
            if not chunk:
                self._eof = True
            else:
                self._pending.extend(chunk.splitlines(keepends=True))
        return self._pending.pop(0) if self._pending else ""


class _FormWanted(Exception):
    """The person asked for the whole turn as one form."""


def _form_title(request: AgentRequest) -> str:
    where = f" ({request.protocol})" if request.protocol else ""
    return f"Your turn as {request.role or 'participant'}{where}"


def _terminal_fd(stream: TextIO) -> int | None:
    """The descriptor of a stream that is a real terminal, else None (a replaced or wrapped stdin)."""
    try:
        return stream.fileno() if stream.isatty() else None
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return None


async def _read_ready(fd: int) -> str:
    """What the terminal has for us once it is readable (a whole line in the terminal's line mode)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    return os.read(fd, 65536).decode("utf-8", "replace")


def edit_text(initial: str) -> str:
    """Open ``$VISUAL``/``$EDITOR`` (else ``vi``) on a Markdown file and return what the person saved."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.NamedTemporaryFile("w+", suffix=".md", encoding="utf-8", delete=False) as handle:
        handle.write(initial)
        path = handle.name
    try:
        subprocess.run([*shlex.split(editor), path], check=False)
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    finally:
        os.unlink(path)


def from_spec(rest: str) -> HumanAgent:
    """``human``."""
    if rest.strip():
        raise UnknownAgentSpec(f"human takes no argument, got 'human:{rest}': use human")
    return HumanAgent()

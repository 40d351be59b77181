"""A person at a terminal as a participant.

The request (and the JSON Schema, when the turn has one) is shown on the output stream; the turn
is every line typed until a line holding only ``.`` or end of input. Without an injected input
stream the agent needs stdin to be a terminal, and says so instead of hanging on a pipe.
``timeout_s`` is not enforced: people take the time they need.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TextIO

from moot.agents.base import (
    Agent,
    AgentBadReply,
    AgentReply,
    AgentRequest,
    AgentUnavailable,
    UnknownAgentSpec,
    prompt_as_text,
)

END_OF_TURN = "."


class HumanAgent(Agent):
    """Reads each turn from a person."""

    name = "human"
    interactive = True

    def __init__(self, input_stream: TextIO | None = None, output_stream: TextIO | None = None) -> None:
        if input_stream is None:
            if not sys.stdin.isatty():
                raise AgentUnavailable(
                    "the human agent needs a terminal on stdin: run moot in a terminal, "
                    "or use script:FILE to replay prepared replies"
                )
            input_stream = sys.stdin
        self._input = input_stream
        # Prompts go to stderr by default so that stdout stays clean for whatever moot prints there.
        self._output = output_stream or sys.stderr

    async def reply(self, request: AgentRequest) -> AgentReply:
        start = time.perf_counter()
        self._show(request)
        text = await asyncio.to_thread(self._read_turn)
        if not text.strip():
            raise AgentBadReply(f"no turn was typed: type the turn, then a line with only '{END_OF_TURN}'")
        return AgentReply(text=text, latency_s=time.perf_counter() - start, model="human")

    def _show(self, request: AgentRequest) -> None:
        who = request.role or "you"
        where = f" ({request.protocol})" if request.protocol else ""
        self._output.write(f"\n── turn for {who}{where} ──\n{prompt_as_text(request)}\n")
        self._output.write(f"── end the turn with a line holding only '{END_OF_TURN}' (or end of input) ──\n")
        self._output.flush()

    def _read_turn(self) -> str:
        lines: list[str] = []
        while True:
            line = self._input.readline()
            if not line or line.rstrip("\r\n") == END_OF_TURN:
                return "".join(lines).rstrip("\r\n")
            lines.append(line)


def from_spec(rest: str) -> HumanAgent:
    """``human``."""
    if rest.strip():
        raise UnknownAgentSpec(f"human takes no argument, got 'human:{rest}': use human")
    return HumanAgent()

"""Any program as a participant: the prompt goes to its stdin, its stdout is the turn.

``cmd:COMMAND`` is split like a shell would (``shlex``) but run without one. The whole request is
sent as text (system, prompt, and the schema as an instruction); the role, protocol and schema
are also in the environment as MOOT_ROLE, MOOT_PROTOCOL and MOOT_JSON_SCHEMA for programs that
want them. The command runs in its own process group so a timeout ends its children too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import time
from collections.abc import Sequence

from moot.agents._http import one_line
from moot.agents.base import Agent, AgentReply, AgentRequest, prompt_as_text
from moot.agents.tokens import typical_tokens
from moot.errors import AgentBadReply, AgentError, AgentTimeout, AgentUnavailable, UnknownAgentSpec

STDERR_TAIL_CHARS = 300


class CommandAgent(Agent):
    """A program that reads the prompt on stdin and writes the turn on stdout."""

    name = "cmd"

    def __init__(self, command: str | Sequence[str]) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise UnknownAgentSpec("cmd needs a command: use cmd:COMMAND, e.g. cmd:'claude -p'")
        if shutil.which(self.argv[0]) is None:
            raise AgentUnavailable(f"command '{self.argv[0]}' was not found: install it or fix the path in cmd:COMMAND")
        self.label = os.path.basename(self.argv[0])

    async def reply(self, request: AgentRequest) -> AgentReply:
        start = time.perf_counter()
        env = {**os.environ, "MOOT_ROLE": request.role, "MOOT_PROTOCOL": request.protocol}
        if request.json_schema is not None:
            env["MOOT_JSON_SCHEMA"] = json.dumps(request.json_schema)
        starting = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        )
        try:
            # Shielded: a Ctrl-C while the command is being started must still find the process to stop it, or the
            # command outlives the run and holds its pipes (and the exit) until it ends by itself.
            process = await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                _kill_group(await starting)
            raise
        except OSError as exc:
            raise AgentUnavailable(f"cannot start '{self.label}' ({exc.strerror}): check cmd:COMMAND") from exc
        try:
            stdout, stderr = await asyncio.wait_for(
                process.communicate(prompt_as_text(request).encode()), request.timeout_s
            )
        except asyncio.CancelledError:  # Ctrl-C: the command stops with the run, children included
            _kill_group(process)
            raise
        except TimeoutError:
            _kill_group(process)
            await process.wait()
            raise AgentTimeout(
                f"command '{self.label}' did not answer within {request.timeout_s:g} s: raise timeout_s or check it"
            ) from None
        if process.returncode != 0:
            tail = one_line(stderr.decode(errors="replace")[-STDERR_TAIL_CHARS:], STDERR_TAIL_CHARS)
            said = f" (stderr: {tail})" if tail else ""
            raise AgentError(
                f"command '{self.label}' exited with code {process.returncode}{said}: fix the command or its input"
            )
        text = stdout.decode(errors="replace").strip()
        if not text:
            raise AgentBadReply(f"command '{self.label}' printed nothing: make it write the turn to stdout")
        # A command reports no usage; one given a price is charged for its tokens as moot counts them.
        counted = self.price is not None
        return AgentReply(
            text=text,
            prompt_tokens=typical_tokens(prompt_as_text(request)) if counted else 0,
            completion_tokens=typical_tokens(text) if counted else 0,
            latency_s=time.perf_counter() - start,
            model=f"cmd:{self.label}",
        )


def _kill_group(process: asyncio.subprocess.Process) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # Windows has no process groups here
            process.kill()
    except ProcessLookupError:
        pass  # already gone


def from_spec(rest: str) -> CommandAgent:
    """``cmd:COMMAND``."""
    return CommandAgent(rest)

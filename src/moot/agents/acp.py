"""A coding agent as a participant, over the Agent Client Protocol: ``acp:COMMAND``.

moot is the ACP client (the editor's side) through the official ``agent-client-protocol`` SDK:

- The command (split like a shell would, run without one) is started once, in the project
  directory, and kept for the whole debate. Each role gets its own session on it, so an agent that
  speaks for two roles keeps two separate conversations; the system text goes in a session's first
  prompt only.
- Permission requests are answered read-only: tools of kind read, search, think and fetch are
  allowed once; edits, deletes, moves, commands and anything unnamed are rejected, unless writes
  are allowed (``moot run --allow-writes``, i.e. ``MOOT_ACP_ALLOW_WRITES=1``). The agent may read
  text files inside the project; it may write them only when writes are allowed. No terminal is
  offered.
- The agent's streamed updates (tool calls, plans) are shown as progress; its message chunks are
  the reply text, which the engine reads and repairs like any other agent's.
- At the turn's deadline moot sends ``session/cancel`` and gives up the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, cast

from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallStart,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from moot import __version__
from moot.agents._http import one_line
from moot.agents.acp_catalog import ALLOW_WRITES_ENV
from moot.agents.base import Agent, AgentReply, AgentRequest, prompt_as_text
from moot.errors import AgentBadReply, AgentError, AgentTimeout, AgentUnavailable, UnknownAgentSpec

# Tool kinds that only look: allowed without --allow-writes. Every other kind may change something.
READ_ONLY_KINDS = frozenset({"read", "search", "think", "fetch"})
STDERR_TAIL_CHARS = 300
CANCEL_GRACE_S = 2.0  # how long a cancelled prompt may take to answer before moot stops waiting

Progress = Callable[[str, str], None]  # (role, what the agent is doing)


def writes_allowed_by_env() -> bool:
    return os.environ.get(ALLOW_WRITES_ENV, "").strip().lower() in {"1", "true", "yes"}


def show_on_stderr(role: str, what: str) -> None:
    """The default progress: one line per update on a terminal, nothing when stderr is redirected."""
    if sys.stderr.isatty():
        print(f"  {role or 'agent'} · {what}", file=sys.stderr, flush=True)


class _Client:
    """moot's side of the connection: permissions, files, and the updates of the prompt under way."""

    def __init__(self, project: Path, allow_writes: bool, progress: Progress) -> None:
        self.project = project
        self.allow_writes = allow_writes
        self.progress = progress
        self.roles: dict[str, str] = {}  # session id -> role
        self.chunks: dict[str, list[str]] = {}  # session id -> message text of the prompt under way

    def _inside(self, path: str) -> Path:
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(self.project):
            raise RequestError.invalid_params({"path": path, "reason": f"outside the project {self.project}"})
        return resolved

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        allow = self.allow_writes or tool_call.kind in READ_ONLY_KINDS
        wanted = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
        title = tool_call.title or tool_call.kind or "a tool"
        if not allow:
            self.progress(self.roles.get(session_id, ""), f"refused {title} (read-only; --allow-writes permits it)")
        for kind in wanted:
            for option in options:
                if option.kind == kind:
                    return RequestPermissionResponse(
                        outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
                    )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        role = self.roles.get(session_id, "")
        if isinstance(update, AgentMessageChunk):
            if getattr(update.content, "type", None) == "text" and session_id in self.chunks:
                self.chunks[session_id].append(update.content.text)
        elif isinstance(update, ToolCallStart):
            self.progress(role, update.title)
        elif isinstance(update, AgentPlanUpdate):
            self.progress(role, f"plan: {len(update.entries)} step(s)")

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        target = self._inside(path)
        try:
            lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
        except (OSError, UnicodeDecodeError) as exc:
            raise RequestError.resource_not_found(path) from exc
        start = max((line or 1) - 1, 0)
        end = start + limit if limit is not None else None
        return ReadTextFileResponse(content="".join(lines[start:end]))

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        if not self.allow_writes:
            self.progress(self.roles.get(session_id, ""), f"refused writing {path} (read-only)")
            raise RequestError.invalid_params({"path": path, "reason": "moot runs read-only; --allow-writes"})
        target = self._inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return WriteTextFileResponse()


class AcpAgent(Agent):
    """A coding agent spoken to over ACP: one process, one session per role."""

    name = "acp"

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        project: Path | None = None,
        allow_writes: bool | None = None,
        progress: Progress = show_on_stderr,
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise UnknownAgentSpec("acp needs a command: use acp:COMMAND, e.g. acp:claude-code-acp")
        if shutil.which(self.argv[0]) is None:
            raise AgentUnavailable(
                f"command '{self.argv[0]}' was not found: install the ACP agent or fix the path in acp:COMMAND"
            )
        self.label = os.path.basename(self.argv[0])
        self.project = (project or Path.cwd()).resolve()
        allow = writes_allowed_by_env() if allow_writes is None else allow_writes
        self.client = _Client(self.project, allow, progress)
        self.model = f"acp:{self.label}"
        self.sessions: dict[str, str] = {}  # role -> session id
        self._stack: contextlib.AsyncExitStack | None = None
        self._conn: Any = None
        self._process: asyncio.subprocess.Process | None = None
        self._stderr: IO[bytes] | None = None
        self._lock = asyncio.Lock()
        self._prompting: str | None = None  # the session whose prompt is under way, to cancel at the deadline

    async def _connect(self) -> None:
        if self._conn is not None:
            return
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; closed in aclose
        stack = contextlib.AsyncExitStack()
        try:
            self._conn, self._process = await stack.enter_async_context(
                spawn_agent_process(
                    cast(Client, self.client),
                    self.argv[0],
                    *self.argv[1:],
                    env=dict(os.environ),  # the agent's own login and keys live in the environment
                    cwd=self.project,
                    transport_kwargs={"stderr": self._stderr.fileno()},
                )
            )
            self._stack = stack
            capabilities = ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=self.client.allow_writes),
                terminal=False,
            )
            started = await self._conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=capabilities,
                client_info=Implementation(name="moot", version=__version__),
            )
        except Exception as exc:
            await self._close_after_failure(stack)
            raise AgentUnavailable(
                f"'{self.label}' did not start an ACP connection ({self._why(exc)}): check that it speaks ACP on stdio"
            ) from exc
        if started.agent_info is not None:
            self.model = f"acp:{started.agent_info.name}"

    async def _close_after_failure(self, stack: contextlib.AsyncExitStack) -> None:
        self._conn = None
        self._stack = None
        with contextlib.suppress(Exception):
            await stack.aclose()

    def _why(self, exc: BaseException) -> str:
        """The agent's own last words on stderr, else the error."""
        tail = ""
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.seek(0)
                tail = one_line(self._stderr.read().decode(errors="replace")[-STDERR_TAIL_CHARS:], STDERR_TAIL_CHARS)
        return f"stderr: {tail}" if tail else (str(exc) or type(exc).__name__)

    async def _session(self, role: str) -> tuple[str, bool]:
        """The role's session, opened on first use; True when it is new."""
        if role in self.sessions:
            return self.sessions[role], False
        try:
            opened = await self._conn.new_session(cwd=str(self.project), mcp_servers=[])
        except Exception as exc:
            raise AgentError(f"'{self.label}' refused a new session ({self._why(exc)}): check its login") from exc
        self.sessions[role] = opened.session_id
        self.client.roles[opened.session_id] = role
        return opened.session_id, True

    async def reply(self, request: AgentRequest) -> AgentReply:
        async with self._lock:  # one prompt at a time on the connection keeps each reply's chunks apart
            # The engine gives up at timeout_s too: stop a little earlier, so the cancel is sent and said.
            deadline = request.timeout_s - min(CANCEL_GRACE_S, request.timeout_s / 4)
            self._prompting = None
            try:
                return await asyncio.wait_for(self._turn(request), deadline)
            except (TimeoutError, asyncio.CancelledError) as exc:
                if self._prompting is not None:
                    await asyncio.shield(self._cancel(self._prompting))
                if isinstance(exc, asyncio.CancelledError):
                    raise
                raise AgentTimeout(
                    f"'{self.label}' did not answer within {request.timeout_s:g} s and was cancelled: "
                    "raise --turn-timeout or check the agent"
                ) from None

    async def _turn(self, request: AgentRequest) -> AgentReply:
        start = time.perf_counter()
        await self._connect()
        session_id, new = await self._session(request.role)
        text = prompt_as_text(request if new else request.model_copy(update={"system": None}))
        self.client.chunks[session_id] = []
        self._prompting = session_id
        try:
            answered = await self._conn.prompt(session_id=session_id, prompt=[text_block(text)])
        except RequestError as exc:
            said = f"{exc}: {one_line(str(exc.data), STDERR_TAIL_CHARS)}" if exc.data else str(exc)
            raise AgentError(f"'{self.label}' failed the prompt ({said}): check the agent's login and output") from exc
        except Exception as exc:  # the process died or the connection broke
            raise AgentUnavailable(f"'{self.label}' stopped answering ({self._why(exc)}): check the agent") from exc
        finally:
            chunks = self.client.chunks.pop(session_id, [])
        self._prompting = None
        reply_text = "".join(chunks).strip()
        if answered.stop_reason == "refusal":
            raise AgentBadReply(f"'{self.label}' refused to answer this turn: rephrase the topic or use another agent")
        if not reply_text:
            raise AgentBadReply(
                f"'{self.label}' ended its turn ({answered.stop_reason}) without a message: check the agent"
            )
        usage = answered.usage
        return AgentReply(
            text=reply_text,
            prompt_tokens=usage.input_tokens if usage is not None else 0,
            completion_tokens=usage.output_tokens if usage is not None else 0,
            latency_s=time.perf_counter() - start,
            model=self.model,
            finish_reason=answered.stop_reason,
        )

    async def _cancel(self, session_id: str) -> None:
        """Tell the agent to stop the prompt; a hung agent is not waited for beyond a short grace."""
        self.client.progress(self.client.roles.get(session_id, ""), "deadline reached: cancelling the prompt")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._conn.cancel(session_id=session_id), CANCEL_GRACE_S)

    async def aclose(self) -> None:
        """End the agent process: stdin closed first, then terminate and kill if it lingers."""
        stack, self._stack, self._conn = self._stack, None, None
        if stack is not None:
            with contextlib.suppress(Exception):
                await stack.aclose()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def from_spec(rest: str) -> AcpAgent:
    """``acp:COMMAND``."""
    return AcpAgent(rest)

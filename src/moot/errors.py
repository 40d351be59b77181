"""moot's exception tree: every error moot raises on purpose is defined here and derives from MootError.

MootError
├── UserError                     bad input a user can fix; shown as one sentence, exit code 2
│   ├── ConfigError               moot.toml / [tool.moot] is wrong
│   ├── RecordExists              a new debate's record is already there (``--force`` replaces it)
│   ├── DiskFault                 a write failed for a full disk or a read-only file system
│   ├── PathRefused               a path outside the work root (the rule is moot.paths)
│   ├── RunnerBusy                a start refused: the server already runs as many debates as moot.toml allows
│   ├── LedgerError               the ledger refused; the caller can act on it
│   │   ├── LeaseError            a write that needs the lease was refused (token, fencing number, expiry)
│   │   ├── SeatError             a seat was rejoined, claimed or written to without its participant secret
│   │   ├── NotFoundError         unknown debate or participant
│   │   ├── DebateFullError       a third participant tried to join a duel
│   │   ├── DebateClosedError     the debate already has its outcome
│   │   ├── ConflictError         a different value for something already accepted (turn digest, outcome)
│   │   │   └── SourceMismatchError   a join's copy of the source differs from the debate's
│   │   └── InvalidInputError     a malformed argument (event type, event data, ttl, outcome …)
│   └── ToolError                 an agent tool refused: message, kind, exit_code, rules (Violations), detail
│       ├── Refused               exit 1: a rule, the lease or the debate's state refuses the request
│       ├── BadInput              exit 2: a malformed argument, an unknown id, an unsafe name
│       └── Unavailable           exit 3: the ledger or the work root's files cannot be used now; retry later
├── LedgerUnavailableError        the ledger cannot be opened, is locked too long, or is newer than this moot
├── PluginError                   a protocol plugin is malformed or one of its parts cannot be imported
├── ProtocolViolationError        a turn broke the protocol's rules: its Violations
├── RecordChangedError            the record changed under a writer
├── AgentError                    a participant could not produce a usable reply
│   ├── AgentUnavailable          it cannot be reached or set up: unreachable server, missing key or model
│   ├── AgentTimeout              no reply within the request's timeout
│   ├── AgentBadReply             a reply arrived but cannot be used
│   ├── AgentContextExceeded      the server refused the prompt as longer than the model's context
│   ├── AgentNotAllowed           a spec asks for what the server door's operator did not allow
│   └── UnknownAgentSpec          an agent spec names no known backend or is malformed (also a ValueError)
├── ChatError                     a refusal of the OpenAI-compatible API, in OpenAI's error shape
└── TaskUnfinished                an eval task was not finished for a reason outside the strategy

A :class:`Violation` is one broken rule, named by its id (rules are declared in RuleBooks, moot.core.machine,
and listed by ``moot rules``); ProtocolViolationError and ToolError carry them. This module imports nothing of
moot, so that every layer can raise these.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Violation(BaseModel):
    """One broken rule, located as precisely as the caller knows (turn, file, line)."""

    model_config = ConfigDict(frozen=True)

    rule: str
    message: str
    severity: Severity = Severity.ERROR
    turn: int | None = None
    file: str | None = None
    line: int | None = None

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def at(self, *, file: str | None = None, line: int | None = None, turn: int | None = None) -> Violation:
        """A copy with the location filled in where it was still unknown (itself when nothing is new: a check
        locates each of thousands of violations several times)."""
        update: dict[str, str | int] = {}
        if self.file is None and file is not None:
            update["file"] = file
        if self.line is None and line is not None:
            update["line"] = line
        if self.turn is None and turn is not None:
            update["turn"] = turn
        return self.model_copy(update=update) if update else self

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line) if p is not None)
        turn = f" (turn {self.turn})" if self.turn is not None else ""
        prefix = f"{where}: " if where else ""
        return f"{prefix}{self.severity.value} {self.rule}{turn}: {self.message}"


class MootError(Exception):
    """Base of moot's own errors."""


class UserError(MootError):
    """Something the user can fix; the message is one sentence that names the fix."""


class ConfigError(UserError):
    """The configuration is invalid."""


class RecordExists(UserError):
    """A new debate would overwrite an existing record; ``path`` is that record."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


# What the user sees for each errno that a person, not moot, must fix: (the problem, the fix).
_DISK_PROBLEMS = {
    errno.ENOSPC: ("disk full", "free space on that disk"),
    errno.EDQUOT: ("disk full (your disk quota is used up)", "free space or raise the quota"),
    errno.EROFS: ("read-only file system", "make that file system writable"),
}


class DiskFault(UserError):
    """A write failed because the disk is full or the file system is read-only.

    ``kept`` says the file was left exactly as it was before the write (the write functions of
    moot.core.files restore it); ``then`` is what to do once the disk is fixed, which the caller that
    knows the record may make precise (``run `moot resume RECORD```).
    """

    def __init__(self, path: Path | str, code: int, *, kept: bool, then: str = "try again") -> None:
        problem, fix = _DISK_PROBLEMS[code]
        left = " and left it as it was" if kept else ""
        super().__init__(f"{problem}: moot could not write {path}{left}; {fix}, then {then}.")
        self.path, self.code, self.kept, self.then = path, code, kept, then

    @classmethod
    def of(cls, exc: BaseException, path: Path | str | None = None, *, kept: bool = False) -> DiskFault | None:
        """The fault ``exc`` is when it is a full disk or a read-only file system, else ``None``."""
        if isinstance(exc, DiskFault):
            return exc
        if not isinstance(exc, OSError) or exc.errno not in _DISK_PROBLEMS:
            return None
        where = path if path is not None else str(exc.filename) if exc.filename else "a file"
        return cls(where, exc.errno, kept=kept)

    def then_do(self, then: str) -> DiskFault:
        """The same fault, naming ``then`` as the step after the disk is fixed."""
        return DiskFault(self.path, self.code, kept=self.kept, then=then)


class PathRefused(UserError):
    """A named path that leaves the work root; ``link`` is the symbolic link it was refused at, if any."""

    def __init__(self, message: str, link: Path | None = None) -> None:
        super().__init__(message)
        self.link = link


class RunnerBusy(UserError):
    """A start refused because the server (or the client) already runs as many debates as moot.toml allows."""


class LedgerError(UserError):
    """A ledger refusal the caller can act on."""


class LeaseError(LedgerError):
    """A write that needs the lease was refused: wrong token, stale fencing number, or expired lease."""


class SeatError(LedgerError):
    """A participant's seat was rejoined, claimed or written to without the secret its join returned."""

    def __init__(self, message: str, *, debate_id: str, participant_id: str) -> None:
        super().__init__(message)
        self.debate_id = debate_id
        self.participant_id = participant_id


class NotFoundError(LedgerError):
    """The debate or participant does not exist."""


class DebateFullError(LedgerError):
    """The debate already has all its participants."""


class DebateClosedError(LedgerError):
    """The debate is closed; nothing more can be claimed or written."""


class ConflictError(LedgerError):
    """An accepted value (turn digest, outcome) would change."""


class SourceMismatchError(ConflictError):
    """A join's copy of the source document differs from the one the debate was created with."""

    def __init__(self, debate_id: str, digest: str) -> None:
        super().__init__(
            f"Debate {debate_id} was started on a different version of this source (SHA-256 {digest[:12]}…); "
            "use the same version of the source document."
        )
        self.debate_id = debate_id
        self.digest = digest


class InvalidInputError(LedgerError):
    """An argument is malformed."""


_MAX_MESSAGE = 600  # characters of a tool's refusal; the end, which names the fix, is always kept


def _bounded(message: str) -> str:
    """A message whose echoed input made it long, cut in the middle so that its fix (the end) stays."""
    if len(message) <= _MAX_MESSAGE:
        return message
    return message[: _MAX_MESSAGE // 2] + " … " + message[-_MAX_MESSAGE // 3 :]


class ToolError(UserError):
    """A refusal with everything a caller needs: one sentence, rule ids, an exit code and details.

    ``rule`` is the id of the rule the refusal names (one ``moot rules`` lists, an error); ``rules`` are
    violations found before it. The agent tools raise only these (moot.tools.errors).
    """

    kind: ClassVar[str] = "error"
    exit_code: ClassVar[int] = 1

    def __init__(
        self,
        message: str,
        *,
        rule: str | None = None,
        rules: Sequence[Violation] = (),
        detail: dict[str, Any] | None = None,
    ) -> None:
        message = _bounded(message)
        super().__init__(message)
        self.message = message
        found = list(rules)
        if rule is not None:
            found.insert(0, Violation(rule=rule, message=message, severity=Severity.ERROR))
        self.rules = found
        self.detail = dict(detail or {})

    def payload(self) -> dict[str, Any]:
        """What the CLI prints and the MCP server returns: ``ok: false`` and why."""
        return {
            "ok": False,
            "error": self.message,
            "kind": self.kind,
            "exit_code": self.exit_code,
            "rules": [violation.model_dump(mode="json") for violation in self.rules],
            **self.detail,
        }


class Refused(ToolError):
    kind = "refused"
    exit_code = 1


class BadInput(ToolError):
    kind = "bad_input"
    exit_code = 2


class Unavailable(ToolError):
    kind = "unavailable"
    exit_code = 3


class LedgerUnavailableError(MootError):
    """The store cannot be used: unreachable, locked for too long, or migrated by a newer moot."""


class PluginError(MootError):
    """A protocol plugin is malformed or one of its parts cannot be imported; the message names which."""


class ProtocolViolationError(MootError):
    """Raised by ``step`` when a candidate turn breaks at least one rule."""

    def __init__(self, violations: Sequence[Violation]) -> None:
        self.violations = list(violations)
        super().__init__("; ".join(str(v) for v in self.violations))


class RecordChangedError(MootError):
    """The record is not as its writer last left it: someone else wrote it. Nothing was appended."""


class AgentError(MootError):
    """A participant could not produce a usable reply; the message is one sentence naming the fix."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s  # what the server asked for (Retry-After), if anything
        self.attempts = 1


class AgentUnavailable(AgentError):
    """The participant cannot be reached or set up: unreachable server, missing key, missing model."""


class AgentTimeout(AgentError):
    """No reply within the request's ``timeout_s``."""


class AgentBadReply(AgentError):
    """A reply arrived but cannot be used."""


class AgentContextExceeded(AgentError):
    """The server refused the prompt as longer than the model's context of ``context_tokens``; the agent's
    ``Agent.bounds`` already know it, so a request built to them fits."""

    def __init__(self, message: str, *, context_tokens: int) -> None:
        super().__init__(message)
        self.context_tokens = context_tokens


class AgentNotAllowed(AgentError):
    """A spec asks for something the door's operator did not allow; the message names the flag that allows it."""


class UnknownAgentSpec(AgentError, ValueError):
    """The agent spec string names no known backend or is malformed."""


class ChatError(MootError):
    """A refusal in OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(self, status: int, message: str, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


class TaskUnfinished(MootError):
    """A task could not be finished for a reason outside the strategy (an infrastructure failure)."""

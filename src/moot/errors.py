"""moot's exception tree: every error moot raises on purpose derives from MootError.

MootError
├── UserError                     bad input a user can fix; shown as one sentence, exit code 2
│   ├── ConfigError               moot.toml / [tool.moot] is wrong
│   ├── RecordExists              a new debate's record is already there (``--force`` replaces it)
│   ├── DiskFault                 a write failed for a full disk or a read-only file system
│   ├── PathRefused               a path outside the work root (moot.paths)
│   ├── LedgerError               the ledger refused (moot.ledger.errors: leases, seats, conflicts, …)
│   └── ToolError                 an agent tool refused (moot.tools.errors: Refused, BadInput)
├── LedgerUnavailableError        the ledger's database cannot be reached (moot.ledger.errors)
├── PluginError                   a protocol plugin is malformed or one of its parts cannot be imported
├── ProtocolViolationError        a turn broke the protocol's rules: its Violations
├── RecordChangedError            the record changed under a writer
└── AgentError                    an agent failed to answer (moot.agents.base)

A :class:`Violation` is one broken rule, by its id (the rules themselves are in each protocol's RuleBook,
moot.core.machine); a refusal carries them. This module imports nothing of moot, so every layer can raise.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

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


class PluginError(MootError):
    """A protocol plugin is malformed or one of its parts cannot be imported; the message names which."""


class ProtocolViolationError(MootError):
    """Raised by ``step`` when a candidate turn breaks at least one rule."""

    def __init__(self, violations: Sequence[Violation]) -> None:
        self.violations = list(violations)
        super().__init__("; ".join(str(v) for v in self.violations))


class RecordChangedError(MootError):
    """The record is not as its writer last left it: someone else wrote it. Nothing was appended."""


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

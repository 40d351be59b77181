"""moot's exception tree.

MootError
├── UserError            bad input a user can fix; shown as one sentence, exit code 2
│   ├── ConfigError      moot.toml / [tool.moot] is wrong
│   └── RecordExists     a new debate's record is already there (``--force`` replaces it)
└── (protocol refusals are moot.core.machine.ProtocolViolationError, carrying rule ids)
"""

from __future__ import annotations

from pathlib import Path


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

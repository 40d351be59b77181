"""moot's exception tree.

MootError
├── UserError            bad input a user can fix; shown as one sentence, exit code 2
│   └── ConfigError      moot.toml / [tool.moot] is wrong
└── (protocol refusals are moot.protocols.base.ProtocolViolationError, carrying rule ids)
"""

from __future__ import annotations


class MootError(Exception):
    """Base of moot's own errors."""


class UserError(MootError):
    """Something the user can fix; the message is one sentence that names the fix."""


class ConfigError(UserError):
    """The configuration is invalid."""

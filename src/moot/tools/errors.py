"""How the agent tools say no: the rule ids they name, and the translation of what the layers below raise.

A refusal is a :class:`moot.errors.ToolError` (the tree is drawn in moot.errors): ``Refused`` (exit 1),
``BadInput`` (exit 2) or ``Unavailable`` (exit 3), with rule ids and a JSON-ready ``payload()``. Every tool
raises only these (the :func:`tool` decorator translates the ledger's errors and the protocols'
``ProtocolViolationError``), so the CLI and the MCP server report a refusal the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from moot.core.machine import Rule, RuleBook
from moot.errors import (
    BadInput,
    ConflictError,
    DebateClosedError,
    DebateFullError,
    DiskFault,
    InvalidInputError,
    LeaseError,
    LedgerUnavailableError,
    NotFoundError,
    ProtocolViolationError,
    Refused,
    SeatError,
    ToolError,
    Unavailable,
    Violation,
)

TOOL_RULES = RuleBook(
    [
        Rule(
            "TOOLS_LEASE", "A write needs the current lease: the token claim-lock printed, unexpired, not taken over."
        ),
        Rule("TOOLS_LOCK_HELD", "A lock another participant holds is not taken before it expires."),
        Rule("TOOLS_WAITING_FOR_PARTICIPANT", "A duel's lock is granted once its peer joined (or with --for-timeout)."),
        Rule("TOOLS_DEBATE_FULL", "A duel has two participants; a third is refused."),
        Rule("TOOLS_DEBATE_CLOSED", "Nothing is claimed or written once a debate is closed."),
        Rule("TOOLS_CONFLICT", "An accepted turn, outcome or record is never replaced."),
        Rule(
            "TOOLS_IDENTITY",
            "A participant writes only as itself: a turn's author is the participant that holds the lease.",
        ),
        Rule(
            "TOOLS_SEAT",
            "A seat is rejoined, claimed and written to only with the participant secret its join returned once.",
        ),
        Rule("TOOLS_TURN_FILE", "A turn file holds exactly one turn in the protocol's turn format."),
        Rule("TOOLS_UNRECORDED_TURNS", "At most one turn (a crash's) is in the record but not yet in the ledger."),
        Rule("TOOLS_SOURCE_MISMATCH", "Every host joins a debate with the same text of its source document."),
        Rule(
            "TOOLS_TURN_TEXT_MISSING",
            "A record is written from the ledger, which holds every accepted turn's text (an older moot's only on the "
            "host that wrote it).",
        ),
        Rule("TOOLS_PEER_PRESENT", "TIMEOUT is recorded only while fewer than two participants joined."),
        Rule(
            "TOOLS_NOT_YOUR_TURN", "Only the current speaker takes the floor; the moderator once the meeting concludes."
        ),
        Rule(
            "TOOLS_UNSAFE_NAME",
            "A name from outside never addresses a path outside the work root and reads back as written.",
        ),
        Rule("TOOLS_EVENT", "An event has a known type, a JSON object as data, and the fields its type needs."),
        Rule("TOOLS_BAD_INPUT", "Arguments are well-formed and name things that exist."),
        Rule("TOOLS_UNAVAILABLE", "The ledger is reachable and not locked for too long."),
    ]
)


_MAX_SHOWN = 60  # characters of one name or id from outside echoed in a message


def shown(text: str) -> str:
    """``text`` (a name, id or value from outside) cut for a message: never echoed in full when long."""
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def refused_by(violations: Iterable[Violation], *, detail: dict[str, Any] | None = None) -> Refused:
    """A refusal listing protocol violations; its sentence is the first error's."""
    found = list(violations)
    errors = [v for v in found if v.is_error] or found
    if not errors:
        return Refused("The request was refused; read the rules listed.", detail=detail)
    more = f" ({len(errors) - 1} more violation(s) listed)" if len(errors) > 1 else ""
    return Refused(f"{errors[0]}{more}", rules=found, detail=detail)


# The ledger's errors, in the order isinstance must test them (most specific first).
_LEDGER_ERRORS: tuple[tuple[type[Exception], type[ToolError], str], ...] = (
    (LeaseError, Refused, "TOOLS_LEASE"),
    (SeatError, Refused, "TOOLS_SEAT"),
    (DebateFullError, Refused, "TOOLS_DEBATE_FULL"),
    (DebateClosedError, Refused, "TOOLS_DEBATE_CLOSED"),
    (ConflictError, Refused, "TOOLS_CONFLICT"),
    (NotFoundError, BadInput, "TOOLS_BAD_INPUT"),
    (InvalidInputError, BadInput, "TOOLS_BAD_INPUT"),
    (LedgerUnavailableError, Unavailable, "TOOLS_UNAVAILABLE"),
)


def translate(exc: Exception) -> ToolError | None:
    """The tool error for an exception from the layers below, or ``None`` when it is a defect."""
    if isinstance(exc, ToolError):
        return exc
    if isinstance(exc, ProtocolViolationError):
        return refused_by(exc.violations)
    for kind, error, rule in _LEDGER_ERRORS:
        if isinstance(exc, kind):
            return error(str(exc), rule=rule)
    fault = DiskFault.of(exc)  # a full disk or a read-only file system: a person frees space, then the call is retried
    if fault is not None:
        return Unavailable(str(fault), rule="TOOLS_UNAVAILABLE")
    if isinstance(exc, FileExistsError):  # the record writers refuse links and existing records this way
        message = str(exc)
        rule = "FILE_SYMLINK" if "symbolic link" in message else "TOOLS_CONFLICT"
        return Refused(message[:1].upper() + message[1:], rule=rule)
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return Unavailable(
            f"moot could not read or write{where} ({exc.strerror or type(exc).__name__}); check the work root's "
            "files, permissions and free space, then retry.",
            rule="TOOLS_UNAVAILABLE",
        )
    return None


@contextmanager
def translated() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        error = translate(exc)
        if error is None or error is exc:
            raise
        raise error from exc


P = ParamSpec("P")
R = TypeVar("R")


def tool(function: Callable[P, R]) -> Callable[P, R]:
    """Mark a public agent tool: whatever goes wrong below it leaves as a :class:`ToolError`."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with translated():
            return function(*args, **kwargs)

    return wrapper

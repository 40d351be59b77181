"""Waiting for one's turn without polling by hand: the loop behind an agent tool's ``wait``.

A protocol's ``wait`` tool says what its status is and whether that status is the caller's turn or the
debate's end (:data:`Verdict`); :func:`wait_for` asks again only when the debate's row in the ledger changed
(turns, lease, participants, state: one small query every :data:`POLL_SECONDS`, on every host and every ledger
backend), and gives up after the caller's timeout, which is capped at :data:`MAX_WAIT_SECONDS`. It sleeps in the
calling thread: the command line has nothing else to do, and the MCP server runs every agent tool on a worker
thread, so one session's wait never holds another's call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Annotated, Literal, TypeVar

from pydantic import Field

from moot.errors import Unavailable
from moot.tools.workspace import Workspace

# The longest one call waits; an agent waiting longer calls again. It is the MCP server's bound on a waiting
# call (debate_status's wait_seconds) as well, so a client's request timeout is sized once for both.
MAX_WAIT_SECONDS = 600.0
DEFAULT_WAIT_SECONDS = 300.0
POLL_SECONDS = 0.5
# Waits one process holds at once. Each holds a thread of the MCP server's worker pool (40 by default) for up to
# MAX_WAIT_SECONDS, so an unbounded number would let a few clients starve every other call.
MAX_WAITING = 16
_waiting = threading.BoundedSemaphore(MAX_WAITING)

Waited = Literal["your_turn", "ended", "timed_out"]
"""Why a wait returned: the caller may write now, the debate ended (or reached its outcome), or the time ran out."""

WaitTimeout = Annotated[
    float,
    Field(
        description=f"Seconds to wait at most (default {DEFAULT_WAIT_SECONDS:g}, capped at {MAX_WAIT_SECONDS:g}; "
        "0 answers at once). Answers as soon as it is your turn or the debate ended.",
        ge=0,
        le=MAX_WAIT_SECONDS,
    ),
]

S = TypeVar("S")
# The status now and why to stop waiting (None: keep waiting).
Verdict = tuple[Waited | None, S]


def ledger_mark(ws: Workspace, debate_id: str) -> Hashable:
    """What changes in the ledger whenever a wait's answer may: the state, participants, turns and lease."""
    found = ws.ledger.status(debate_id)
    lease = found.lease
    held = None if lease is None else (lease.holder_participant_id, lease.fencing_token, lease.expired)
    return (found.debate.status, found.debate.outcome, found.participant_count, found.turn_count, held)


def wait_for(
    check: Callable[[], Verdict[S]],
    mark: Callable[[], Hashable],
    timeout: float,
    *,
    poll: float = POLL_SECONDS,
) -> tuple[Waited, S, float]:
    """Call ``check`` now and again whenever ``mark`` changes, until it names a reason or ``timeout`` passes.

    Returns the reason (``timed_out`` when the time ran out), the last status and the seconds waited. A lease
    that expires changes ``mark`` too, so a peer that crashed holding the lock does not hold the wait.
    """
    if not _waiting.acquire(blocking=False):
        raise Unavailable(
            f"this moot process already holds {MAX_WAITING} waits, its limit; call status instead, or wait again "
            "in a few seconds.",
            rule="TOOLS_UNAVAILABLE",
            detail={"retry_after_seconds": POLL_SECONDS * 10},
        )
    try:
        return _waited(check, mark, timeout, poll)
    finally:
        _waiting.release()


def _waited(
    check: Callable[[], Verdict[S]], mark: Callable[[], Hashable], timeout: float, poll: float
) -> tuple[Waited, S, float]:
    started = time.monotonic()
    deadline = started + min(max(timeout, 0.0), MAX_WAIT_SECONDS)
    seen = mark()
    reason, status = check()
    while reason is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timed_out", status, round(time.monotonic() - started, 3)
        time.sleep(min(poll, left))
        now = mark()
        if now != seen:
            seen = now
            reason, status = check()
    return reason, status, round(time.monotonic() - started, 3)


__all__ = [
    "DEFAULT_WAIT_SECONDS",
    "MAX_WAITING",
    "MAX_WAIT_SECONDS",
    "POLL_SECONDS",
    "WaitTimeout",
    "Waited",
    "ledger_mark",
    "wait_for",
]

"""Seats with secrets: who may act as a participant.

A participant id is public (``status`` lists it), so the join that seats a participant returns a secret
once, and rejoining under that name, claiming, and every write under the lease need it (the ledger checks
it; see :mod:`moot.ledger.base`). The tools take the secret as ``participant_secret``; when none is given
they ask the workspace's :class:`Keyring`, which keeps the secrets of the seats this caller joined:

- the CLI's is the OS user's private state (:class:`UserKeyring`: one file of mode 0600 per seat in
  ``$XDG_STATE_HOME/moot/seats/``, a directory of mode 0700), so the seed's later commands, which pass only
  the participant id, work for the user that joined and for no other;
- the MCP server's is the connection's (:mod:`moot.mcp.identity`), so a second session under the same name
  is refused unless it presents the secret.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Protocol

from moot.core.user_state import read_private, write_private
from moot.errors import Refused, SeatError
from moot.ledger import JoinResult
from moot.tools.errors import shown

SEATS_DIR = "seats"
SECRET_ENV = "MOOT_PARTICIPANT_SECRET"
_KEPT = "kept for the OS user or MCP connection that joined"
_PASS = f"elsewhere pass --participant-secret, ${SECRET_ENV} or participant_secret over MCP"


class Keyring(Protocol):
    """Where a caller's participant secrets are kept between its commands."""

    def get(self, debate_id: str, participant_id: str) -> str | None: ...

    def put(self, debate_id: str, participant_id: str, secret: str) -> None: ...


class UserKeyring:
    """This OS user's secrets, one private file per seat (best effort: a write that fails leaves the secret to
    be passed explicitly, as the join's output shows it)."""

    @staticmethod
    def _name(debate_id: str, participant_id: str) -> str:
        # ids come from the command line: hashed, they never address a path of their own
        return hashlib.sha256(f"{debate_id}\0{participant_id}".encode()).hexdigest()

    def get(self, debate_id: str, participant_id: str) -> str | None:
        return read_private(SEATS_DIR, self._name(debate_id, participant_id))

    def put(self, debate_id: str, participant_id: str, secret: str) -> None:
        write_private(SEATS_DIR, self._name(debate_id, participant_id), secret)


def secret_for(keyring: Keyring | None, debate_id: str, participant_id: str, given: str | None) -> str:
    """The secret to act as ``participant_id`` with: ``given``, else the keyring's; refused when neither has one."""
    secret = given or (keyring.get(debate_id, participant_id) if keyring is not None else None)
    if not secret:
        raise Refused(
            f"Acting as participant {shown(participant_id)!r} of debate {debate_id} needs the participant secret "
            f"its join returned ({_KEPT}); {_PASS}.",
            rule="TOOLS_SEAT",
        )
    return secret


def _taken(taken: SeatError) -> Refused:
    return Refused(
        f"That name already holds a seat in debate {taken.debate_id}; rejoin with the participant secret its first "
        f"join returned ({_KEPT}; {_PASS}), or join under another name.",
        rule="TOOLS_SEAT",
    )


def seated(keyring: Keyring | None, join: Callable[[str | None], JoinResult], given: str | None) -> JoinResult:
    """Join with ``given`` (else, when the name holds a seat, with the keyring's secret for it) and keep the
    secret that seated the caller; a seat held by someone else is refused with the fix."""
    try:
        joined = join(given)
    except SeatError as taken:
        kept = keyring.get(taken.debate_id, taken.participant_id) if keyring is not None and not given else None
        if kept is None:
            raise _taken(taken) from None
        try:
            joined = join(kept)
        except SeatError:
            raise _taken(taken) from None
    secret = joined.secret or given
    if keyring is not None and secret:
        keyring.put(joined.debate.id, joined.participant.id, secret)
    return joined

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

A protocol whose tools keep no seats in the ledger (a plugin's, whose :class:`moot.plugin.Seat` does not say
``own_secrets``) has its seats kept by moot instead (:func:`kept_seat`): the first caller to take a role in a record
(an OS user on the command line, a connection over MCP) holds it, by a secret its keyring keeps, and the work root
holds only the secret's digest (``.moot/seats/``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from moot.core.user_state import read_private, write_private
from moot.errors import Refused, SeatError
from moot.ledger import JoinResult
from moot.ledger.sql import new_secret, token_sha256
from moot.tools.declare import SECRET_ENV, SECRET_FIELD
from moot.tools.errors import shown

SEATS_DIR = "seats"
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


# --- the seats moot keeps for a protocol whose tools keep none --------------------------------------

RECORD_SEATS_DIR = Path(".moot") / "seats"
_DIGEST_BYTES = 64  # a sha256 in hex: all a seat file holds


def _seat_file(root: Path, record: str, role: str) -> Path:
    # record keys and roles come from the caller: hashed, they never address a path of their own
    return root / RECORD_SEATS_DIR / token_sha256(record) / token_sha256(role)


def _held(path: Path) -> bytes | None:
    """The digest a seat file holds; None when no one took the seat, and b"" (which no secret matches) when it is
    not a small regular file moot can read: a seat moot cannot read stays closed."""
    try:  # O_NONBLOCK: a FIFO planted there must not hang the call
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return b""
        return os.read(handle, _DIGEST_BYTES + 2).strip()
    except OSError:
        return b""
    finally:
        os.close(handle)


def _matches(secret: str | None, held: bytes) -> bool:
    return bool(secret) and bool(held) and hmac.compare_digest(token_sha256(secret or "").encode("ascii"), held)


def _create(path: Path, text: str) -> None:
    """Write ``path`` whole, or not at all: written to a file of its own, then linked into place, which fails
    (``FileExistsError``) when someone took the seat first. A crash leaves the seat free, never half-taken."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        try:
            os.write(handle, text.encode("ascii"))
            os.fsync(handle)
        finally:
            os.close(handle)
        os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def kept_seat(
    root: Path, seat: tuple[str, str, str], *, takes: bool, claim: str, keyring: Keyring, given: str | None
) -> str | None:
    """Let this caller act in ``seat`` (record key, role, how messages name the record), kept in ``root``: a call
    that ``takes`` it takes a free seat, and any call needs the secret of a taken one (``given`` or the keyring's;
    a ``given`` one that opens it is kept from then on). Returns the secret when this call took the seat (the
    keyring keeps it; :func:`release_seat` frees it again if the call is then refused); refused otherwise."""
    record, role, where = seat
    path = _seat_file(root, record, role)
    held = _held(path)
    if held is None and not takes:
        raise Refused(
            f"{shown(role)!r} in {where} is not a seat you took; call {claim} as yourself first.", rule="TOOLS_SEAT"
        )
    if held is None:
        new = new_secret()
        try:
            _create(path, f"{token_sha256(new)}\n")  # the ledger's digest of a secret, as it keeps a seat's
        except FileExistsError:  # taken in between: held as the other caller left it
            held = _held(path) or b""
        except OSError as exc:
            message = f"moot cannot keep your seat in {root / RECORD_SEATS_DIR} ({exc.strerror}); make it writable."
            raise Refused(message, rule="TOOLS_SEAT") from None
        else:
            keyring.put(record, role, new)
            return new
    if _matches(keyring.get(record, role), held):
        return None
    if _matches(given, held):
        assert given is not None
        keyring.put(record, role, given)  # this caller's seat from now on, as a rejoin with the secret is
        return None
    raise Refused(
        f"{shown(role)!r} in {where} is a seat someone else took; act in a seat of your own, or give that seat's "
        f"secret, which its first call returned once (${SECRET_ENV} on the command line, participant_secret over "
        "MCP).",
        rule="TOOLS_SEAT",
    )


def release_seat(root: Path, seat: tuple[str, str, str], secret: str) -> None:
    """Free a seat that a call took with ``secret`` and that the call's tool then refused: a refused call leaves no
    seat behind, so no one can hold roles by calls that do nothing. Left alone once it holds another secret."""
    record, role, _ = seat
    path = _seat_file(root, record, role)
    if _matches(secret, _held(path) or b""):
        path.unlink(missing_ok=True)


def settle_taken(root: Path, taken: list[tuple[tuple[str, str, str], str]], payload: dict[str, Any], code: int) -> None:
    """After a call that took a seat (``taken``: the seat and its secret): its answer gives the secret once, or,
    refused, the seat is free again (:func:`release_seat`)."""
    for seat, secret in taken:
        if code:
            release_seat(root, seat, secret)
        else:
            payload[SECRET_FIELD] = secret

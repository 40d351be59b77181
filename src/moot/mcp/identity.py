"""Who may act as which participant: an MCP connection speaks only for the participant it joined as.

Participant ids are not secrets (``status`` lists them), so the server binds a seat to the connection that
took it; each tool's declaration says whether it takes a seat or requires one (:class:`moot.plugin.Seat`).
A duel's ``join`` binds the participant id it returns, and ``claim_lock``, ``refresh_lock``, ``release_lock``
and ``append_turn`` refuse any other id (``TOOLS_IDENTITY``). One connection is one participant: its first
join fixes its name, and a later join under another name is refused before the ledger sees it.

Each seat also has a secret (:mod:`moot.tools.seats`), which the server keeps for the connection that joined
(its :meth:`Identities.keyring`) and passes to the ledger on that connection's every claim and write, so a
tool-following agent never handles it. Another connection joining under a taken name is refused by the
ledger unless it presents the secret (``participant_secret``, which the first join returned once): an agent
whose host restarted rejoins that way.

The critique's and the roundtable's tools bind a seat instead: the role a connection claimed in one record
(``critique_claim``, ``roundtable_start`` as the moderator, ``roundtable_take_floor``). The record is known
before the call, so one connection holds one role per record, and acts only in the roles it claimed.

A connection is the stdio process (one client per ``moot mcp`` process) or one streamable-HTTP session
(its ``Mcp-Session-Id``, issued by the server). A sessionless HTTP request cannot be told apart from any
other, so it may read but not act.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from moot.errors import Refused
from moot.tools.seats import Keyring

STDIO = "stdio"
SESSION_HEADER = "mcp-session-id"


def connection_key(headers: Mapping[str, str] | None) -> str | None:
    """The connection a request came on: ``stdio`` without HTTP headers, else the HTTP session id."""
    if headers is None:
        return STDIO
    session = headers.get(SESSION_HEADER)
    return f"http:{session}" if session else None


@dataclass
class Identities:
    """The participants each connection joined as, guarded for the server's worker threads."""

    _names: dict[str, str] = field(default_factory=dict)
    _seats: dict[str, dict[str, str]] = field(default_factory=dict)  # connection -> record -> role
    _secrets: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)  # -> (debate, participant) -> secret
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _joins: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def joining(self, connection: str | None, participant_name: str) -> Iterator[Callable[[str, str], None]]:
        """Check the name before the ledger sees the join, then give the binder for its result.

        Joins are serialised, so that two joins on one connection cannot both pass the name check.
        """
        key = _required(connection, "join a duel")
        name = participant_name.strip()
        with self._joins:
            with self._lock:
                known = self._names.get(key)
            if known is not None and known != name:
                raise Refused(
                    f"This MCP connection joined as {known!r}, and one connection speaks for one participant; "
                    f"join as {known!r} or connect a separate client for {name!r}.",
                    rule="TOOLS_IDENTITY",
                )

            def bind(record: str, participant_id: str) -> None:
                with self._lock:
                    self._names.setdefault(key, name)
                    self._seats.setdefault(key, {})[record] = participant_id

            yield bind

    @contextmanager
    def seating(self, connection: str | None, record: str, role: str, *, where: str) -> Iterator[None]:
        """Let ``connection`` take ``role`` in ``record`` (``where`` names it for people) if it holds no other
        role there; the seat is bound once the body succeeds."""
        key = _required(connection, f"take a role in {where}")
        with self._joins:
            with self._lock:
                held = self._seats.get(key, {}).get(record)
            if held is not None and held != role:
                raise Refused(
                    f"This MCP connection is {held!r} in {where}, and one connection speaks for one role; act as "
                    f"{held!r} or connect a separate client for {role!r}.",
                    rule="TOOLS_IDENTITY",
                )
            yield
            with self._lock:
                self._seats.setdefault(key, {})[record] = role

    def require_seat(self, connection: str | None, record: str, role: str, *, where: str, claim: str) -> None:
        """Refuse to act as ``role`` in ``record`` unless this connection took that seat (with ``claim``)."""
        key = _required(connection, f"act in {where}")
        with self._lock:
            held = self._seats.get(key, {}).get(record)
        if held != role:
            raise Refused(
                f"{role!r} in {where} is not a seat this MCP connection took; call {claim} as yourself first and "
                "act in the seat it gives you.",
                rule="TOOLS_IDENTITY",
            )

    def keyring(self, connection: str | None) -> Keyring | None:
        """The secrets of the seats ``connection`` took (``None`` for a sessionless request, which cannot act)."""
        return None if connection is None else _ConnectionKeyring(self, connection)


@dataclass(frozen=True)
class _ConnectionKeyring:
    """One connection's view of the secrets the server keeps."""

    identities: Identities
    connection: str

    def get(self, debate_id: str, participant_id: str) -> str | None:
        with self.identities._lock:
            return self.identities._secrets.get(self.connection, {}).get((debate_id, participant_id))

    def put(self, debate_id: str, participant_id: str, secret: str) -> None:
        with self.identities._lock:
            self.identities._secrets.setdefault(self.connection, {})[(debate_id, participant_id)] = secret


def _required(connection: str | None, action: str) -> str:
    if connection is None:
        raise Refused(
            f"This HTTP request has no MCP session, so moot cannot tell which participant it speaks for; to "
            f"{action}, connect with a session (initialize first) and send its Mcp-Session-Id.",
            rule="TOOLS_IDENTITY",
        )
    return connection

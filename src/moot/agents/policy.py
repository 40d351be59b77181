"""What an agent spec sent by a client may make the server's machine do: the policy of a door that runs debates
for clients (``moot mcp``, over stdio as over HTTP).

A client names agent specs; the server resolves them with its own user, files, network and keys. Without a
policy (``moot run``) the one who writes a spec is the operator. Behind a door every spec is resolved under an
:class:`AgentPolicy`, and what a spec reaches (:class:`Reach`) decides:

- ``MODEL`` — a model the operator's environment configures (``openai:MODEL``, ``anthropic:MODEL``,
  ``ollama:MODEL``, ``local``): always allowed; its key goes where the operator's environment says.
- ``PROGRAM``, ``FILE``, ``TERMINAL``, ``PLUGIN`` — a backend that runs a program (``cmd:``, ``acp:``), reads a
  file the spec names (``script:``, ``local:PATH``), takes turns from the server's terminal (``human``), or runs
  a plugin's code: refused unless the operator allowed that backend by name.
- ``SERVER`` — a model server at a URL the spec names (``openai:MODEL@URL``): refused unless the operator listed
  that URL, before anything connects to it (so a refusal says nothing about which ports answer). A listed
  server is reached at the URL the operator listed, and gets a key only if its entry names one
  (``URL=ENV_NAME``): a client chooses among the operator's servers, never where the operator's keys go.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from urllib.parse import urlsplit, urlunsplit

from moot.errors import AgentNotAllowed

NO_KEY = "not-needed"  # what a server with no key of the operator's gets: OpenAI's SDK insists on one
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Reach(Enum):
    """What a backend reaches on the server's machine, as a sentence's predicate."""

    MODEL = "calls a model the operator configured"
    SERVER = "calls a model server the spec names"
    PROGRAM = "runs a program on the server's machine"
    FILE = "reads a file on the server's machine"
    TERMINAL = "takes its turns from the server's terminal"
    PLUGIN = "runs a plugin's own code in the server"


@dataclass(frozen=True)
class ModelServer:
    """A model server the operator listed: its URL (normalised), and the environment variable of its key."""

    url: str
    key_env: str | None = None


@dataclass(frozen=True)
class Admission:
    """How an allowed spec is built: ``rest`` (a listed server's URL as the operator wrote it) and, for a
    model server the spec names, ``api_key`` (never one the operator did not give that server)."""

    rest: str
    api_key: str | None = None


@dataclass(frozen=True)
class AgentPolicy:
    """The backends (by name) and model servers a door's operator allowed; by default neither."""

    door: str = "this server"
    backends: frozenset[str] = frozenset()
    servers: tuple[ModelServer, ...] = ()
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)  # the keys that listed servers name

    def admit(self, name: str, rest: str, reach: Reach) -> Admission:
        """The admission of backend ``name`` with ``rest``, or AgentNotAllowed naming how to allow it."""
        if reach is Reach.SERVER:
            return self._admit_server(rest)
        if reach is Reach.MODEL or name in self.backends:
            return Admission(rest)
        written = f"{name}:…" if rest.strip() else name
        raise AgentNotAllowed(
            f"the agent spec {written} {reach.value}, which {self.door} does not allow unless started with "
            f"--allow-agent {name} (or with {name!r} in allow_agents of moot.toml); use a model such as "
            "openai:MODEL instead"
        )

    def _admit_server(self, rest: str) -> Admission:
        model, url = split_model_url(rest)
        wanted = normal_url(url or "")
        listed = next((server for server in self.servers if server.url == wanted), None)
        if listed is None:
            known = f" ({', '.join(server.url for server in self.servers)})" if self.servers else ""
            raise AgentNotAllowed(
                f"{self.door} calls only the model servers its operator listed{known}, and {url} is not one of "
                f"them; use one of those or openai:MODEL, or start the server with --allow-server {url} (or list "
                "it in allow_servers of moot.toml)"
            )
        key = self.environ.get(listed.key_env) if listed.key_env else None
        return Admission(f"{model}@{listed.url}", api_key=key or NO_KEY)


def split_model_url(rest: str) -> tuple[str, str | None]:
    """``MODEL@URL`` splits only where the part after '@' is an http(s) URL: ``(MODEL, URL)``, else ``(rest, None)``."""
    for marker in ("@http://", "@https://"):
        index = rest.find(marker)
        if index >= 0:
            return rest[:index].strip(), rest[index + 1 :].strip()
    return rest.strip(), None


def normal_url(url: str) -> str | None:
    """``url`` spelt one way (scheme and host in lower case, the default port left out, no trailing slash, no
    fragment), so that two spellings of one server compare equal; None for anything but an http(s) URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    user = parts.netloc.rpartition("@")[0]
    netloc = (f"{user}@" if user else "") + host
    if port is not None and port != (443 if scheme == "https" else 80):
        netloc += f":{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def model_server(entry: str, source: str, environ: Mapping[str, str]) -> ModelServer:
    """An operator's ``URL`` or ``URL=ENV_NAME`` entry; ValueError with one sentence naming ``source`` otherwise."""
    url, sep, key_env = entry.strip().rpartition("=")
    if not sep or not _ENV_NAME.fullmatch(key_env):
        url, key_env = entry.strip(), ""
    normal = normal_url(url)
    if normal is None:
        raise ValueError(
            f"{source} lists {entry!r}, which is not an http(s) URL; write a model server's base URL, e.g. "
            "http://127.0.0.1:8080/v1, optionally followed by =ENV_NAME to send $ENV_NAME as its key"
        )
    if key_env and not environ.get(key_env):
        raise ValueError(f"{source} gives {url} the key ${key_env}, which is not set; export it or drop '={key_env}'")
    return ModelServer(normal, key_env or None)


def allowed_backends(names: Iterable[str], source: str, known: Iterable[str]) -> frozenset[str]:
    """The backend names ``names`` allows; ValueError naming ``source`` for a name that is no backend."""
    known_names = sorted(known)
    chosen = {name.strip() for name in names}
    unknown = sorted(chosen - set(known_names))
    if unknown:
        raise ValueError(
            f"{source} names {unknown[0]!r}, which is no agent backend; allow one of {', '.join(known_names)}"
        )
    return frozenset(chosen)

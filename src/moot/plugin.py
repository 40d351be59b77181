"""The protocol contract: everything a protocol gives moot, as one typed :class:`Protocol` object.

A package adds a protocol with one entry point in the group ``moot.protocols``; moot's own five register the
same way, and the generic commands (run, resume, check, show, log, ls, rules, serve, eval, review, MCP) reach a
protocol only through this object::

    [project.entry-points."moot.protocols"]
    estimate = "moot_estimate:PLUGIN"

The object is plain data. Each part that is code is a :class:`Ref` (``"module:attribute"``) that is imported
when first used, so loading the entry point imports nothing else of the protocol and ``moot --help`` stays
fast. docs/plugins.md is the reference of every field and hook: its signature, when moot calls it, and what
it must return.

This module is what a protocol author imports from. The names below the contract (rules, the engine's driver
base, record and chain helpers, the run command's options, …) are re-exported from where they live and imported
on first use; violations and the errors come from moot.errors, which this module imports anyway. The viewer's
drawing helpers, whose names are generic, come as the modules :data:`svg` and :data:`plots` (``svg.el``,
``plots.axis``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from moot.errors import (
    BadInput,
    PluginError,
    ProtocolViolationError,
    RecordExists,
    Refused,
    Severity,
    ToolError,
    Unavailable,
    Violation,
)

if TYPE_CHECKING:
    from mcp_types import Tool as McpTool
    from pydantic import BaseModel

    from moot.agents.base import AgentRequest
    from moot.cli.run import (
        AgentOpt,
        AgentsOpt,
        JsonOpt,
        RootOpt,
        RunFlags,
        execute,
        run_options,
        start_record,
    )
    from moot.core.chain import ChainMark, create_record, inspect_chain, marks_of, record_chain, split_mark, with_mark
    from moot.core.files import (
        FILE_RULES,
        CheckReport,
        atomic_write_text,
        folder_lock,
        read_text,
        replay_report,
        slugify,
        unreadable,
    )
    from moot.core.machine import DeliberationProtocol, Outcome, Replay, Rule, RuleBook, Summary
    from moot.core.run_state import RUN_HALTED
    from moot.core.turn_record import Entry, Inspection, Reading, TurnRecord, TurnWriter, Written
    from moot.engine.driver import Candidate, Driver, PlannedCall, reply_format_violation, taking_turns
    from moot.engine.loop import RunResult, now_minutes
    from moot.engine.sealed import SealedPhase, SealedPhases
    from moot.metrics import Stated
    from moot.review import Change
    from moot.tools.errors import refused_by, tool
    from moot.tools.workspace import Workspace
    from moot.web import plots, svg

T = TypeVar("T")


@dataclass(frozen=True)
class Ref(Generic[T]):
    """A reference to code, ``"package.module:attribute"``, imported by :meth:`load` on first use."""

    target: str

    def __post_init__(self) -> None:
        module, colon, attribute = self.target.partition(":")
        if not module or not colon or not attribute:
            raise PluginError(f"{self.target!r} is not a reference; write it as 'package.module:attribute'.")

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    def load(self) -> T:
        """The object named, importing its module now; a reference that cannot be loaded is a PluginError."""
        module, _, attribute = self.target.partition(":")
        try:
            found: Any = importlib.import_module(module)
            for part in attribute.split("."):
                found = getattr(found, part)
        except Exception as exc:
            raise PluginError(f"{self.target} cannot be loaded ({exc!r})") from exc
        return found  # type: ignore[no-any-return]


# --- the hooks ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordFormat:
    """How the protocol's records are read: ``moot check``, ``moot show``, the viewer.

    - ``check(path)``: parse and replay the whole record; never raises on bad input; every violation located
      (file, line, turn). For a directory record ``path`` is the directory.
    - ``documents(path)``: what ``moot show`` and the viewer print, in reading order, as (title, Markdown); None
      means the record file itself.
    - ``turn_heading``: the start of the line that opens a turn in a file record, where the viewer marks turns.
    """

    check: Callable[[Path], CheckReport]
    documents: Callable[[Path], list[tuple[str, str]]] | None = None
    turn_heading: str | None = None


@dataclass(frozen=True)
class Panel:
    """A panel the viewer shows beside a record's state: a picture (SVG markup the view built with this module's
    ``svg``, which escapes every text, and the layout helpers of its ``plots``), or label/value rows."""

    title: str
    svg: str | None = None
    rows: list[tuple[str, str]] = field(default_factory=list)


# ``(record path, text of its first document) -> panels``; called for every page of a record.
View = Callable[[Path, str], list[Panel]]


@dataclass(frozen=True)
class Positions:
    """One kind of position the participants of a record took (a duel's stance, a council member's answer), in
    the order they were stated, for the conformity metrics (:mod:`moot.metrics`)."""

    kind: str
    stated: list[Stated]
    chairman: str | None = None


@dataclass(frozen=True)
class Held:
    """What one participant answered in one round of a deliberation, as text, for ``moot eval``.

    ``among``: the answers it could only choose from, when it could not restate its own (a council reviewer
    ranks the others' answers, never its own); None when it answered freely.
    """

    text: str | None  # None: it gave no answer that round (a failed or empty turn)
    among: tuple[str, ...] | None = None


# ``(question, panel) -> options``: the options (keys of a ``moot run --batch`` line) that put ``question`` to the
# panel, given as (participant name, agent spec) pairs in order.
Pose = Callable[[str, Sequence[tuple[str, str]]], dict[str, Any]]


@dataclass(frozen=True)
class Point:
    """One item of a decision and where the record states it.

    ``turn``: the turn that states it, numbered as ``moot check`` numbers turns; None when the text is part of
    no turn (a roundtable's minutes). ``who``: the participant whose item it is (who proposed, who conceded,
    whose objection).
    """

    text: str
    turn: int | None = None
    who: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "turn": self.turn, "who": self.who}


@dataclass(frozen=True)
class Decision:
    """What a deliberation decided, read out of its record for a person who wants the decision, not the
    transcript. Every list is in record order and empty when the protocol records nothing of its kind.

    - ``outcome``: how it ended (the outcome's name), None while it is open.
    - ``decided``: what was agreed or adopted; None when nothing was (a dissent, a timeout, an open record).
    - ``conceded``: points a participant granted another.
    - ``open``: questions and limitations left open, or proposals nobody adopted.
    - ``blocking``: items that stand in the way of agreement.
    - ``dissent``: positions held against the decision, or against each other when there is none.
    - ``actions``: what the deliberation assigned someone to do next.
    """

    outcome: str | None
    decided: Point | None = None
    conceded: tuple[Point, ...] = ()
    open: tuple[Point, ...] = ()
    blocking: tuple[Point, ...] = ()
    dissent: tuple[Point, ...] = ()
    actions: tuple[Point, ...] = ()

    def lists(self) -> list[tuple[str, tuple[Point, ...]]]:
        """The lists that hold something, each with its name, in the order a person reads them."""
        named = [
            ("conceded", self.conceded),
            ("open", self.open),
            ("blocking", self.blocking),
            ("dissent", self.dissent),
            ("actions", self.actions),
        ]
        return [(name, points) for name, points in named if points]

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "decided": self.decided.to_json() if self.decided is not None else None,
            "conceded": [p.to_json() for p in self.conceded],
            "open": [p.to_json() for p in self.open],
            "blocking": [p.to_json() for p in self.blocking],
            "dissent": [p.to_json() for p in self.dissent],
            "actions": [p.to_json() for p in self.actions],
        }


@dataclass(frozen=True)
class Analysis:
    """What moot reads out of a finished (or open) record, each ``(path) -> …`` and total on bad records.

    - ``positions``: the positions for the conformity metrics; [] when the record has none.
    - ``answer``: the protocol's answer to the question it was asked, for ``moot eval``; None when it gave none.
    - ``rounds``: what each participant answered, round by round, for ``moot eval``'s accuracy per round, the
      vote of the first round and the flips. Round 0 holds the answers given before anyone saw another's; a
      participant missing from a round did not answer in it.
    - ``pose``: how ``moot eval`` puts a question to a panel (see :data:`Pose`); without it (and ``answer``) the
      protocol cannot be evaluated.
    - ``decision``: the :class:`Decision` a person reads first (``moot show``, the viewer, MCP
      ``debate_result``); None when the record cannot be read.
    - ``panel``: the names a record's question was put to, in order, as ``pose`` takes them (the inverse of
      ``pose``): what ``moot continue`` asks a follow-up of; None when the record cannot be read.
    - ``specs``: the agent spec of each participant as the record itself names it (a council's header), for the
      one-family warning of ``moot show``; None when the record names none or cannot be read.
    """

    positions: Callable[[Path], list[Positions]] | None = None
    answer: Callable[[Path], str | None] | None = None
    rounds: Callable[[Path], list[dict[str, Held]]] | None = None
    pose: Pose | None = None
    decision: Callable[[Path], Decision | None] | None = None
    panel: Callable[[Path], list[str] | None] | None = None
    specs: Callable[[Path], dict[str, str] | None] | None = None


@dataclass(frozen=True)
class Seat:
    """How an agent tool stands to a seat: over MCP a connection speaks only for the seats it took
    (moot.mcp.identity); a seat is held by the OS user or connection that took it.

    - ``takes``: True when the call takes the seat (it is bound to the connection once the call succeeds);
      False when the connection must hold it already.
    - ``of(workspace, arguments) -> (record, role, where)``: the seat the call is about: the key of its record,
      the role, and how a message names the record; ``arguments`` maps argument names to values. None for a
      seat that only the call's answer names (joining a duel by its source).
    - ``answered(result) -> (record, role)``: with ``of`` None, the seat the answer names; the connection's
      first such call fixes the name it speaks under (the argument ``name``).
    - ``claim``: the tool that takes the seat, named when a call without it is refused.
    - ``name``: with ``answered``, the argument that names the participant.
    - ``own_secrets``: the tools keep their seats' secrets themselves, in the ledger (moot's own protocols do).
      Otherwise moot keeps the seat (:func:`moot.tools.seats.kept_seat`): the first OS user or MCP connection to
      take a role in a record holds it, by a secret moot keeps for that caller; the call that takes it returns the
      secret once, as ``participant_secret``, for acting from elsewhere (``$MOOT_PARTICIPANT_SECRET``, or the
      MCP tool's ``participant_secret``).
    """

    takes: bool
    of: Callable[[Workspace, dict[str, Any]], tuple[str, str, str]] | None = None
    answered: Callable[[Any], tuple[str, str]] | None = None
    claim: str = ""
    name: str = ""
    own_secrets: bool = False


@dataclass(frozen=True)
class Tool:
    """One agent-tool operation, declared once: the command ``moot PROTOCOL NAME`` and the MCP tool
    (``PROTOCOL_NAME``, or ``mcp_name``) are both generated from it (docs/agent-tools.md).

    - ``name``: the command's name, kebab-case.
    - ``function(workspace, **arguments) -> result model``: does the work and raises only
      ``moot.errors.ToolError``; its docstring is the tool's description. Its arguments are its keyword
      parameters annotated ``Annotated[T, Field(description=...)]`` (more metadata from ``moot.tools.declare``
      says how one reads on the command line); the argument model is built once from them (:attr:`arguments`).
    - ``read_only``: the call changes nothing (MCP's read-only hint).
    - ``seat``: how the call stands to a seat over MCP; None when it needs none.
    - ``locate``: the argument that names the record by its id, from which the command line finds the work root
      when ``--root`` is not given.
    - ``remembers``: the field of the answer that names a record by its id, which the command line remembers
      with its work root, so that later calls (``locate``) find it without ``--root``.
    - ``folder_option``: a command-line option naming the protocol's record folder (``<work root>/FOLDER``),
      which sets the work root when ``--root`` is not given (``--debate-dir``, as rp1's agents pass it).
    - ``mcp_name``: the MCP tool's name when it is not ``PROTOCOL_NAME`` (kept for clients that use it).
    """

    name: str
    function: Callable[..., BaseModel]
    read_only: bool = False
    seat: Seat | None = None
    locate: str | None = None
    remembers: str | None = None
    folder_option: str | None = None
    mcp_name: str | None = None


ToolSet = tuple[Tool, ...]

# ``(the MCP server's tools, as moot mcp lists them) -> {path under integrations/: text}``: the instruction files a
# protocol gives agent hosts (skills, slash commands, AGENTS.md sections), generated by ``python -m moot.hosts``.
HostFiles = Callable[[Sequence["McpTool"]], dict[str, str]]


@dataclass(frozen=True)
class Sharing:
    """How a protocol's records are shared across hosts through the ledger, where its agent tools take turns.

    - ``held(workspace, path) -> bool``: True when the ledger holds the record at ``path``; it then brings the
      local file up to date from the ledger (so ``moot resume`` refuses on a record that is current). Called by
      ``moot resume`` in a work root with a ledger.
    - ``continue_with``: how the participants continue a shared record instead, named in that refusal (the
      protocol's agent tools, e.g. ``"moot duel claim-lock, append and release-lock"``).
    """

    held: Callable[[Workspace, Path], bool]
    continue_with: str


Verdict = Literal["approve", "changes_requested"]


@dataclass(frozen=True)
class Reviewing:
    """What ``moot review`` puts to a protocol: the change (:class:`moot.review.Change`), how much of its diff a
    prompt may show (``diff_limit``, for :func:`moot.review.bounded`), when the review started (``started``, as
    ``Driver.start`` takes it), and who reviews it: ``panel``, the members as (name, agent spec) pairs for a
    protocol whose reviewers are members (empty for fixed roles), ``chairman``, a separate chairman's spec (or
    None), and ``max_rounds`` for a protocol with rounds."""

    change: Change
    diff_limit: int
    started: str
    panel: tuple[tuple[str, str], ...] = ()
    chairman: str | None = None
    max_rounds: int | None = None


@dataclass(frozen=True)
class Reviewed:
    """A finished review as its protocol reads it: the verdict (None: the review failed and gives none), the
    pull-request comment (Markdown), the reason ``moot review --json`` gives (and prints when there is no
    verdict), and ``held_back``: why an approval was turned into changes requested (a degraded council)."""

    verdict: Verdict | None
    comment: str
    reason: str | None
    held_back: str | None = None


@dataclass(frozen=True)
class Review:
    """How ``moot review --protocol NAME`` reviews a git change with the protocol.

    - ``start(root, reviewing) -> Driver``: a new record under ``root`` for the change; a second review of the
      same change gets a record of its own.
    - ``read(driver, result, reviewing) -> Reviewed``: the verdict and comment of the finished run. A verdict of
      ``approve`` is the exit code 0 of a pre-commit hook or a CI gate: give it only when the record says so.
    - ``roles``: the fixed roles that review (the critique's author and reviewer), each given its agent as
      ``moot run`` gives it; empty for a panel of members (``--member NAME=SPEC``, by default three reviewers).
    - ``chairman``: the role a separate chairman takes (``--chairman SPEC``); None when the protocol has none.
    - ``rounds``: whether ``--max-rounds`` applies.
    """

    start: Callable[[Path, Reviewing], Driver]
    read: Callable[[Driver, RunResult, Reviewing], Reviewed]
    roles: tuple[str, ...] = ()
    chairman: str | None = None
    rounds: bool = False


# The ``moot run NAME`` command: a typer-style function whose parameters are the protocol's own options and that
# returns the driver's options object; moot adds the options every protocol shares and runs it.
RunCommand = Callable[..., Any]

SEALED = "sealed"  # asks several roles at once, answers committed by digest before they are revealed
GROUNDED = "grounded"  # verifies cited evidence against --source files


@dataclass(frozen=True)
class Protocol:
    """One protocol, as its entry point registers it. See docs/plugins.md for every field."""

    name: str
    summary: str
    folder: str
    rules: tuple[Ref[RuleBook], ...]
    machine: Ref[type[DeliberationProtocol[Any, Any]]]
    record: Ref[RecordFormat]
    driver: Ref[type[Driver]]
    command: Ref[RunCommand]
    title: str | None = None
    marker: str | None = None
    tools: Ref[ToolSet] | None = None
    view: Ref[View] | None = None
    analysis: Ref[Analysis] | None = None
    sharing: Ref[Sharing] | None = None
    hosts: Ref[HostFiles] | None = None
    review: Ref[Review] | None = None
    capabilities: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if (self.title is None) == (self.marker is None):
            raise PluginError(f"protocol {self.name!r} needs exactly one of title (file records) or marker (folders)")

    def references(self) -> list[Ref[Any]]:
        """Every part that is code, for ``moot protocols --check``."""
        optional = (self.tools, self.view, self.analysis, self.sharing, self.hosts, self.review)
        return [*self.rules, self.machine, self.record, self.driver, self.command, *(r for r in optional if r)]

    def capability_names(self) -> list[str]:
        """What the protocol offers beyond run/check/show: its declared capabilities and one per hook it sets."""
        hooks = {
            "tools": self.tools,
            "view": self.view,
            "analysis": self.analysis,
            "sharing": self.sharing,
            "hosts": self.hosts,
            "review": self.review,
        }
        return sorted(self.capabilities | {name for name, ref in hooks.items() if ref is not None})


# --- what a protocol author uses, re-exported on first use ------------------------------------------

_LAZY = {
    "AgentRequest": "moot.agents.base",
    "DeliberationProtocol": "moot.core.machine",
    "Outcome": "moot.core.machine",
    "Replay": "moot.core.machine",
    "Rule": "moot.core.machine",
    "RuleBook": "moot.core.machine",
    "Summary": "moot.core.machine",
    "Stated": "moot.metrics",
    "RUN_HALTED": "moot.core.run_state",
    # records and files
    "CheckReport": "moot.core.files",
    "FILE_RULES": "moot.core.files",
    "atomic_write_text": "moot.core.files",
    "create_record": "moot.core.chain",
    "folder_lock": "moot.core.files",
    "read_text": "moot.core.files",
    "replay_report": "moot.core.files",
    "slugify": "moot.core.files",
    "unreadable": "moot.core.files",
    # the digest chain
    "ChainMark": "moot.core.chain",
    "inspect_chain": "moot.core.chain",
    "marks_of": "moot.core.chain",
    "record_chain": "moot.core.chain",
    "split_mark": "moot.core.chain",
    "with_mark": "moot.core.chain",
    # Markdown turn records
    "Entry": "moot.core.turn_record",
    "Inspection": "moot.core.turn_record",
    "Reading": "moot.core.turn_record",
    "TurnRecord": "moot.core.turn_record",
    "TurnWriter": "moot.core.turn_record",
    "Written": "moot.core.turn_record",
    # sealed phases
    "SealedPhase": "moot.engine.sealed",
    "SealedPhases": "moot.engine.sealed",
    # the driver
    "Candidate": "moot.engine.driver",
    "Driver": "moot.engine.driver",
    "PlannedCall": "moot.engine.driver",
    "reply_format_violation": "moot.engine.driver",
    "taking_turns": "moot.engine.driver",
    # the run command
    "AgentOpt": "moot.cli.run",
    "AgentsOpt": "moot.cli.run",
    "JsonOpt": "moot.cli.run",
    "RootOpt": "moot.cli.run",
    "RunFlags": "moot.cli.run",
    "execute": "moot.cli.run",
    "now_minutes": "moot.engine.loop",
    "run_options": "moot.cli.run",
    "start_record": "moot.cli.run",
    # agent tools
    "refused_by": "moot.tools.errors",
    "tool": "moot.tools.errors",
    "Workspace": "moot.tools.workspace",
}

# The viewer's drawing helpers, given as modules: their names (el, text, axis, order, …) are too generic to stand
# alone beside the contract's.
_MODULES = {"plots": "moot.web.plots", "svg": "moot.web.svg"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "FILE_RULES",
    "GROUNDED",
    "RUN_HALTED",
    "SEALED",
    "AgentOpt",
    "AgentRequest",
    "AgentsOpt",
    "Analysis",
    "BadInput",
    "Candidate",
    "ChainMark",
    "CheckReport",
    "Decision",
    "DeliberationProtocol",
    "Driver",
    "Entry",
    "Held",
    "HostFiles",
    "Inspection",
    "JsonOpt",
    "Outcome",
    "Panel",
    "PlannedCall",
    "Point",
    "Pose",
    "Positions",
    "Protocol",
    "ProtocolViolationError",
    "Reading",
    "RecordExists",
    "RecordFormat",
    "Ref",
    "Refused",
    "Replay",
    "Review",
    "Reviewed",
    "Reviewing",
    "RootOpt",
    "Rule",
    "RuleBook",
    "RunCommand",
    "RunFlags",
    "SealedPhase",
    "SealedPhases",
    "Seat",
    "Severity",
    "Sharing",
    "Stated",
    "Summary",
    "Tool",
    "ToolError",
    "ToolSet",
    "TurnRecord",
    "TurnWriter",
    "Unavailable",
    "Verdict",
    "View",
    "Violation",
    "Workspace",
    "Written",
    "atomic_write_text",
    "create_record",
    "execute",
    "folder_lock",
    "inspect_chain",
    "marks_of",
    "now_minutes",
    "plots",
    "read_text",
    "record_chain",
    "refused_by",
    "replay_report",
    "reply_format_violation",
    "run_options",
    "slugify",
    "split_mark",
    "start_record",
    "svg",
    "taking_turns",
    "tool",
    "unreadable",
    "with_mark",
]

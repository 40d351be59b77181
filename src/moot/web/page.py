"""One record as a web page, and the index of a work root: the data each page shows and its HTML.

``moot serve`` and ``moot export --html`` both render through :func:`record_html`; the live page swaps in
:func:`record_body` as the record changes. Records are untrusted input: the templates autoescape, and the plots
escape every text they draw (:mod:`moot.web.svg`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from moot import registry
from moot.agents.pricing import logged_cache_text
from moot.conformity import record_analyses
from moot.core.files import CheckReport, read_text
from moot.core.machine import Summary
from moot.decision import place, record_decision
from moot.detect import check_path, detect, documents
from moot.errors import UserError, Violation
from moot.metrics import describe
from moot.plugin import Decision, Panel
from moot.records import last_change, read_attempts, record_bytes, record_topic, unchecked_text
from moot.web.prose import prose
from moot.web.transcript import Section, Window, cut, read_latin1

_ENV = Environment(loader=PackageLoader("moot.web"), autoescape=select_autoescape(default=True), trim_blocks=True)


# Violations listed on a page (all of them are placed where they point); moot check lists every one.
LISTED_VIOLATIONS = 200
# The latest attempts shown in the usage table.
SHOWN_ATTEMPTS = 200


@dataclass
class RecordPage:
    """One page of a record: its decision, its state, its violations (each numbered as moot check lists it), one page of its
    transcript (see :mod:`moot.web.transcript`), and the latest of its attempts."""

    path: Path
    protocol: str
    topic: str | None
    report: CheckReport  # its violations: the listed ones and those shown on this page
    numbers: list[int]  # each of those violations' place in the check's list, from 1
    pages: list[int | None]  # the page where each is shown, when it is another one
    errors: int
    warnings: int
    sections: list[Section]
    window: Window
    state: list[tuple[str, str]]
    panels: list[Panel]
    attempts: list[dict[str, Any]]
    attempts_total: int
    conformity: dict[str, list[str]]
    decision: Decision | None  # what the page leads with
    unplaced: list[Violation]  # violations of the record as a whole
    changed: str | None
    size: int  # bytes of the record
    unchecked: str | None = None  # why a record too large to check here was shown without its check
    _index: dict[int, int] = field(default_factory=dict, repr=False)

    def _at(self, violation: Violation) -> int:
        if not self._index:
            self._index.update({id(v): at for at, v in enumerate(self.report.violations)})
        return self._index[id(violation)]

    def anchor(self, violation: Violation) -> str:
        """The id of a violation's place on the page (it is listed once, and shown where it points)."""
        return f"v{self.numbers[self._at(violation)]}"

    def href(self, violation: Violation) -> str:
        """Where a listed violation is shown: on this page, or on the page that holds its line."""
        page = self.pages[self._at(violation)]
        return f"?page={page}#{self.anchor(violation)}" if page is not None else f"#{self.anchor(violation)}"

    @property
    def listed(self) -> list[Violation]:
        return [
            v for v, number in zip(self.report.violations, self.numbers, strict=True) if number <= LISTED_VIOLATIONS
        ]

    @property
    def unlisted(self) -> int:
        return max(0, self.errors + self.warnings - LISTED_VIOLATIONS)

    @property
    def turns(self) -> int:
        return self.report.summary.turns if self.report.summary is not None else 0

    @property
    def max_tokens(self) -> int:
        return max([_tokens(row) for row in self.attempts] or [0])

    @property
    def cache(self) -> str | None:
        """What the provider's cache read and saved over every attempt, or None when it read nothing."""
        return logged_cache_text(self.attempts)


def _tokens(row: dict[str, Any]) -> int:
    return int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0)


# --- building a page ----------------------------------------------------------------------------------


def _documents(protocol: str, target: Path) -> list[tuple[str, str]]:
    """What ``moot show`` shows; a folder record also shows its marker (the state file its rules point into)."""
    plugin = registry.get(protocol)
    shown = documents(protocol, target)
    if target.is_dir() and plugin.marker is not None and all(name != plugin.marker for name, _ in shown):
        state, _ = read_text(target / plugin.marker)
        if state is not None:
            shown = [*shown, (plugin.marker, state)]
    return shown


def _shown_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_shown_value(v)}" for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        return ", ".join(_shown_value(v) for v in value) or "—"
    return "—" if value is None else str(value)


# A value of the state, a panel or the title shows at most this much of a long text.
SHOWN_CHARS = 2_000


def clipped(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text``, or its start and how much is left out: a record's one line may be megabytes long."""
    return text if len(text) <= limit else f"{text[:limit]} … ({len(text) - limit:,} more characters)"


_ENV.filters["clipped"] = clipped  # a violation's message may quote a long part of the record
_ENV.filters["place"] = place
_ENV.filters["prose"] = prose


def state_rows(summary: Summary | None) -> list[tuple[str, str]]:
    """The state as label/value rows: whose turn, round, outcome and the protocol's own details (long ones cut)."""
    return [(label, clipped(value)) for label, value in _state_rows(summary)]


def _state_rows(summary: Summary | None) -> list[tuple[str, str]]:
    if summary is None:
        return [("status", "unreadable")]
    rows = [("status", summary.status), ("turns", str(summary.turns))]
    if summary.outcome is None:
        rows.append(("whose turn", summary.next_speaker or "—"))
    if summary.round is not None:
        rows.append(("round", str(summary.round)))
    if summary.outcome is not None:
        rows += [("reason", summary.outcome.reason), ("consensus", _shown_value(summary.outcome.consensus))]
    for key, value in summary.detail.items():
        label = key.replace("_", " ")
        if all(label != shown for shown, _ in rows):  # e.g. a roundtable's status, already the first row
            rows.append((label, _shown_value(value)))
    return rows


def build(path: Path, page: int | None = None, *, check_limit: int | None = None) -> RecordPage:
    """Everything page ``page`` of the record at ``path`` shows (``None``: the whole record on one page, as an
    export holds it). Raises :class:`UserError` if it is not a record.

    A record of more than ``check_limit`` bytes (with its attempt log) is shown as text alone, a page at a time,
    with the command that checks it: checking holds several copies of a record in memory."""
    protocol, target, problem = detect(path)
    if problem is not None or protocol is None:
        reason = problem.violations[0].message if problem is not None and problem.violations else "unknown format"
        raise UserError(f"cannot show {path}: {reason}")
    if check_limit is not None and (weight := record_bytes(target)) > check_limit:
        return _unchecked(protocol, target, page, unchecked_text(target, weight, check_limit))
    report = check_path(target)
    documents = _documents(protocol, target)
    single = not target.is_dir()
    plugin = registry.get(protocol)
    transcript = cut(documents, single, plugin.record.load().turn_heading, page)
    unplaced, elsewhere = transcript.place(report.violations, single)
    first = documents[0][1] if documents else ""
    view = plugin.view.load() if plugin.view is not None else None
    panels = view(target, first) if view is not None else []
    size = sum(len(text.encode("utf-8")) for _, text in documents)
    del documents, first  # the page keeps only its own lines
    for section in [] if single else transcript.sections.get(plugin.marker or "", []):
        section.state = True
    analyses = record_analyses(protocol, target)
    attempts = read_attempts(target)
    changed = last_change(target)
    hidden = {id(v) for v in [*unplaced[LISTED_VIOLATIONS:]]} | set(elsewhere)
    kept = [
        (number, v)
        for number, v in enumerate(report.violations, start=1)
        if number <= LISTED_VIOLATIONS or id(v) not in hidden
    ]
    return RecordPage(
        path=target,
        protocol=protocol,
        topic=clipped(topic, 200) if (topic := record_topic(protocol, target)) else None,
        report=report.model_copy(update={"violations": [v for _, v in kept]}),
        numbers=[number for number, _ in kept],
        pages=[elsewhere.get(id(v)) for _, v in kept],
        errors=len(report.errors),
        warnings=len(report.warnings),
        sections=[section for sections in transcript.sections.values() for section in sections],
        window=transcript.window,
        state=state_rows(report.summary),
        panels=[replace(panel, rows=[(label, clipped(value)) for label, value in panel.rows]) for panel in panels],
        attempts=attempts[-SHOWN_ATTEMPTS:],
        attempts_total=len(attempts),
        conformity={what: [clipped(line) for line in describe(analysis)] for what, analysis in analyses.items()},
        decision=record_decision(protocol, target),
        unplaced=unplaced[:LISTED_VIOLATIONS],
        changed=datetime.fromtimestamp(changed, UTC).isoformat(timespec="seconds") if changed else None,
        size=size,
    )


def _unchecked(protocol: str, target: Path, page: int | None, why: str) -> RecordPage:
    """Page ``page`` of a record's text, without its check, its analyses or its attempts (see :func:`build`)."""
    single = not target.is_dir()
    documents = [(target.name, read_latin1(target))] if single else _documents(protocol, target)
    transcript = cut(documents, single, registry.get(protocol).record.load().turn_heading, page, latin1=single)
    del documents
    size = sum(file.stat().st_size for file in target.iterdir()) if target.is_dir() else target.stat().st_size
    changed = last_change(target)
    return RecordPage(
        path=target,
        protocol=protocol,
        topic=clipped(topic, 200) if (topic := record_topic(protocol, target)) else None,
        report=CheckReport(path=str(target), protocol=protocol, violations=[]),
        numbers=[],
        pages=[],
        errors=0,
        warnings=0,
        sections=[section for sections in transcript.sections.values() for section in sections],
        window=transcript.window,
        state=[],
        panels=[],
        attempts=[],
        attempts_total=0,
        conformity={},
        decision=None,
        unplaced=[],
        changed=datetime.fromtimestamp(changed, UTC).isoformat(timespec="seconds") if changed else None,
        size=size,
        unchecked=why,
    )


# --- HTML -------------------------------------------------------------------------------------------


def _asset(name: str) -> Markup:
    """moot's own stylesheet or script, inlined so that a page needs nothing from the network."""
    loader = _ENV.loader
    assert loader is not None
    source, _, _ = loader.get_source(_ENV, name)
    return Markup(source)


def record_body(page: RecordPage) -> str:
    """The part of a record's page that changes as the record grows (what the live page swaps in)."""
    return _ENV.get_template("record_body.html").render(page=page)


def content_policy(nonce: str, *, live: bool) -> str:
    """A page's Content-Security-Policy: nothing from the network, moot's inline style, only the script carrying
    ``nonce``, the live-update stream from this server when ``live``, and no base or form target.

    The page carries it as a meta tag (an exported file has no headers); ``moot serve`` also sends it as a header,
    with ``frame-ancestors``, which only a header can set.
    """
    connect = "'self'" if live else "'none'"
    return (
        f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; "
        f"connect-src {connect}; base-uri 'none'; form-action 'none'"
    )


def new_nonce() -> str:
    return secrets.token_urlsafe(16)


def record_html(
    page: RecordPage, *, events: str | None = None, index: str | None = None, nonce: str | None = None
) -> str:
    """The whole page: ``events`` is the live-update stream's URL (none in an export), ``index`` the way back,
    ``nonce`` the script's (the one in the policy a server sends with the page; a fresh one by default)."""
    nonce = nonce or new_nonce()
    return _ENV.get_template("record.html").render(
        page=page,
        body=Markup(record_body(page)),
        events=events,
        index=index,
        nonce=nonce,
        policy=content_policy(nonce, live=events is not None),
        style=_asset("style.css"),
        script=_asset("live.js"),
    )


def index_body(root: Path, rows: Sequence[dict[str, Any]], link: Callable[[dict[str, Any]], str]) -> str:
    """The index's table of records (what the live index swaps in)."""
    return _ENV.get_template("index_body.html").render(root=str(root), rows=rows, link=link)


def index_html(
    root: Path,
    rows: Sequence[dict[str, Any]],
    link: Callable[[dict[str, Any]], str],
    events: str,
    nonce: str | None = None,
) -> str:
    nonce = nonce or new_nonce()
    return _ENV.get_template("index.html").render(
        root=str(root),
        body=Markup(index_body(root, rows, link)),
        events=events,
        nonce=nonce,
        policy=content_policy(nonce, live=True),
        style=_asset("style.css"),
        script=_asset("live.js"),
    )

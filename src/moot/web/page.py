"""One record as a web page, and the index of a work root: the data each page shows and its HTML.

``moot serve`` and ``moot export --html`` both render through :func:`record_html`; the live page swaps in
:func:`record_body` as the record changes. Records are untrusted input: the templates autoescape, and the plots
escape every text they draw (:mod:`moot.web.svg`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from moot import registry
from moot.artifacts import check_path, detect
from moot.artifacts.base import CheckReport, read_text
from moot.errors import UserError
from moot.protocols.base import Summary, Violation
from moot.records import last_change, read_attempts, record_topic
from moot.web.views import Panel

_ENV = Environment(loader=PackageLoader("moot.web"), autoescape=select_autoescape(default=True), trim_blocks=True)


@dataclass
class Line:
    number: int
    text: str
    violations: list[Violation] = field(default_factory=list)


@dataclass
class Section:
    """A part of the transcript: a turn (or the header, or one file of a meeting) with its violations."""

    title: str
    lines: list[Line]
    turn: bool = False
    violations: list[Violation] = field(default_factory=list)  # located at the section, not at a line


@dataclass
class RecordPage:
    path: Path
    protocol: str
    topic: str | None
    report: CheckReport
    sections: list[Section]
    state: list[tuple[str, str]]
    panels: list[Panel]
    attempts: list[dict[str, Any]]
    conformity: dict[str, list[str]]
    unplaced: list[Violation]  # violations of the record as a whole
    changed: str | None

    def anchor(self, violation: Violation) -> str:
        """The id of a violation's place on the page (it is listed once, and shown where it points)."""
        return f"v{next(n for n, v in enumerate(self.report.violations, start=1) if v is violation)}"

    @property
    def turns(self) -> int:
        return self.report.summary.turns if self.report.summary is not None else 0

    @property
    def max_tokens(self) -> int:
        return max([_tokens(row) for row in self.attempts] or [0])


def _tokens(row: dict[str, Any]) -> int:
    return int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0)


# --- building a page ----------------------------------------------------------------------------------


def _documents(protocol: str, target: Path) -> list[tuple[str, str]]:
    """What ``moot show`` shows; a folder record also shows its marker (the state file its rules point into)."""
    plugin = registry.get(protocol)
    shown = plugin.shown(target)
    if shown is None:
        text, _ = read_text(target)
        return [(target.name, text or "")]
    if target.is_dir() and plugin.marker is not None and all(name != plugin.marker for name, _ in shown):
        state, _ = read_text(target / plugin.marker)
        if state is not None:
            shown = [*shown, (plugin.marker, state)]
    return shown


def _split(text: str, turn_heading: str | None) -> list[Section]:
    """A file record cut at its ``## `` headings: the header, then each turn and closing section."""
    sections = [Section("Header", [])]
    for number, content in enumerate(text.splitlines(), start=1):
        if content.startswith("## ") and sections[-1].lines:
            title = content[3:].strip()
            sections.append(Section(title, [], turn=turn_heading is not None and content.startswith(turn_heading)))
        sections[-1].lines.append(Line(number, content))
    return sections


def _place(violations: Sequence[Violation], files: dict[str, list[Section]], single: bool) -> list[Violation]:
    """Attach each violation to its line (or turn) in ``files``; returns those that belong to no part."""
    unplaced = []
    for violation in violations:
        name = Path(violation.file).name if violation.file else None
        # In a one-file record, a violation names that file or none; one naming another file (the digest
        # chain beside it) has no line here.
        sections = next(iter(files.values())) if single and name is None else files.get(name or "")
        if sections is None:
            unplaced.append(violation)
            continue
        if violation.line is not None:
            target = next((line for s in sections for line in s.lines if line.number == violation.line), None)
            if target is not None:
                target.violations.append(violation)
                continue
        turns = [s for s in sections if s.turn]
        if single and violation.turn is not None and 0 < violation.turn <= len(turns):
            turns[violation.turn - 1].violations.append(violation)
        elif not single and len(sections) == 1:
            sections[0].violations.append(violation)
        else:
            unplaced.append(violation)
    return unplaced


def _shown_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_shown_value(v)}" for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        return ", ".join(_shown_value(v) for v in value) or "—"
    return "—" if value is None else str(value)


def state_rows(summary: Summary | None) -> list[tuple[str, str]]:
    """The state as label/value rows: whose turn, round, outcome and the protocol's own details."""
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


def build(path: Path) -> RecordPage:
    """Everything the page of the record at ``path`` shows. Raises :class:`UserError` if it is not a record."""
    from moot.metrics import describe, record_conformity  # imports the protocols: only when a page is built

    protocol, target, problem = detect(path)
    if problem is not None or protocol is None:
        reason = problem.violations[0].message if problem is not None and problem.violations else "unknown format"
        raise UserError(f"cannot show {path}: {reason}")
    report = check_path(target)
    documents = _documents(protocol, target)
    single = not target.is_dir()
    plugin = registry.get(protocol)
    heading = plugin.turn_heading if single else None
    files: dict[str, list[Section]] = {}
    for name, text in documents:
        if single:
            files[name] = _split(text, heading)
        else:
            files[name] = [Section(name, [Line(n, c) for n, c in enumerate(text.splitlines(), start=1)], turn=True)]
    unplaced = _place(report.violations, files, single)
    first = documents[0][1] if documents else ""
    analyses = record_conformity(protocol, first) if documents else {}
    view: Callable[[Path, str], list[Panel]] | None = registry.load(plugin.view) if plugin.view else None
    changed = last_change(target)
    return RecordPage(
        path=target,
        protocol=protocol,
        topic=record_topic(protocol, target),
        report=report,
        sections=[section for sections in files.values() for section in sections],
        state=state_rows(report.summary),
        panels=view(target, first) if view is not None else [],
        attempts=read_attempts(target),
        conformity={what: describe(analysis) for what, analysis in analyses.items()},
        unplaced=unplaced,
        changed=datetime.fromtimestamp(changed, UTC).isoformat(timespec="seconds") if changed else None,
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

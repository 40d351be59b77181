"""Follow-ups: a new deliberation that starts from a finished one's answer (``moot continue``, the chat API).

The new record's question carries the earlier question, its answer and what it left open, and names the earlier
record, so it reads and checks on its own. The earlier record is append-only and chained, so it is not touched: the follow-ups it has are
listed beside it in ``.NAME.followups``, one JSON line each (``record``, ``question``, ``at``), which ``moot show``
reads back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moot import registry
from moot.config import load_settings
from moot.core.files import append_log_line
from moot.core.run_state import read_run_state, resume_text, stored_agents, with_record
from moot.decision import record_decision
from moot.detect import check_path
from moot.errors import UserError
from moot.limits import require_subject
from moot.plugin import Analysis
from moot.records import record_topic


def follow_up_question(
    question: str, follows: str | None, asked: str, answer: str, left_open: Sequence[str] = ()
) -> str:
    """``question``, then the earlier exchange it follows (and the earlier record's id, when known), and what that
    deliberation left open or blocking."""
    where = f" ({follows})" if follows else ""
    text = f"{question.strip()}\n\nThis follows an earlier deliberation{where}. It was asked: {asked.strip()}"
    text += f" Its answer: {answer.strip()}"
    if left_open:
        text += " It left open: " + "; ".join(item.strip() for item in left_open)
    return text


def open_items(protocol: str, record: Path) -> list[str]:
    """What the record's decision left open or blocking, for the follow-up to take up."""
    decision = record_decision(protocol, record)
    return [] if decision is None else [point.text for point in (*decision.open, *decision.blocking)]


def followups_path(record: Path) -> Path:
    return record.with_name(f".{record.name}.followups")


def note_followup(earlier: Path, later: str, question: str, at: str) -> None:
    """Add ``later`` (its id) to the follow-ups listed beside ``earlier``."""
    line = json.dumps({"record": later, "question": question, "at": at}, ensure_ascii=False)
    append_log_line(followups_path(earlier), line)


def followups(record: Path) -> list[dict[str, Any]]:
    """The follow-ups listed beside ``record``, oldest first; a line a crash cut short is skipped."""
    try:
        lines = followups_path(record).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("record"), str):
            found.append(row)
    return found


@dataclass(frozen=True)
class FollowUp:
    """A follow-up ready to start: the new deliberation as a ``--batch`` line, and what it follows."""

    spec: dict[str, Any]
    follows: str  # the earlier record's id: its path in the work root
    panel: dict[str, str]  # member -> agent spec
    agents: dict[str, str]  # every role of the earlier run -> its agent spec now (a mediator's, a chairman's too)


def _analysis(protocol: str, path: Path) -> Analysis:
    plugin = registry.get(protocol)
    analysis = plugin.analysis.load() if plugin.analysis is not None else None
    if analysis is None or analysis.pose is None or analysis.answer is None or analysis.panel is None:
        raise UserError(
            f"{path} is a {protocol} record, which takes no follow-up question (its protocol cannot pose one); "
            f"start a new {protocol} debate instead."
        )
    return analysis


def _how_to_go_on(protocol: str, record: Path) -> str:
    """Why ``record`` has no answer yet and the one way on: resume a halted run (the halt names any limit to raise),
    or start a new debate where the protocol's ending is final (an Agora's TIMEOUT)."""
    summary = check_path(record).summary
    outcome = summary.outcome if summary is not None else None
    if outcome is None:
        halted = read_run_state(record).get("halted")
        stopped = f"its run stopped before an answer: {halted['reason']}" if isinstance(halted, dict) else "it is open"
        return f"{stopped}; go on with `{resume_text(record)}`, then ask again"
    refusal = registry.get(protocol).driver.load().limit_refusal("max_turns")
    if refusal is not None:
        return f"it ended {outcome.name}, and {with_record(refusal, record).rstrip('.')}"
    return (
        f"it ended {outcome.name}; resume it with a higher limit (`moot resume --help`) or start a new debate instead"
    )


def follow_up(
    root: Path, protocol: str, record: Path, question: str, chosen: Callable[[str], str | None] = lambda role: None
) -> FollowUp:
    """The follow-up ``question`` of the finished ``record`` under ``root``: same protocol, same panel, each role
    with the agent ``chosen(role)`` names, else its agent in the earlier run, else moot.toml's. Refused in one
    sentence when the protocol cannot pose a question or the record has no answer."""
    analysis = _analysis(protocol, record)
    require_subject("question", question)
    if not question.strip():
        raise UserError("the follow-up question is empty; say what to ask next.")
    assert analysis.pose is not None and analysis.answer is not None and analysis.panel is not None
    answer = analysis.answer(record)
    if not answer:
        raise UserError(f"{record} has no answer to follow up: {_how_to_go_on(protocol, record)}.")
    earlier = stored_agents(record)
    settings = load_settings(root)

    def spec_of(role: str) -> str:
        return chosen(role) or earlier.get(role) or settings.agent_for(role, {}, None)

    panel = {name: spec_of(name) for name in analysis.panel(record) or []}
    follows = record.resolve().relative_to(root.resolve()).as_posix()
    asked = follow_up_question(
        question, follows, record_topic(protocol, record) or "", answer, open_items(protocol, record)
    )
    spec = {"protocol": protocol, **analysis.pose(asked, list(panel.items())), "panel": panel}
    agents = {role: spec_of(role) for role in earlier}  # the roles the panel leaves out (a mediator, a chairman)
    return FollowUp(spec, follows, panel, agents)

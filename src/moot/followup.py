"""Follow-ups: a new deliberation that starts from a finished one's answer (``moot continue``, the chat API).

The new record's question carries the earlier question and answer and names the earlier record, so it reads and
checks on its own. The earlier record is append-only and chained, so it is not touched: the follow-ups it has are
listed beside it in ``.NAME.followups``, one JSON line each (``record``, ``question``, ``at``), which ``moot show``
reads back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from moot.core.files import append_log_line


def follow_up_question(question: str, follows: str | None, asked: str, answer: str) -> str:
    """``question``, then the earlier exchange it follows (and the earlier record's id, when known)."""
    where = f" ({follows})" if follows else ""
    return f"{question.strip()}\n\nThis follows an earlier deliberation{where}. It was asked: {asked.strip()} Its answer: {answer.strip()}"


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

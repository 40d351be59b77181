"""``moot review`` with the Critique Loop's review template: an author and a reviewer over the change.

The record is an ordinary Critique Loop dialogue (``.dialogues/``). Both roles see the diff; the author also gets
the commit messages. The verdict is read from how the dialogue ended:

- ``approve``: the dialogue concluded (DONE). The reviewer is told to propose or confirm the end only when no
  blocking issue remains, so a concluded review is an approval.
- ``changes_requested``: it ran out of rounds with the reviewer still raising issues, or a participant escalated
  to a person (STUCK).
- none (an error): a participant could not give a valid turn.
"""

from __future__ import annotations

from pathlib import Path

from moot.core.files import read_text
from moot.engine.driver import Driver
from moot.engine.loop import RunResult
from moot.plugin import Review, Reviewed, Reviewing, Verdict
from moot.protocols.critique import record
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions
from moot.review import HEADING, LOG_MAX_CHARS, Change, bounded, record_line, unique_title

REVIEW_RULES = {
    "reviewer": "Review the change shown below. Propose done (PROPOSING_DONE), or confirm the author's proposal "
    "(DONE), only when no blocking issue remains in the change as it is: that is your approval. While a blocking "
    "issue remains, name it (file and line) and keep the dialogue going with AWAITING.",
    "author": "The code cannot change during this review: explain the change, answer each of the reviewer's "
    "points, accept or push back with reasoning. Propose done when you believe the change can merge as it is.",
}


class ReviewDriver(CritiqueDriver):
    """The Critique Loop's review template, with the change shown to both roles."""

    diff: str = ""
    label: str = ""

    def role_rules(self, role: str) -> str:
        return f"{super().role_rules(role)}\n{REVIEW_RULES.get(role, '')}"

    def shared_context(self) -> list[str]:
        return [f"The change under review ({self.label}):\n```diff\n{self.diff}\n```\n\n"]


def start_review(root: Path, change: Change, *, diff_limit: int, max_rounds: int | None, started: str) -> ReviewDriver:
    """A new review dialogue under ``root``; a second review of the same range gets its own record."""
    topic = unique_title(f"Review of {change.label}", lambda title: record.dialogue_path(root, title).exists())
    context = f"Commit messages:\n{bounded(change.log, LOG_MAX_CHARS)}" if change.log else None
    options = CritiqueOptions(topic=topic, template="review", max_rounds=max_rounds, context=context)
    driver = ReviewDriver.start(root, options, started)
    assert isinstance(driver, ReviewDriver)
    driver.diff = bounded(change.diff, diff_limit)
    driver.label = change.label
    return driver


def verdict_of(driver: CritiqueDriver, result: RunResult) -> Verdict | None:
    """approve, changes_requested, or None when the review failed (no valid turn from a participant)."""
    if driver.failure is not None:
        return None
    outcome = result.outcome
    if outcome is None:
        return None
    return "approve" if outcome.consensus else "changes_requested"


def comment_markdown(driver: CritiqueDriver, result: RunResult, change: Change, verdict: Verdict | None) -> str:
    """The review as a pull-request comment: verdict, why, the discussion, and where the record is."""
    outcome = result.outcome
    models = _models(result)
    lines = [
        f"## moot review: {HEADING[verdict]}",
        "",
        f"**Change:** {change.label} · {change.files} file(s)  ",
        f"**Participants:** {', '.join(f'{role} ({model})' for role, model in models.items()) or 'none'}  ",
        f"**Outcome:** {outcome.name if outcome else 'OPEN'}: {review_reason(driver, result, change)}",
        "",
        "### Discussion",
        "",
    ]
    text, _ = read_text(driver.record_path)
    parsed, _ = record.parse(text or "")
    for turn in parsed.turns if parsed is not None else ():
        lines.append(f"**{turn.role}** (round {turn.round}, {turn.status.value}): {turn.message.strip()}")
        if turn.summary:
            lines.append(f"> Summary: {turn.summary.strip()}")
        lines.append("")
    lines.append(record_line(driver, result))
    return "\n".join(lines) + "\n"


def review_reason(driver: CritiqueDriver, result: RunResult, change: Change) -> str:
    """The outcome's reason as a review gives it. A dialogue at its round limit goes on as a new, longer review:
    only the review's run holds the diff, so a resumed dialogue would go on without it."""
    outcome = result.outcome
    if outcome is None:
        return "the review did not end"
    if outcome.name != "MAX_ROUNDS":
        return outcome.reason
    rounds = driver.config.extended().max_rounds  # as many more as moot run offers
    command = " ".join(part for part in ("moot review", change.again, f"--max-rounds {rounds}") if part)
    return f"{outcome.reason.partition(';')[0]}; for a longer review, run `{command}`."


def _models(result: RunResult) -> dict[str, str]:
    models: dict[str, str] = {}
    for row in result.usage:
        models.setdefault(str(row["role"]), str(row["model"]))
    return models


def _start(root: Path, reviewing: Reviewing) -> Driver:
    limit, rounds = reviewing.diff_limit, reviewing.max_rounds
    return start_review(root, reviewing.change, diff_limit=limit, max_rounds=rounds, started=reviewing.started)


def _read(driver: Driver, result: RunResult, reviewing: Reviewing) -> Reviewed:
    assert isinstance(driver, CritiqueDriver)
    verdict = verdict_of(driver, result)
    comment = comment_markdown(driver, result, reviewing.change, verdict)
    reason = review_reason(driver, result, reviewing.change) if result.outcome else None
    return Reviewed(verdict, comment, reason)


REVIEW = Review(start=_start, read=_read, roles=("author", "reviewer"), rounds=True)

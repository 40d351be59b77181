"""A code review as a deliberation: the Critique Loop's review template (author and reviewer) over a git diff.

The record is an ordinary Critique Loop dialogue (``.dialogues/``). Both roles see the diff; the
author also gets the commit messages. The verdict is read from how the dialogue ended:

- ``approve``: the dialogue concluded (DONE). The reviewer is told to propose or confirm the end
  only when no blocking issue remains, so a concluded review is an approval.
- ``changes_requested``: it ran out of rounds with the reviewer still raising issues, or a
  participant escalated to a person (STUCK).
- an error: a participant could not give a valid turn, so there is no verdict.

Which changes are reviewed (``RANGE``): ``BASE..HEAD`` or ``BASE...HEAD`` as git reads them, or one
commit ``REV`` (its own change, ``REV~1..REV``). Without a range, the uncommitted changes (staged and
not, against HEAD) when there are any, else the last commit: what a pre-commit hook and a person
at the terminal both expect.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from moot.agents.base import AgentRequest
from moot.artifacts import critique as record
from moot.artifacts.base import read_text
from moot.engine.critique import CritiqueDriver, CritiqueOptions
from moot.engine.loop import RunResult
from moot.errors import UserError

Verdict = Literal["approve", "changes_requested"]

# Diffs beyond this are cut (with a note) so the prompt fits a GPT-class context with the dialogue.
DIFF_MAX_CHARS = 40_000
# The embedded model reads 2,048 tokens in all: its diff gets its own, much smaller bound.
LOCAL_DIFF_MAX_CHARS = 1_500
LOG_MAX_CHARS = 2_000

REVIEW_RULES = {
    "reviewer": "Review the change shown below. Propose done (PROPOSING_DONE), or confirm the author's proposal "
    "(DONE), only when no blocking issue remains in the change as it is: that is your approval. While a blocking "
    "issue remains, name it (file and line) and keep the dialogue going with AWAITING.",
    "author": "The code cannot change during this review: explain the change, answer each of the reviewer's "
    "points, accept or push back with reasoning. Propose done when you believe the change can merge as it is.",
}


@dataclass(frozen=True)
class Change:
    """What is under review."""

    label: str  # e.g. "a1b2c3d..e4f5a6b", or "uncommitted changes against a1b2c3d"
    diff: str
    log: str  # the commit messages, for the author
    files: int


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise UserError("moot review needs git: install it and run moot review inside a repository.") from exc
    if done.returncode != 0:
        problem = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise UserError(
            f"git {' '.join(args)} failed ({problem}); run moot review inside a repository with that range."
        )
    return done.stdout


def _short(root: Path, rev: str) -> str:
    return _git(root, "rev-parse", "--short", rev).strip()


def collect_change(root: Path, range_: str | None) -> Change:
    """The diff (and commit messages) that ``range_`` names; see the module's docstring."""
    _git(root, "rev-parse", "--git-dir")  # a clear error outside a repository
    if range_ is None:
        uncommitted = _git(root, "diff", "HEAD")
        if uncommitted.strip():
            return Change(
                f"uncommitted changes against {_short(root, 'HEAD')}",
                uncommitted,
                "",
                _count_files(uncommitted),
            )
        range_ = "HEAD~1..HEAD"
    if ".." not in range_:
        range_ = f"{range_}~1..{range_}"
    base, dots, head = range_.partition("...") if "..." in range_ else range_.partition("..")
    base, head = base or "HEAD", head or "HEAD"
    diff = _git(root, "diff", f"{base}{dots}{head}")
    log = _git(root, "log", "--format=%s%n%n%b", f"{base}..{head}").strip()
    return Change(f"{_short(root, base)}{dots}{_short(root, head)}", diff, log, _count_files(diff))


def _count_files(diff: str) -> int:
    return sum(1 for line in diff.splitlines() if line.startswith("diff --git "))


def bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters of the diff omitted …]\n"


class ReviewDriver(CritiqueDriver):
    """The Critique Loop's review template, with the change shown to both roles."""

    diff: str = ""
    label: str = ""

    def request_for(self, role: str) -> AgentRequest:
        request = super().request_for(role)
        shown = f"The change under review ({self.label}):\n```diff\n{self.diff}\n```"
        return request.model_copy(
            update={
                "system": f"{request.system}\n{REVIEW_RULES.get(role, '')}",
                "prompt": f"{shown}\n\n{request.prompt}",
            }
        )


def start_review(root: Path, change: Change, *, diff_limit: int, max_rounds: int | None, started: str) -> ReviewDriver:
    """A new review dialogue under ``root``; a second review of the same range gets its own record."""
    base_topic = f"Review of {change.label}"
    topic, number = base_topic, 1
    while record.dialogue_path(root, topic).exists():
        number += 1
        topic = f"{base_topic} ({number})"
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
    heading = {"approve": "approve", "changes_requested": "changes requested", None: "no verdict (the review failed)"}
    outcome = result.outcome
    models = _models(result)
    lines = [
        f"## moot review: {heading[verdict]}",
        "",
        f"**Change:** {change.label} · {change.files} file(s)  ",
        f"**Participants:** {', '.join(f'{role} ({model})' for role, model in models.items()) or 'none'}  ",
        f"**Outcome:** {outcome.name if outcome else 'OPEN'}: {outcome.reason if outcome else 'the review did not end'}",
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
    tokens = result.prompt_tokens + result.completion_tokens
    lines.append(f"<sub>Record: `{driver.record_path}` · {result.summary.turns} turn(s) · {tokens} tokens</sub>")
    return "\n".join(lines) + "\n"


def _models(result: RunResult) -> dict[str, str]:
    models: dict[str, str] = {}
    for row in result.usage:
        models.setdefault(str(row["role"]), str(row["model"]))
    return models


def review_path(record_path: Path, extension: str) -> Path:
    """The comment (``md``) or JSON (``json``) of a review, beside its record: ``.NAME.review.EXT``."""
    return record_path.with_name(f".{record_path.name}.review.{extension}")


def review_json(
    driver: CritiqueDriver, result: RunResult, change: Change, verdict: Verdict | None, comment: str
) -> dict[str, Any]:
    """The stable JSON of ``moot review --json``: verdict, comment and artifact, then the details."""
    outcome = result.outcome
    return {
        "verdict": verdict,
        "comment": comment,
        "artifact": str(driver.record_path),
        "range": change.label,
        "files": change.files,
        "outcome": outcome.name if outcome else None,
        "reason": outcome.reason if outcome else None,
        "turns": result.summary.turns,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
    }

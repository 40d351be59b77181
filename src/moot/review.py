"""A code review as a deliberation over a git diff, by any protocol whose plugin declares the ``review`` hook
(:class:`moot.plugin.Review`): the Critique Loop's review template (author and reviewer, the default), or a
council of reviewers. This module is what every review shares: the change, where the records go, the JSON.
How each protocol runs a review and reads its verdict is its package's ``review`` module.

Which changes are reviewed (``RANGE``): ``BASE..HEAD`` or ``BASE...HEAD`` as git reads them, or one
commit ``REV`` (its own change, ``REV~1..REV``). Without a range, the uncommitted changes (staged and
not, against HEAD) when there are any, else the last commit: what a pre-commit hook and a person
at the terminal both expect.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moot.engine.driver import Driver
from moot.engine.loop import RunResult
from moot.errors import UserError
from moot.plugin import Reviewed, Verdict

# A panel's members when none are named: three, each with the --agents spec (or moot.toml's).
COUNCIL_REVIEWERS = ("reviewer-a", "reviewer-b", "reviewer-c")
# A comment's heading for each verdict, whichever protocol reviewed.
HEADING: dict[Verdict | None, str] = {
    "approve": "approve",
    "changes_requested": "changes requested",
    None: "no verdict (the review failed)",
}

# Diffs beyond this are cut (with a note) so the prompt fits a GPT-class context with the dialogue.
DIFF_MAX_CHARS = 40_000
# The embedded model reads 2,048 tokens in all: its diff gets its own, much smaller bound.
LOCAL_DIFF_MAX_CHARS = 1_500
LOG_MAX_CHARS = 2_000


@dataclass(frozen=True)
class Change:
    """What is under review."""

    label: str  # e.g. "a1b2c3d..e4f5a6b", or "uncommitted changes against a1b2c3d"
    diff: str
    log: str  # the commit messages, for the author
    files: int
    again: str = ""  # the RANGE argument that names this change again ("" for the uncommitted changes)


def _git(root: Path, *args: str, problem: str | None = None) -> str:
    """git's output; when git fails, a UserError that is ``problem`` or else names the command and git's own
    last line (never git's usage text)."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise UserError("moot review needs git: install it and run moot review inside a repository.") from exc
    if done.returncode != 0:
        said = next((line for line in done.stderr.splitlines() if line.startswith(("fatal:", "error:"))), "")
        raise UserError(
            problem or f"git {' '.join(args)} failed ({said.strip() or 'no message'}); check the repository."
        )
    return done.stdout


def _short(root: Path, rev: str) -> str:
    return _git(root, "rev-parse", "--short", rev).strip()


def _commit(root: Path, rev: str) -> bool:
    """Whether ``rev`` names a commit of the repository at ``root``."""
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0


def records_root(root: Path) -> Path:
    """Where a review's records go by default: ``moot/`` in the repository's git directory (the common one, shared
    by its worktrees). git never lists it as a change, ``git clean`` and a checkout leave it alone, and nothing in
    the reviewed tree (not even .gitignore) has to change for that."""
    common = Path(_git(root, "rev-parse", "--git-common-dir").strip())
    return (common if common.is_absolute() else root / common) / "moot"


def collect_change(root: Path, range_: str | None) -> Change:
    """The diff (and commit messages) that ``range_`` names; see the module's docstring."""
    _git(root, "rev-parse", "--git-dir", problem=f"{root} is not inside a git repository; run moot review in one.")
    if not _commit(root, "HEAD"):
        raise UserError("the repository has no commit yet; commit once, then moot review reviews the next change.")
    if range_ is None:
        uncommitted = _git(root, "diff", "HEAD")
        if uncommitted.strip():
            return Change(
                f"uncommitted changes against {_short(root, 'HEAD')}",
                uncommitted,
                "",
                _count_files(uncommitted),
            )
        range_ = "HEAD"
    if ".." not in range_:
        return _one_commit(root, range_)
    base, dots, head = range_.partition("...") if "..." in range_ else range_.partition("..")
    base, head = base or "HEAD", head or "HEAD"
    for rev in (base, head):
        if not _commit(root, rev):
            raise UserError(
                f"{rev!r} in {range_!r} names no commit here; give a range like HEAD~3..HEAD or BASE...HEAD."
            )
    diff = _git(root, "diff", "--end-of-options", f"{base}{dots}{head}")
    log = _git(root, "log", "--format=%s%n%n%b", "--end-of-options", f"{base}..{head}").strip()
    label = f"{_short(root, base)}{dots}{_short(root, head)}"
    return Change(label, diff, log, _count_files(diff), again=label)


def _one_commit(root: Path, rev: str) -> Change:
    """The change one commit made: against its parent, or for a first commit against the empty tree."""
    if not _commit(root, rev):
        raise UserError(f"{rev!r} names no commit here; give a commit, or a range like HEAD~3..HEAD.")
    log = _git(root, "log", "-1", "--format=%s%n%n%b", "--end-of-options", rev).strip()
    if _commit(root, f"{rev}~1"):
        diff = _git(root, "diff", "--end-of-options", f"{rev}~1..{rev}")
        label = f"{_short(root, f'{rev}~1')}..{_short(root, rev)}"
        return Change(label, diff, log, _count_files(diff), again=label)
    diff = _git(root, "show", "--format=", "--end-of-options", rev)
    return Change(f"{_short(root, rev)} (the first commit)", diff, log, _count_files(diff), again=_short(root, rev))


def _count_files(diff: str) -> int:
    return sum(1 for line in diff.splitlines() if line.startswith("diff --git "))


def bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters of the diff omitted …]\n"


def unique_title(base: str, taken: Callable[[str], bool]) -> str:
    """``base``, or ``base (2)``, ``(3)``, … : the first title ``taken`` says is free."""
    title, number = base, 1
    while taken(title):
        number += 1
        title = f"{base} ({number})"
    return title


def record_line(driver: Driver, result: RunResult) -> str:
    """A comment's last line: where the record is, and what the review took."""
    tokens = result.prompt_tokens + result.completion_tokens
    return f"<sub>Record: `{driver.record_path}` · {result.summary.turns} turn(s) · {tokens} tokens</sub>"


def review_path(record_path: Path, extension: str) -> Path:
    """The comment (``md``) or JSON (``json``) of a review, beside its record: ``.NAME.review.EXT``."""
    return record_path.with_name(f".{record_path.name}.review.{extension}")


def review_json(driver: Driver, result: RunResult, change: Change, reviewed: Reviewed) -> dict[str, Any]:
    """The stable JSON of ``moot review --json``: verdict, comment and artifact, then the details; ``approved`` is
    false with ``not_approved`` saying why when a degraded council's approval was held back."""
    outcome = result.outcome
    return {
        "verdict": reviewed.verdict,
        "comment": reviewed.comment,
        "artifact": str(driver.record_path),
        "range": change.label,
        "files": change.files,
        "outcome": outcome.name if outcome else None,
        "reason": reviewed.held_back or reviewed.reason,
        "degraded": outcome.degraded if outcome else None,
        "approved": reviewed.verdict == "approve",
        "not_approved": reviewed.held_back,
        "turns": result.summary.turns,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
    }

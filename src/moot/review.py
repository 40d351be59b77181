"""A code review as a deliberation over a git diff: the Critique Loop's review template (author and
reviewer), or a council of reviewers.

The record of the review template is an ordinary Critique Loop dialogue (``.dialogues/``). Both roles
see the diff; the author also gets the commit messages. The verdict is read from how the dialogue ended:

- ``approve``: the dialogue concluded (DONE). The reviewer is told to propose or confirm the end
  only when no blocking issue remains, so a concluded review is an approval.
- ``changes_requested``: it ran out of rounds with the reviewer still raising issues, or a
  participant escalated to a person (STUCK).
- an error: a participant could not give a valid turn, so there is no verdict.

A council review is an ordinary Council record (``.council/``) whose question is the change (the
diff and the commit messages): every member reviews it on its own, the members rank each other's
reviews anonymously, and the chairman writes the council's review from the ranking. The verdict is
the one the chairman's final answer states on its ``Verdict:`` line; a council that ends without a
synthesis (no quorum, a failed chairman), or whose synthesis states no verdict, gives none (an error).
A degraded council (a member gave no answer or review, or a member wrote in a failed chairman's place)
never approves: its approval becomes changes requested, and the comment and the JSON say why.

Which changes are reviewed (``RANGE``): ``BASE..HEAD`` or ``BASE...HEAD`` as git reads them, or one
commit ``REV`` (its own change, ``REV~1..REV``). Without a range, the uncommitted changes (staged and
not, against HEAD) when there are any, else the last commit: what a pre-commit hook and a person
at the terminal both expect.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from moot.core.files import read_text
from moot.engine.driver import Driver
from moot.engine.loop import RunResult
from moot.errors import UserError
from moot.protocols.council import record as council_record
from moot.protocols.council.driver import CouncilDriver, CouncilOptions
from moot.protocols.critique import record
from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions

Verdict = Literal["approve", "changes_requested"]

# A council review's members when none are named: three, each with the --agents spec (or moot.toml's).
COUNCIL_REVIEWERS = ("reviewer-a", "reviewer-b", "reviewer-c")
_VERDICT_LINE = re.compile(r"verdict\W{0,3}\s*(approve|changes[ _-]requested)", re.IGNORECASE)
NO_VERDICT = "the chairman's final answer states no verdict (a 'Verdict: approve' or 'Verdict: changes requested' line)"

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
    topic = _unique_title(f"Review of {change.label}", lambda title: record.dialogue_path(root, title).exists())
    context = f"Commit messages:\n{bounded(change.log, LOG_MAX_CHARS)}" if change.log else None
    options = CritiqueOptions(topic=topic, template="review", max_rounds=max_rounds, context=context)
    driver = ReviewDriver.start(root, options, started)
    assert isinstance(driver, ReviewDriver)
    driver.diff = bounded(change.diff, diff_limit)
    driver.label = change.label
    return driver


def _unique_title(base: str, taken: Callable[[str], bool]) -> str:
    """``base``, or ``base (2)``, ``(3)``, … : the first title ``taken`` says is free."""
    title, number = base, 1
    while taken(title):
        number += 1
        title = f"{base} ({number})"
    return title


def council_question(title: str, change: Change, diff_limit: int) -> str:
    """What a council of reviewers answers: the change, and how to state the verdict."""
    log = f"\n\nCommit messages:\n{bounded(change.log, LOG_MAX_CHARS)}" if change.log else ""
    return (
        f"{title}: should this change merge as it is?\n\n"
        "Start your answer with one line, 'Verdict: approve' or 'Verdict: changes requested'. Approve only when "
        "no blocking issue remains; name each blocking issue with its file and line."
        f"{log}\n\nThe change ({change.files} file(s)):\n```diff\n{bounded(change.diff, diff_limit)}\n```"
    )


def start_council_review(
    root: Path,
    change: Change,
    members: Sequence[tuple[str, str]],
    *,
    chairman: str | None,
    diff_limit: int,
    started: str,
) -> CouncilDriver:
    """A new council review under ``root``; a second review of the same range gets its own record."""

    def taken(title: str) -> bool:
        return council_record.council_path(root, council_question(title, change, diff_limit)).exists()

    title = _unique_title(f"Review of {change.label}", taken)
    options = CouncilOptions(
        question=council_question(title, change, diff_limit), members=tuple(members), chairman=chairman
    )
    return CouncilDriver.start(root, options, started)


def council_verdict(driver: CouncilDriver) -> Verdict | None:
    """The verdict on the chairman's ``Verdict:`` line, or None (no synthesis, or no verdict stated)."""
    synthesis = driver.state.synthesis
    found = _VERDICT_LINE.search(synthesis.answer) if synthesis is not None else None
    if found is None:
        return None
    return "approve" if found[1].lower() == "approve" else "changes_requested"


def gated_verdict(driver: CouncilDriver, verdict: Verdict | None) -> tuple[Verdict | None, str | None]:
    """The council's verdict as the gate gives it, and why an approval was held back: a degraded council speaks for
    less than the whole panel, so its chairman's approval is not the council's (changes requested instead)."""
    outcome = driver.outcome()
    degraded = outcome.degraded if outcome is not None else None
    if verdict != "approve" or degraded is None:
        return verdict, None
    return "changes_requested", f"not approved: the council is degraded ({degraded}), so its approval does not count"


def council_comment(
    driver: CouncilDriver, result: RunResult, change: Change, verdict: Verdict | None, held_back: str | None = None
) -> str:
    """A council review as a pull-request comment: verdict, the chairman's review, its basis, the dissent; and why
    an approval was ``held_back`` (:func:`gated_verdict`)."""
    heading = {"approve": "approve", "changes_requested": "changes requested", None: "no verdict (the review failed)"}
    outcome = result.outcome
    config, state = driver.config, driver.state
    members = ", ".join(f"{m.name} ({m.model})" for m in config.members)
    chair = config.chairman if config.chairman_model is None else f"a separate chairman ({config.chairman_model})"
    lines = [
        f"## moot review (council): {heading[verdict]}",
        "",
        f"**Change:** {change.label} · {change.files} file(s)  ",
        f"**Council:** {members}; chaired by {chair}  ",
        f"**Outcome:** {outcome.name if outcome else 'OPEN'}: {outcome.reason if outcome else 'the review did not end'}",
        "",
    ]
    if held_back is not None:
        lines += [f"**{held_back[0].upper()}{held_back[1:]}.**", ""]
    if state.synthesis is not None:
        ranking = ", ".join(f"{member} {points}" for member, points in state.synthesis.ranking)
        lines += ["### The council's review", "", state.synthesis.answer, "", f"**Basis:** {state.synthesis.basis}"]
        lines += ["", f"**Ranking of the members' reviews** (Borda points): {ranking}", ""]
        lines += [
            f"- **{d.member}** held: {d.position} — not adopted: {d.why_not_adopted}" for d in state.synthesis.dissent
        ]
    else:
        lines += ["### The members' reviews", ""]
        lines += [f"**{a.member}:** {a.text}\n" for a in state.valid_answers()]
    tokens = result.prompt_tokens + result.completion_tokens
    lines += ["", f"<sub>Record: `{driver.record_path}` · {result.summary.turns} turn(s) · {tokens} tokens</sub>"]
    return "\n".join(lines) + "\n"


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
    tokens = result.prompt_tokens + result.completion_tokens
    lines.append(f"<sub>Record: `{driver.record_path}` · {result.summary.turns} turn(s) · {tokens} tokens</sub>")
    return "\n".join(lines) + "\n"


def review_reason(driver: Driver, result: RunResult, change: Change) -> str:
    """The outcome's reason as a review gives it. A dialogue at its round limit goes on as a new, longer review:
    only the review's run holds the diff, so a resumed dialogue would go on without it."""
    outcome = result.outcome
    if outcome is None:
        return "the review did not end"
    if outcome.name != "MAX_ROUNDS" or not isinstance(driver, CritiqueDriver):
        return outcome.reason
    rounds = driver.config.extended().max_rounds  # as many more as moot run offers
    command = " ".join(part for part in ("moot review", change.again, f"--max-rounds {rounds}") if part)
    return f"{outcome.reason.partition(';')[0]}; for a longer review, run `{command}`."


def _models(result: RunResult) -> dict[str, str]:
    models: dict[str, str] = {}
    for row in result.usage:
        models.setdefault(str(row["role"]), str(row["model"]))
    return models


def review_path(record_path: Path, extension: str) -> Path:
    """The comment (``md``) or JSON (``json``) of a review, beside its record: ``.NAME.review.EXT``."""
    return record_path.with_name(f".{record_path.name}.review.{extension}")


def review_json(
    driver: Driver,
    result: RunResult,
    change: Change,
    verdict: Verdict | None,
    comment: str,
    held_back: str | None = None,
) -> dict[str, Any]:
    """The stable JSON of ``moot review --json``: verdict, comment and artifact, then the details; ``approved`` is
    false with ``not_approved`` saying why when a degraded council's approval was held back."""
    outcome = result.outcome
    reason = held_back or (review_reason(driver, result, change) if outcome else None)
    if verdict is None and outcome is not None and outcome.consensus and isinstance(driver, CouncilDriver):
        reason = NO_VERDICT  # the council synthesized, but its chairman gave the gate nothing to read
    return {
        "verdict": verdict,
        "comment": comment,
        "artifact": str(driver.record_path),
        "range": change.label,
        "files": change.files,
        "outcome": outcome.name if outcome else None,
        "reason": reason,
        "degraded": outcome.degraded if outcome else None,
        "approved": verdict == "approve",
        "not_approved": held_back,
        "turns": result.summary.turns,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
    }

"""``moot review --council``: a council of reviewers over the change.

The record is an ordinary Council record (``.council/``) whose question is the change (the diff and the commit
messages): every member reviews it on its own, the members rank each other's reviews anonymously, and the
chairman writes the council's review from the ranking. The verdict is the one the chairman's final answer states
on its ``Verdict:`` line; a council that ends without a synthesis (no quorum, a failed chairman), or whose
synthesis states no verdict, gives none (an error). A degraded council (a member gave no answer or review, or a
member wrote in a failed chairman's place) never approves: its approval becomes changes requested, and the
comment and the JSON say why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from moot.engine.driver import Driver
from moot.engine.loop import RunResult
from moot.plugin import Review, Reviewed, Reviewing, Verdict
from moot.protocols.council import record
from moot.protocols.council.driver import CouncilDriver, CouncilOptions
from moot.review import HEADING, LOG_MAX_CHARS, Change, bounded, record_line, unique_title

_VERDICT_LINE = re.compile(r"verdict\W{0,3}\s*(approve|changes[ _-]requested)", re.IGNORECASE)
NO_VERDICT = "the chairman's final answer states no verdict (a 'Verdict: approve' or 'Verdict: changes requested' line)"


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
        return record.council_path(root, council_question(title, change, diff_limit)).exists()

    title = unique_title(f"Review of {change.label}", taken)
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
    outcome = result.outcome
    config, state = driver.config, driver.state
    members = ", ".join(f"{m.name} ({m.model})" for m in config.members)
    chair = config.chairman if config.chairman_model is None else f"a separate chairman ({config.chairman_model})"
    lines = [
        f"## moot review (council): {HEADING[verdict]}",
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
    lines += ["", record_line(driver, result)]
    return "\n".join(lines) + "\n"


def _start(root: Path, reviewing: Reviewing) -> Driver:
    return start_council_review(
        root,
        reviewing.change,
        reviewing.panel,
        chairman=reviewing.chairman,
        diff_limit=reviewing.diff_limit,
        started=reviewing.started,
    )


def _read(driver: Driver, result: RunResult, reviewing: Reviewing) -> Reviewed:
    assert isinstance(driver, CouncilDriver)
    verdict, held_back = gated_verdict(driver, council_verdict(driver))
    comment = council_comment(driver, result, reviewing.change, verdict, held_back)
    outcome = result.outcome
    reason = outcome.reason if outcome is not None else None
    if verdict is None and outcome is not None and outcome.consensus:
        reason = NO_VERDICT  # the council synthesized, but its chairman gave the gate nothing to read
    return Reviewed(verdict, comment, reason, held_back)


REVIEW = Review(start=_start, read=_read, chairman="chairman")

"""Grounding rules: a cited fact must be in the file it cites. Pure: the files are read elsewhere.

Whoever can read the sources (``moot.sources.verify``) turns each quoted excerpt or evidence item into a
:class:`CitationCheck`; the functions here turn those checks into violations with rule ids, the same for
``moot run``, the agent tools and ``moot check``. The severity is the caller's: an error where moot wrote
the record or the write is being made, a warning for a record written by someone else (the seeds do not
ask for verification).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from moot.core.machine import Rule, RuleBook
from moot.errors import Severity, Violation

NEAR_LINES = 5  # "at or near the cited line": this many lines before or after it

RULES = RuleBook(
    [
        Rule(
            "CITATION_UNVERIFIED",
            f"A quoted excerpt or evidence content appears in the file it cites (whitespace and case aside), "
            f"within {NEAR_LINES} lines of the cited line.",
        ),
        Rule(
            "EVIDENCE_UNGROUNDED",
            "With sources, an evidence item cites a source file as path:line (or comes from the evidence pool).",
        ),
        Rule("FACT_BASED_UNVERIFIED", "A fact-based Agora turn with sources carries at least one verified item."),
    ]
)


class CitationCheck(BaseModel):
    """What reading the sources found for one citation."""

    model_config = ConfigDict(frozen=True)

    where: str  # "evidence item 1", "the novel argument's support 2"
    cited: str  # the source as cited: "src/app.py:12"
    excerpt: str
    verified: bool
    found_at: str | None = None  # path:line where the excerpt was found
    reason: str | None = None  # why not, phrased to follow "not verified: "
    grounded: bool = True  # False when the item cites no source file at all
    from_pool: bool = False


def citation_violations(checks: Iterable[CitationCheck], severity: Severity = Severity.ERROR) -> list[Violation]:
    """One violation per check that failed, naming the fix."""
    found: list[Violation] = []
    for check in checks:
        if check.verified:
            continue
        if not check.grounded:
            message = (
                f"{check.where} cites {check.cited!r}, which is no source file; cite a file of the sources as "
                f"path:line and copy the text from that line (or cite an item of the evidence pool)."
            )
            violation = RULES.violation("EVIDENCE_UNGROUNDED", message)
        else:
            message = (
                f"{check.where} is not verified: {check.reason}; quote the file word for word and cite the line "
                f"it is on."
            )
            violation = RULES.violation("CITATION_UNVERIFIED", message)
        found.append(violation.model_copy(update={"severity": severity}))
    return found


def fact_based_violations(checks: Sequence[CitationCheck], severity: Severity = Severity.ERROR) -> list[Violation]:
    """A fact-based turn needs one verified item (its missing evidence is the protocol's own rule)."""
    if not checks or any(check.verified for check in checks):
        return []
    message = "the debate is fact-based but no evidence item of the turn is verified; cite one from the sources."
    return [RULES.violation("FACT_BASED_UNVERIFIED", message).model_copy(update={"severity": severity})]


def verified_share(checks: Sequence[CitationCheck]) -> dict[str, float | int]:
    verified = sum(1 for check in checks if check.verified)
    return {"cited": len(checks), "verified": verified, "share": round(verified / len(checks), 3) if checks else 0.0}

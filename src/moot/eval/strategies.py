"""The ways ``moot eval`` answers a task, and what each one asks of which agent.

- ``single``: the first agent answers once.
- ``sc:K``: self-consistency; the first agent answers K times, sampled independently; the majority wins.
- ``sc:match``: self-consistency with K chosen so it spends as many tokens per task as the run's first
  debate or council.
- ``vote``: every named agent answers once; the majority wins.
- ``debate:NxR`` (or ``N×R``): Du et al. 2023. N agents answer sealed and independently, then R rounds in
  which each sees the others' previous answers and answers again; the majority of the last round wins.
- ``council:N`` (``council`` is ``council:3``): the Council protocol. N members answer sealed; each member
  with a readable answer ranks the others' answers, shown anonymised as Answer A, B, … in the order the
  protocol's shuffle gives it; the first member chairs and gives the final answer from every answer, review
  and the Borda ranking. Fewer than two readable answers is no quorum: the council has no answer.

A majority ignores replies with no readable answer; a tie goes to the answer given first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from moot.errors import UserError
from moot.protocols.council.machine import MAX_MEMBERS, label

MATCH = "match"
_DEBATE = re.compile(r"debate:(\d+)[x×](\d+)")
_SC = re.compile(r"sc:(\d+|match)")
_COUNCIL = re.compile(r"council(?::(\d+))?")
COUNCIL_MEMBERS = 3  # ``council`` alone


@dataclass(frozen=True)
class Strategy:
    name: str  # as the user wrote it, normalised (× -> x)
    kind: str  # "single", "sc", "vote", "debate" or "council"
    samples: int = 1  # sc: K (0 until sc:match is resolved)
    agents: int = 1  # debate and council: N
    rounds: int = 0  # debate: R

    @property
    def matched(self) -> bool:
        return self.kind == "sc" and self.name == f"sc:{MATCH}"

    @property
    def deliberates(self) -> bool:
        """Its agents see each other's answers: the strategies sc:match spends as much as."""
        return self.kind in ("debate", "council")


def parse_strategy(text: str) -> Strategy:
    spec = text.strip().replace("×", "x")
    if spec == "single":
        return Strategy("single", "single")
    if spec == "vote":
        return Strategy("vote", "vote")
    if match := _SC.fullmatch(spec):
        k = match.group(1)
        if k == MATCH:
            return Strategy(spec, "sc", samples=0)
        if int(k) < 1:
            raise UserError(f"--strategy {text}: K must be at least 1; write e.g. sc:5.")
        return Strategy(spec, "sc", samples=int(k))
    if match := _DEBATE.fullmatch(spec):
        n, r = int(match.group(1)), int(match.group(2))
        if n < 2:
            raise UserError(f"--strategy {text}: a debate needs at least 2 agents; write e.g. debate:3x2.")
        return Strategy(spec, "debate", agents=n, rounds=r)
    if match := _COUNCIL.fullmatch(spec):
        n = int(match.group(1) or COUNCIL_MEMBERS)
        if not 2 <= n <= MAX_MEMBERS:
            raise UserError(f"--strategy {text}: a council has 2 to {MAX_MEMBERS} members; write e.g. council:3.")
        return Strategy(spec, "council", agents=n)
    raise UserError(
        f"--strategy {text!r} is unknown; use single, sc:K, sc:match, vote, debate:NxR (e.g. debate:3x2) "
        "or council:N (e.g. council:3)."
    )


def majority(answers: Sequence[str | None]) -> str | None:
    """The most common readable answer; a tie goes to the one given first; None if none was readable."""
    readable = [a for a in answers if a is not None]
    if not readable:
        return None
    counts = Counter(readable)
    top = max(counts.values())
    return next(a for a in readable if counts[a] == top)


def first_prompt(question: str, ask: str) -> str:
    return f"{question}\n\n{ask}"


def debate_prompt(question: str, ask: str, own: str, others: Sequence[str]) -> str:
    """Du et al.'s round prompt: the agent's previous answer, the other agents' answers, then the request."""
    shown = "\n\n".join(f"One agent's answer:\n```\n{text}\n```" for text in others)
    return (
        f"{question}\n\nYour previous answer:\n```\n{own}\n```\n\n"
        f"These are the answers of the other agents:\n\n{shown}\n\n"
        "Use their reasoning as additional advice and give your updated answer. " + ask
    )


def review_prompt(question: str, shown: Sequence[str]) -> str:
    """A council member's review: the anonymised answers as Answer A, B, …, to be ranked best first."""
    labels = [label(index) for index in range(len(shown))]
    answers = "\n\n".join(f"{name}:\n```\n{text}\n```" for name, text in zip(labels, shown, strict=True))
    return (
        f"You are evaluating different answers to the following question.\n\n{question}\n\n{answers}\n\n"
        "Evaluate each answer in a sentence, then rank all of them from best to worst, each exactly once, "
        f"on a last line of the form: Ranking: {', '.join(labels)}"
    )


def read_ranking(reply: str, shown: int) -> list[int] | None:
    """The indexes of the answers a review ranks, best first, from its last ``Ranking:`` line.

    None unless that line names every shown answer exactly once (by ``Answer B`` or a bare ``B``).
    """
    lines = [line for line in reply.splitlines() if line.strip().lower().startswith("ranking:")]
    if not lines:
        return None
    letters = re.findall(r"(?<![A-Za-z])(?:answer\s+)?([A-Z])(?![A-Za-z])", lines[-1].split(":", 1)[1], re.IGNORECASE)
    order = [ord(letter.upper()) - ord("A") for letter in letters]
    return order if sorted(order) == list(range(shown)) else None


def synthesis_prompt(
    question: str,
    ask: str,
    answers: Sequence[tuple[str, str]],
    reviews: Sequence[tuple[str, Sequence[str]]],
    ranking: Sequence[tuple[str, int]],
    agreement: str,
) -> str:
    """The chairman's prompt: every answer and review with its author, the Borda ranking and Kendall's W."""
    shown = "\n\n".join(f"{member}'s answer:\n```\n{text}\n```" for member, text in answers)
    ranked = "\n".join(f"- {reviewer}: {', '.join(order)}" for reviewer, order in reviews) or "- (no valid review)"
    aggregate = "\n".join(
        f"{rank}. {member} ({points} Borda points)" for rank, (member, points) in enumerate(ranking, 1)
    )
    return (
        f"You chair a council. {question}\n\n{shown}\n\nThe members' rankings, best first:\n{ranked}\n\n"
        f"The aggregate ranking:\n{aggregate}\nAgreement between the reviewers (Kendall's W): {agreement}\n\n"
        f"Write the council's final answer; say how the ranking shaped it. {ask}"
    )

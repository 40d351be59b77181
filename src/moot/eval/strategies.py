"""The ways ``moot eval`` answers a task, and what each one asks of which agent.

- ``single``: the first agent answers once.
- ``sc:K``: self-consistency; the first agent answers K times, sampled independently; the majority wins.
- ``sc:match``: self-consistency with K chosen so it spends as many tokens per task as the run's debate.
- ``vote``: every named agent answers once; the majority wins.
- ``debate:NxR`` (or ``N×R``): Du et al. 2023. N agents answer sealed and independently, then R rounds in
  which each sees the others' previous answers and answers again; the majority of the last round wins.

A majority ignores replies with no readable answer; a tie goes to the answer given first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from moot.errors import UserError

MATCH = "match"
_DEBATE = re.compile(r"debate:(\d+)[x×](\d+)")
_SC = re.compile(r"sc:(\d+|match)")


@dataclass(frozen=True)
class Strategy:
    name: str  # as the user wrote it, normalised (× -> x)
    kind: str  # "single", "sc", "vote" or "debate"
    samples: int = 1  # sc: K (0 until sc:match is resolved)
    agents: int = 1  # debate: N
    rounds: int = 0  # debate: R

    @property
    def matched(self) -> bool:
        return self.kind == "sc" and self.name == f"sc:{MATCH}"


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
    raise UserError(
        f"--strategy {text!r} is unknown; use single, sc:K, sc:match, vote or debate:NxR (e.g. debate:3x2)."
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

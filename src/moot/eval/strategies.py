"""The ways ``moot eval`` answers a task, and what each one asks of which agent.

- ``single``: the first agent answers once.
- ``sc:K``: self-consistency; the first agent answers K times, sampled independently; the majority wins.
- ``sc:match=D`` (``sc:match`` alone: the first deliberation): self-consistency spending what the deliberation D
  spends. Its first samples are D's own round-0 answers (shared openings); the rest are asked of D's agents in
  turn. K is fitted once, on the tasks D had finished when it first ran, and kept (see :mod:`moot.eval.run`).
- ``vote``: every named agent answers once; the majority wins.
- ``protocol:NAME[:KEY=VALUE,…]``: a registered protocol run by its own driver through moot's engine, as
  ``moot run`` runs it, on the task's question; its answer is read from the record through the protocol's
  ``Analysis.answer``. ``members=N`` sets the panel (default 3: the named agents in turn); the other keys are
  the protocol's options. ``council`` and ``council:N`` are ``protocol:council`` with N members.
- ``debate:NxR`` (or ``N×R``): a baseline, not a moot protocol: Du et al. 2023's free-text debate. N agents
  answer sealed and independently, then R rounds in which each sees the others' previous answers and answers
  again; the majority of the last round wins.

A majority ignores replies with no readable answer; a tie goes to the answer given first.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from moot.errors import UserError

MATCH = "match"
_DEBATE = re.compile(r"debate:(\d+)[x×](\d+)")
_SC = re.compile(r"sc:(\d+)")
_MATCH = re.compile(r"sc:match(?:=(?P<target>.+))?")
_COUNCIL = re.compile(r"council(?::(\d+))?")
_PROTOCOL = re.compile(r"protocol:(?P<name>[A-Za-z0-9_.-]+)(?::(?P<options>.*))?")
PANEL = 3  # a protocol's members when ``members`` is not given
MEMBERS = "members"


@dataclass(frozen=True)
class Strategy:
    name: str  # as the user wrote it, normalised (× -> x, council -> protocol:council)
    kind: str  # "single", "sc", "match", "vote", "debate" or "protocol"
    samples: int = 1  # sc: K
    agents: int = 1  # debate and protocol: the panel's size
    rounds: int = 0  # debate: R
    protocol: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # the protocol's own options
    target: str | None = None  # sc:match: the deliberation it matches (None: the first one)
    added: bool = False  # added by moot eval to compare a deliberation with

    @property
    def deliberates(self) -> bool:
        """Its agents see each other's answers: what the verdict table compares with the baselines."""
        return self.kind in ("debate", "protocol")

    @property
    def label(self) -> str:
        """The name as reports show it."""
        if self.kind == "debate":
            return f"{self.name} (free-text baseline)"
        return self.name


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _split_options(text: str) -> list[str]:
    """``a=1,b=[1,2],c="x,y"`` -> its three items: commas inside brackets or quotes do not split."""
    items, depth, quoted, start = [], 0, False, 0
    for index, char in enumerate(text):
        if char == '"' and (index == 0 or text[index - 1] != "\\"):
            quoted = not quoted
        elif not quoted and char in "[{":
            depth += 1
        elif not quoted and char in "]}":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            items.append(text[start:index])
            start = index + 1
    items.append(text[start:])
    return [item.strip() for item in items if item.strip()]


def _protocol(text: str, name: str, options_text: str | None) -> Strategy:
    options: dict[str, Any] = {}
    for item in _split_options(options_text or ""):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--strategy {text}: {item!r} is not KEY=VALUE; write e.g. protocol:council:members=3.")
        options[key.strip()] = _value(value.strip())
    members = options.pop(MEMBERS, PANEL)
    if not isinstance(members, int) or isinstance(members, bool) or members < 1:
        raise UserError(f"--strategy {text}: members must be a whole number of at least 1; write e.g. members=3.")
    return Strategy(text, "protocol", agents=members, protocol=name, options=options)


def parse_strategy(text: str) -> Strategy:
    spec = text.strip().replace("×", "x")
    if spec == "single":
        return Strategy("single", "single")
    if spec == "vote":
        return Strategy("vote", "vote")
    if match := _SC.fullmatch(spec):
        if int(match.group(1)) < 1:
            raise UserError(f"--strategy {text}: K must be at least 1; write e.g. sc:5.")
        return Strategy(spec, "sc", samples=int(match.group(1)))
    if match := _MATCH.fullmatch(spec):
        target = match.group("target")
        return Strategy(spec, "match", target=parse_strategy(target).name if target else None)
    if match := _DEBATE.fullmatch(spec):
        n, r = int(match.group(1)), int(match.group(2))
        if n < 2:
            raise UserError(f"--strategy {text}: a debate needs at least 2 agents; write e.g. debate:3x2.")
        return Strategy(spec, "debate", agents=n, rounds=r)
    if match := _COUNCIL.fullmatch(spec):
        members = match.group(1)
        return parse_strategy("protocol:council" + (f":{MEMBERS}={members}" if members else ""))
    if match := _PROTOCOL.fullmatch(spec):
        return _protocol(spec, match.group("name"), match.group("options"))
    raise UserError(
        f"--strategy {text!r} is unknown; use single, sc:K, sc:match[=STRATEGY], vote, protocol:NAME[:KEY=VALUE,…] "
        "(e.g. protocol:council) or debate:NxR (e.g. debate:3x2)."
    )


def matched(target: str) -> Strategy:
    """The self-consistency matched to the deliberation named ``target``."""
    return Strategy(f"sc:{MATCH}={target}", "match", target=target)


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

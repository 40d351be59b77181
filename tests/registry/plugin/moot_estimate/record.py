"""Estimate's record: ``.estimates/<slug>.md``, a header, then one line per estimate, each followed by the hash
chain's mark (moot.plugin.ChainMark), so that ``moot check`` finds an edited, removed or added estimate.

# Estimate: "How many piano tuners work in Chicago?"
Estimators: ada, bo
Rounds: 2

- ada (round 1): 120 — 3M people, one piano per 20 households, a tuning a year, 1,000 tunings per tuner.
<!-- moot-chain turns=1 head=… -->
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple

from moot.plugin import (
    FILE_RULES,
    ChainMark,
    CheckReport,
    RecordFormat,
    Rule,
    RuleBook,
    atomic_write_text,
    inspect_chain,
    marks_of,
    read_text,
    record_chain,
    replay_report,
    slugify,
    unreadable,
)
from moot_estimate.protocol import Config, Estimate, EstimateProtocol, number

FORMAT_RULES = RuleBook([Rule("ESTIMATE_LINE", "Each estimate is one line '- NAME (round N): NUMBER — REASON'.")])
TITLE = "# Estimate: "
_HEADER = re.compile(r"# Estimate: (?P<question>.+)\nEstimators: (?P<names>.+)\nRounds: (?P<rounds>\d+)\n\n")
_TURN = re.compile(r"- (\S+) \(round (\d+)\): (\S+) — (.*)$")


class Parsed(NamedTuple):
    config: Config | None
    estimates: list[Estimate]
    texts: list[str]  # each estimate's line, as the chain digests it
    lines: list[int]
    marks: list[ChainMark]
    problems: list[tuple[int, str]]


def path_for(root: Path, question: str) -> Path:
    return root / ".estimates" / f"{slugify(question, 'estimate')}.md"


def turn_text(e: Estimate) -> str:
    return f"- {e.estimator} (round {e.round}): {number(e.value)} — {e.reason}"


def render(config: Config, estimates: tuple[Estimate, ...]) -> str:
    header = f"{TITLE}{json.dumps(config.question, ensure_ascii=False)}\nEstimators: {', '.join(config.estimators)}"
    texts = [turn_text(e) for e in estimates]
    body = "".join(f"{text}\n{mark.line()}\n" for text, mark in zip(texts, marks_of(texts), strict=True))
    return f"{header}\nRounds: {config.rounds}\n\n{body}"


def parse(text: str) -> Parsed:
    """The record's parts; a line that is neither an estimate nor its mark is a problem, not an exception."""
    header = _HEADER.match(text)
    try:
        names = tuple(header["names"].split(", ")) if header else ()
        config = Config(question=json.loads(header["question"]), estimators=names, rounds=int(header["rounds"]))
    except (TypeError, ValueError):
        return Parsed(None, [], [], [], [], [(1, "the record must start with its header")])
    parsed = Parsed(config, [], [], [], [], [])
    first = text[: header.end()].count("\n") + 1 if header else 1
    for number_, line in enumerate(text[header.end() if header else 0 :].splitlines(), start=first):
        mark, turn = ChainMark.parse(line), _TURN.match(line)
        if mark is not None:
            parsed.marks.append(mark)
        elif turn is not None and re.fullmatch(r"-?\d+(\.\d+)?(e[-+]?\d+)?", turn[3]):
            parsed.estimates.append(
                Estimate(estimator=turn[1], round=int(turn[2]), value=float(turn[3]), reason=turn[4])
            )
            parsed.texts.append(line)
            parsed.lines.append(number_)
        else:
            parsed.problems.append((number_, f"line {number_} is not '- NAME (round N): NUMBER — REASON'"))
    return parsed


def write(path: Path, config: Config, estimates: tuple[Estimate, ...]) -> None:
    """The whole record, replaced atomically, then its chain: a crash leaves the chain one write short at most."""
    atomic_write_text(path, render(config, estimates))
    record_chain(path, [turn_text(e) for e in estimates])


def check(path: Path) -> CheckReport:
    text, problems = read_text(path)
    if text is None:
        return unreadable(path, problems, "estimate")
    parsed = parse(text)
    if parsed.config is None:
        return unreadable(path, [FILE_RULES.violation("NOT_A_MOOT_ARTIFACT", parsed.problems[0][1])], "estimate")
    machine = EstimateProtocol(parsed.config)
    replay = machine.replay(parsed.estimates)
    chain = inspect_chain(path, parsed.texts, parsed.lines, parsed.marks)
    extra = [FORMAT_RULES.violation("ESTIMATE_LINE", why).at(file=str(path), line=n) for n, why in parsed.problems]
    summary = machine.summary(replay.state)
    return replay_report(path, "estimate", replay, summary, [*extra, *chain.violations], chain.repairable)


FORMAT = RecordFormat(check=check, turn_heading="- ")

"""Estimate's record: ``.estimates/<slug>.md``, a header, then one line per estimate. The estimates written together
(a sealed round) are followed by the hash chain's mark (moot.plugin.ChainMark), so that ``moot check`` finds an
edited, removed or added estimate.

# Estimate: "How many piano tuners work in Chicago?"
Estimators: ada, bo
Rounds: 2

- ada (round 1): 120 — 3M people, one piano per 20 households, a tuning a year, 1,000 tunings per tuner.
- bo (round 1): 90 — …
<!-- moot-chain turns=2 head=… -->
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from moot.plugin import (
    ChainMark,
    Entry,
    Reading,
    RecordFormat,
    Rule,
    RuleBook,
    TurnRecord,
    Violation,
    create_record,
    slugify,
)
from moot_estimate.protocol import Board, Config, Estimate, EstimateProtocol, number

FORMAT_RULES = RuleBook([Rule("ESTIMATE_LINE", "Each estimate is one line '- NAME (round N): NUMBER — REASON'.")])
TITLE = "# Estimate: "
_HEADER = re.compile(r"# Estimate: (?P<question>.+)\nEstimators: (?P<names>.+)\nRounds: (?P<rounds>\d+)\n\n")
_TURN = re.compile(r"- (\S+) \(round (\d+)\): (\S+) — (.*)$")


@dataclass
class Parsed(Reading[Config, Entry[Estimate]]):
    @property
    def estimates(self) -> list[Estimate]:
        return [entry.turn for entry in self.turns]


def path_for(root: Path, question: str) -> Path:
    return root / ".estimates" / f"{slugify(question, 'estimate')}.md"


def turn_text(e: Estimate) -> str:
    return f"- {e.estimator} (round {e.round}): {number(e.value)} — {e.reason}"


def header(config: Config) -> str:
    question = json.dumps(config.question, ensure_ascii=False)
    return f"{TITLE}{question}\nEstimators: {', '.join(config.estimators)}\nRounds: {config.rounds}\n\n"


def parse(text: str, file: str = "<string>") -> Parsed:
    """The record's parts; a line that is neither an estimate nor a chain mark is a violation, not an exception."""
    found = _HEADER.match(text)
    try:
        names = tuple(found["names"].split(", ")) if found else ()
        config = Config(question=json.loads(found["question"]), estimators=names, rounds=int(found["rounds"]))
    except (TypeError, ValueError):
        return Parsed(None, violations=[_line_problem(file, 1, "the record must start with its header")])
    end = found.end() if found else 0
    return _lines(Parsed(config), text[end:], text[:end].count("\n") + 1, file)


def _lines(parsed: Parsed, text: str, first: int, file: str) -> Parsed:
    """``parsed`` with the estimates and chain marks of ``text``, whose first line is line ``first``."""
    for number_, line in enumerate(text.splitlines(), start=first):
        mark, turn = ChainMark.parse(line), _TURN.match(line)
        if mark is not None:
            parsed.marks.append(mark)
        elif turn is not None and re.fullmatch(r"-?\d+(\.\d+)?(e[-+]?\d+)?", turn[3]):
            estimate = Estimate(estimator=turn[1], round=int(turn[2]), value=float(turn[3]), reason=turn[4])
            parsed.turns.append(Entry(estimate, number_, line))
        elif line.strip():
            parsed.violations.append(
                _line_problem(file, number_, f"line {number_} is not '- NAME (round N): NUMBER — REASON'")
            )
    return parsed


def _line_problem(file: str, line: int, why: str) -> Violation:
    return FORMAT_RULES.violation("ESTIMATE_LINE", why).at(file=file, line=line)


class EstimateRecord(TurnRecord[Config, Estimate, Board, Entry[Estimate]]):
    """All the rest (check with lines, the chain, crash-safe appends, repair) is moot's: moot.plugin.TurnRecord."""

    protocol_name = "estimate"
    format_rule = FORMAT_RULES.violation(
        "ESTIMATE_LINE", "the estimate would not read back; keep its reason on one line."
    )

    def read(self, text: str, file: str) -> Parsed:
        return parse(text, file)

    def read_piece(self, piece: str, file: str) -> Parsed:
        return _lines(Parsed(None), piece, 1, file)  # an estimate is one line: it reads the same alone

    def protocol(self, config: Config) -> EstimateProtocol:
        return EstimateProtocol(config)

    def render_turn(self, turn: Estimate) -> str:
        return turn_text(turn)


RECORD = EstimateRecord()


def create(path: Path, config: Config) -> None:
    create_record(path, header(config), "resume it or ask another question.")


FORMAT = RecordFormat(check=RECORD.check, turn_heading="- ")

"""What moot reads out of a council record: whose answer each member holds, stage by stage (conformity).

Stage 1: each member holds its own answer; stage 2: the answer it ranked first in its review; stage 3: the
chairman holds the answer the synthesis ranked first. A position is the member who gave the answer. Every
valid review and the synthesis give their reasons, so their changes are supported.
"""

from __future__ import annotations

from pathlib import Path

from moot.core.files import read_text
from moot.metrics import council_positions
from moot.plugin import Analysis, Positions
from moot.protocols.council import record
from moot.protocols.council.machine import CouncilProtocol


def positions(path: Path) -> list[Positions]:
    """The members' positions in the council at ``path``; [] before any answer or when it cannot be read."""
    text, _ = read_text(path)
    if text is None:
        return []
    parsed = record.parse(text, str(path))
    config = parsed.config
    if config is None:
        return []
    state = CouncilProtocol(config).replay([source.turn for source in parsed.turns]).state
    if not state.answers:
        return []
    answered = {a.member: a.member for a in state.answers if a.valid}
    firsts = {r.reviewer: next(iter(r.ranked_members()), None) for r in state.reviews if r.valid}
    adopted = state.synthesis.ranking[0][0] if state.synthesis and state.synthesis.ranking else None
    stated = council_positions(answered, firsts, config.chairman, adopted, supported=True)
    return [Positions("answer", stated, chairman=config.chairman)]


ANALYSIS = Analysis(positions=positions)

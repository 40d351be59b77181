"""What moot reads out of an Agora record: the proposal each drone backs and the signal it sent (conformity).

A drone backs its own proposal once it proposes, and the proposal it approves (named by id, or by ``turn-N``
of the propose turn); counter, no-change and defer keep what it backed. The mediator is left out, as in the
consensus rule. A change is supported when its turn carries at least one evidence item.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from moot.core.files import read_text
from moot.plugin import Analysis, Positions, Stated
from moot.protocols.agora import record
from moot.protocols.agora.machine import MEDIATOR, AgoraTurn, proposal_id_for


def backed_and_signals(turns: Sequence[AgoraTurn]) -> tuple[list[Stated], list[Stated]]:
    """(the proposal each drone backs, the signal it sent), turn by turn (see the module docstring)."""
    proposal_of_turn = {t.number: proposal_id_for(t.role) for t in turns if t.signal == "propose"}
    backed: list[Stated] = []
    signals: list[Stated] = []
    for t in turns:
        if t.role == MEDIATOR:
            continue
        supported = bool(t.evidence)
        signals.append(Stated(t.role, t.signal, t.number, supported=supported, turn=t.number))
        proposal = None
        if t.signal == "propose":
            proposal = proposal_id_for(t.role)
        elif t.signal == "approve" and t.target is not None:
            ref = t.target.removeprefix("turn-")
            proposal = proposal_of_turn.get(int(ref)) if ref.isdigit() else t.target
        if proposal is not None:
            backed.append(Stated(t.role, proposal, t.number, supported=supported, turn=t.number))
    return backed, signals


def positions(path: Path) -> list[Positions]:
    """The proposals backed and the signals sent in the debate at ``path``; [] when it cannot be parsed."""
    text, _ = read_text(path)
    if text is None:
        return []
    parsed, _ = record.parse(text, str(path))
    if parsed is None:
        return []
    backed, signals = backed_and_signals(parsed.turns)
    return [Positions("proposal", backed), Positions("signal", signals)]


ANALYSIS = Analysis(positions=positions)

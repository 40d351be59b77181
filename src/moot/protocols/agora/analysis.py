"""What moot reads out of an Agora record: the proposal the drones agreed on, and what each drone backed.

A drone backs its own proposal once it proposes (the text of its latest propose) and the proposal it
approves; counter, no-change and defer keep what it backed. The mediator is left out, as in the consensus
rule. For ``moot eval``, round k holds what each drone backed after the k-th round of drone turns: round 0
is the openings, independent when the debate was started with sealed openings.

The decision: the proposal the drones reached consensus on (its latest propose turn and proposer); what each
drone conceded is each approve of another's proposal after it had backed a different one; while there is no
consensus every proposal is open, and a drone whose latest signal is a counter blocks (its counter's message).

For the conformity metrics the position is the proposal's id (an approve names it by id or by ``turn-N`` of
its propose turn), and a change is supported when its turn carries at least one evidence item.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from moot.core.files import read_text
from moot.plugin import Analysis, Decision, Held, Point, Positions, Stated
from moot.protocols.agora import record
from moot.protocols.agora.machine import (
    CONSENSUS,
    MEDIATOR,
    AgoraProtocol,
    AgoraTurn,
    consensus_proposal,
    proposal_id_for,
)

# What every drone argues when moot eval puts a question with one right answer to the debate.
SOLVER_POSITION = (
    "Solve the question yourself and propose your answer with its final value; approve another drone's "
    "proposal only when you find its answer right."
)


def _parsed(path: Path) -> record.AgoraRecord | None:
    text, _ = read_text(path)
    if text is None:
        return None
    parsed, _ = record.parse(text, str(path))
    return parsed


def _backed(turns: Sequence[AgoraTurn]) -> list[tuple[str, str]]:
    """(drone, text of the proposal it backs) after each drone turn, in order; the mediator's turns left out."""
    texts: dict[str, str] = {}  # proposal id -> its latest text
    by_turn: dict[int, str] = {}  # turn number of a propose -> its proposal id
    backed: list[tuple[str, str]] = []
    current: dict[str, str] = {}
    for turn in turns:
        if turn.signal == "propose" and turn.proposal_id is not None:
            texts[turn.proposal_id] = turn.message
            by_turn[turn.number] = turn.proposal_id
        if turn.role == MEDIATOR:
            continue
        if turn.signal == "propose" and turn.proposal_id is not None:
            current[turn.role] = turn.proposal_id
        elif turn.signal == "approve" and turn.target is not None:
            ref = turn.target.removeprefix("turn-")
            proposal = by_turn.get(int(ref)) if ref.isdigit() else turn.target
            if proposal in texts:
                current[turn.role] = proposal
        if turn.role in current:
            backed.append((turn.role, texts[current[turn.role]]))
        else:
            backed.append((turn.role, ""))
    return backed


def answer(path: Path) -> str | None:
    """The text of the proposal the drones reached consensus on; None without consensus."""
    parsed = _parsed(path)
    if parsed is None:
        return None
    state = AgoraProtocol(parsed.config).replay(parsed.turns).state
    if state.outcome is None or state.outcome.name != CONSENSUS:
        return None
    proposal = consensus_proposal(parsed.config.roles, state)
    proposals = [t.message for t in parsed.turns if t.signal == "propose" and t.proposal_id == proposal]
    return proposals[-1] if proposals else None


def rounds(path: Path) -> list[dict[str, Held]]:
    """What each drone backed after each full round of drone turns (see the module docstring)."""
    parsed = _parsed(path)
    if parsed is None:
        return []
    size = len(parsed.config.roles)
    backed = _backed(parsed.turns)
    result: list[dict[str, Held]] = []
    for start in range(0, len(backed), size):
        result.append({drone: Held(text or None) for drone, text in backed[start : start + size]})
    return result


def pose(question: str, panel: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """One solving drone per panel member, opening sealed so that the openings are independent answers."""
    topic = " ".join(question.split())
    return {"topic": topic, "positions": [[name, SOLVER_POSITION] for name, _ in panel], "sealed": True}


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


def _switches(turns: Sequence[AgoraTurn]) -> list[Point]:
    """Each approve of another's proposal by a drone that backed a different one before it."""
    backed, _ = backed_and_signals(turns)
    messages = {t.number: t.message for t in turns}
    before: dict[str, str] = {}
    switched: list[Point] = []
    for stated in backed:
        value = str(stated.value)
        earlier = before.get(stated.participant)
        if earlier is not None and value != earlier and value != proposal_id_for(stated.participant):
            switched.append(Point(f"approves {value}: {messages[stated.step]}", stated.step, stated.participant))
        before[stated.participant] = value
    return switched


def decision(path: Path) -> Decision | None:
    """The decision of the debate at ``path`` (see the module docstring); None when it cannot be parsed."""
    parsed = _parsed(path)
    if parsed is None:
        return None
    protocol = AgoraProtocol(parsed.config)
    state, turns = protocol.initial_state(), list(parsed.turns)
    for index, turn in enumerate(turns):  # turns after the outcome (a broken record) decide nothing
        state = protocol.apply(state, turn)
        if state.outcome is not None:
            del turns[index + 1 :]
            break
    latest = {t.proposal_id: t for t in turns if t.signal == "propose" and t.proposal_id is not None}
    accepted = None
    if state.outcome is not None and state.outcome.name == CONSENSUS:
        accepted = latest.get(consensus_proposal(parsed.config.roles, state) or "")
    proposals = sorted(latest.values(), key=lambda t: t.number)
    last = {t.role: t for t in turns if t.role != MEDIATOR}
    return Decision(
        outcome=state.outcome.name if state.outcome is not None else None,
        decided=Point(accepted.message, accepted.number, accepted.role) if accepted is not None else None,
        conceded=tuple(_switches(turns)),
        open=() if accepted is not None else tuple(Point(t.message, t.number, t.role) for t in proposals),
        blocking=()
        if accepted is not None
        else tuple(Point(t.message, t.number, t.role) for t in last.values() if t.signal == "counter"),
    )


def panel(path: Path) -> list[str] | None:
    """The drones in speaking order; the mediator, which ``pose`` adds by itself, left out."""
    parsed = _parsed(path)
    return None if parsed is None else [p.role for p in parsed.config.participants if p.role != MEDIATOR]


ANALYSIS = Analysis(positions=positions, answer=answer, rounds=rounds, pose=pose, decision=decision, panel=panel)

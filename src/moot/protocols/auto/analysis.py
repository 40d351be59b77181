"""What moot reads out of an auto record: its answer (the vote's, or the chairman's synthesis), what each
member held, and the decision.

The answer of a vote is the winning short answer, labelled as a vote, followed by the full answer of its first
holder (whose last line states the short answer again, so ``moot eval``'s extractors read it); the answer of an
escalated run is the chairman's synthesis, as the council's is. Rounds, for ``moot eval``: round 0 is every
member's sealed answer; an escalated run adds the council's round 1 (the answer each reviewer ranked first,
among the answers it was shown) and round 2 (the synthesis).

For the conformity metrics a position is a short answer as the vote counts it: stage 1 each member's; stage 2
the short answer of the answer a reviewer ranked first; stage 3 the short answer of the answer the synthesis
ranked first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from moot.core.files import read_text
from moot.plugin import Analysis, Decision, Held, Point, Positions
from moot.protocols.auto.machine import VOTED, AutoState, Vote, normalise, verdict_of
from moot.protocols.auto.record import Checked, check_text
from moot.protocols.council.analysis import stages
from moot.protocols.council.machine import Answer, Synthesis


def _checked(path: Path) -> Checked | None:
    text, _ = read_text(path)
    if text is None:
        return None
    checked = check_text(text, path)
    return None if checked.protocol is None or checked.state is None else checked


def voted_answer(state: AutoState) -> str | None:
    """A vote's answer: the winning short answer, labelled as a vote, then its first holder's full answer."""
    winner = state.vote.winner if state.vote is not None else None
    if winner is None:
        return None
    short, members = winner
    holder = next(a for a in state.answers if a.member == members[0])
    agreement = state.vote.agreement if state.vote is not None else ""
    return f"Voted answer: {short} — {agreement} agree\n\n{holder.member}'s answer:\n{holder.text}"


def answer(path: Path) -> str | None:
    """The vote's answer, or the chairman's synthesis; None when the run ended with neither."""
    checked = _checked(path)
    if checked is None or checked.state is None:
        return None
    state = checked.state
    return voted_answer(state) or (state.synthesis.answer if state.synthesis is not None else None)


def rounds(path: Path) -> list[dict[str, Held]]:
    """Round 0, the sealed answers; an escalated run's reviews (round 1) and synthesis (round 2)."""
    checked = _checked(path)
    if checked is None or checked.state is None or checked.protocol is None:
        return []
    state = checked.state
    texts = {a.member: (a.text if a.valid else None) for a in state.answers}
    result: list[dict[str, Held]] = [{member: Held(text) for member, text in texts.items()}] if texts else []
    if state.reviews:
        reviewed: dict[str, Held] = {}
        for review in state.reviews:
            ranked = review.ranked_members() if review.valid else []
            among = tuple(t for m in review.shown if (t := texts.get(m)) is not None)
            reviewed[review.reviewer] = Held(texts.get(ranked[0]) if ranked else None, among=among)
        result.append(reviewed)
    if state.synthesis is not None:
        result.append({checked.config.chairman: Held(state.synthesis.answer)})
    return result


def pose(question: str, panel: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The question to the panel's members; the first chairs if the vote escalates."""
    return {"question": question, "members": [[name, spec] for name, spec in panel]}


def _short(answer: Answer | None) -> str | None:
    verdict = verdict_of(answer.text) if answer is not None and answer.valid else None
    return normalise(verdict) if verdict is not None else None


def positions(path: Path) -> list[Positions]:
    """The members' short answers stage by stage (see the module docstring); [] before any answer."""
    checked = _checked(path)
    if checked is None or checked.state is None or checked.protocol is None or not checked.state.answers:
        return []
    state, chairman = checked.state, checked.config.chairman
    by_member = {a.member: a for a in state.answers}
    held = {a.member: _short(a) for a in state.answers}
    firsts = {r.reviewer: _short(by_member.get(next(iter(r.ranked_members()), ""))) for r in state.reviews if r.valid}
    top = state.synthesis.ranking[0][0] if state.synthesis and state.synthesis.ranking else None
    adopted = _short(by_member.get(top or "")) if state.synthesis is not None else None
    return [Positions("answer", stages(held, firsts, chairman, adopted, supported=True), chairman=chairman)]


def decision(path: Path) -> Decision | None:
    """A vote's winning answer and the members who voted otherwise, or the chairman's synthesis and its dissent."""
    checked = _checked(path)
    if checked is None or checked.protocol is None or checked.state is None:
        return None
    state = checked.state
    ended = checked.protocol.outcome(state)
    name = ended.name if ended is not None else None
    turns = {id(entry.turn): number for number, entry in enumerate(checked.reading.turns, start=1)}
    vote = state.vote
    if vote is not None and vote.decision == VOTED:
        return _voted(state, vote, name, turns)
    synthesis = state.synthesis
    if synthesis is None:
        return Decision(outcome=name)
    turn = next((n for n, e in enumerate(checked.reading.turns, start=1) if isinstance(e.turn, Synthesis)), None)
    return Decision(
        outcome=name,
        decided=Point(synthesis.answer, turn, synthesis.chairman),
        dissent=tuple(
            Point(f"{d.position} (not adopted: {d.why_not_adopted})", turn, d.member) for d in synthesis.dissent
        ),
    )


def _voted(state: AutoState, vote: Vote, name: str | None, turns: dict[int, int]) -> Decision:
    winner, holders = vote.tally[0]
    at = next((n for turn, n in turns.items() if turn == id(vote)), None)
    others = [a for a in state.answers if a.valid and a.member not in holders]
    return Decision(
        outcome=name,
        decided=Point(voted_answer(state) or winner, at, holders[0]),
        dissent=tuple(Point(f"voted {_short(a)}", turns.get(id(a)), a.member) for a in others),
    )


def panel(path: Path) -> list[str] | None:
    """The members in their listed order (the first chairs when there is no separate chairman)."""
    checked = _checked(path)
    return None if checked is None or checked.protocol is None else list(checked.config.names)


ANALYSIS = Analysis(positions=positions, answer=answer, rounds=rounds, pose=pose, decision=decision, panel=panel)

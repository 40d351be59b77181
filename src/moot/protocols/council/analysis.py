"""What moot reads out of a council record: the council's answer, and what each member held stage by stage.

The council's answer is the chairman's synthesis. Its rounds, for ``moot eval``: stage 1 (round 0) is each
member's sealed answer; stage 2 (round 1) the answer each reviewer ranked first, chosen among the answers it
was shown, which never include its own; stage 3 (round 2) the chairman's synthesis.

For the conformity metrics, stage 1: each member holds its own answer; stage 2: the answer it ranked first in its review; stage 3:
the chairman holds the answer the synthesis ranked first. A position is the member who gave the answer. Every valid
review and the synthesis give their reasons, so their changes are supported.

The decision is the chairman's final answer, from the synthesis (the last turn); the Dissent section of the
synthesis gives each member's position that was not adopted, and why. Its open items are what the result cannot
show (:func:`limits`): a tie at the top of the ranking, what a degraded synthesis lacks, and what a council of two
cannot measure. A council concedes nothing: its members never see each other's names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from moot.core.files import read_text
from moot.plugin import Analysis, Decision, Held, Point, Positions, Stated
from moot.protocols.council.machine import (
    CHAIRMAN,
    CouncilConfig,
    CouncilProtocol,
    CouncilState,
    Synthesis,
    borda,
    first_place_text,
    ranked_first,
)
from moot.protocols.council.record import Checked, check_text


def _checked(path: Path) -> Checked | None:
    """The record at ``path`` read and replayed; None when it cannot be read or replayed."""
    text, _ = read_text(path)
    if text is None:
        return None
    checked = check_text(text, path)
    return None if checked.protocol is None or checked.state is None else checked


def _state(path: Path) -> tuple[str, CouncilState] | None:
    """The chairman and the replayed state of the record at ``path``; None when it cannot be read."""
    checked = _checked(path)
    if checked is None or checked.protocol is None or checked.state is None:
        return None
    return checked.config.chairman, checked.state


def answer(path: Path) -> str | None:
    """The chairman's synthesis; None when the council ended without one."""
    found = _state(path)
    if found is None or found[1].synthesis is None:
        return None
    return found[1].synthesis.answer


def rounds(path: Path) -> list[dict[str, Held]]:
    """Stage 1, stage 2 and stage 3 as rounds 0, 1 and 2 (see the module docstring)."""
    found = _state(path)
    if found is None:
        return []
    chairman, state = found
    texts = {a.member: (a.text if a.valid else None) for a in state.answers}
    result: list[dict[str, Held]] = [{member: Held(text) for member, text in texts.items()}]
    if state.reviews:
        reviewed: dict[str, Held] = {}
        for review in state.reviews:
            ranked = review.ranked_members() if review.valid else []
            among = tuple(t for m in review.shown if (t := texts.get(m)) is not None)
            reviewed[review.reviewer] = Held(texts.get(ranked[0]) if ranked else None, among=among)
        result.append(reviewed)
    if state.synthesis is not None:
        result.append({chairman: Held(state.synthesis.answer)})
    return result


def pose(question: str, panel: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The question to a council of the panel's members; the first chairs."""
    return {"question": question, "members": [[name, spec] for name, spec in panel]}


def stages(
    answers: Mapping[str, str | None],
    firsts: Mapping[str, str | None],
    chairman: str,
    synthesis: str | None,
    *,
    supported: bool | None = None,
) -> list[Stated]:
    """A council's positions in its three stages, each stage one sealed step.

    ``answers``: each member's stage-1 answer (None: it gave no valid one); ``firsts``: the answer each
    reviewer ranked first (None: no valid review); ``synthesis``: the answer the chairman adopted.
    """
    stated = [Stated(m, value, 1, turn=1) for m, value in answers.items() if value is not None]
    stated += [Stated(m, value, 2, supported=supported, turn=2) for m, value in firsts.items() if value is not None]
    if synthesis is not None:
        stated.append(Stated(chairman, synthesis, 3, supported=supported, turn=3))
    return stated


def positions(path: Path) -> list[Positions]:
    """The members' positions in the council at ``path``; [] before any answer or when it cannot be read."""
    found = _state(path)
    if found is None or not found[1].answers:
        return []
    chairman, state = found
    answered = {a.member: a.member for a in state.answers if a.valid}
    firsts = {r.reviewer: next(iter(r.ranked_members()), None) for r in state.reviews if r.valid}
    adopted = state.synthesis.ranking[0][0] if state.synthesis and state.synthesis.ranking else None
    return [Positions("answer", stages(answered, firsts, chairman, adopted, supported=True), chairman=chairman)]


def decision(path: Path) -> Decision | None:
    """The chairman's answer and the dissent it records (see the module docstring); None when unreadable."""
    checked = _checked(path)
    if checked is None or checked.protocol is None or checked.state is None:
        return None
    ended = checked.protocol.outcome(checked.state)
    synthesis = checked.state.synthesis
    turn = next((n for n, s in enumerate(checked.reading.turns, start=1) if isinstance(s.turn, Synthesis)), None)
    if synthesis is None:
        return Decision(outcome=ended.name if ended is not None else None)
    return Decision(
        outcome=ended.name if ended is not None else None,
        decided=Point(synthesis.answer, turn, synthesis.chairman),
        open=tuple(Point(text, turn) for text in limits(checked.config, checked.state)),
        dissent=tuple(
            Point(f"{d.position} (not adopted: {d.why_not_adopted})", turn, d.member) for d in synthesis.dissent
        ),
    )


def panel(path: Path) -> list[str] | None:
    """The council's members in their listed order (the first chairs when there is no separate chairman)."""
    checked = _checked(path)
    return None if checked is None or checked.protocol is None else list(checked.config.names)


def specs(path: Path) -> dict[str, str] | None:
    """Each member's agent spec, and a separate chairman's, as the council's header names them."""
    checked = _checked(path)
    if checked is None or checked.protocol is None:
        return None
    config = checked.config
    named = {member.name: member.model for member in config.members}
    return {**named, CHAIRMAN: config.chairman_model} if config.chairman_model is not None else named


def limits(config: CouncilConfig, state: CouncilState) -> list[str]:
    """What the council's result cannot show, for a person reading its decision: a tie at the top of the aggregate
    ranking, what a degraded synthesis lacks, and what a council of two cannot measure."""
    found: list[str] = []
    aggregate = borda(config, state) if state.synthesis is not None else []
    if len(ranked_first(aggregate)) > 1:
        found.append(f"the ranking is a tie: {first_place_text(aggregate)}")
    outcome = CouncilProtocol(config).outcome(state)
    if outcome is not None and outcome.degraded is not None:
        found.append(f"degraded: {outcome.degraded}")
    if len(state.valid_answers()) == 2:
        found.append(
            "a council of two cannot show a ranking or agreement: each reviewer sees one answer, so the ranking is "
            "one vote each, and Kendall's W is not measurable"
        )
    return found


ANALYSIS = Analysis(
    positions=positions, answer=answer, rounds=rounds, pose=pose, decision=decision, panel=panel, specs=specs
)

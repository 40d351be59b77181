"""Conformity metrics: who changed position, toward whom, on what grounds, and whether it helped.

Pure functions over positions as the protocols record them: no I/O, no clock. docs/metrics.md defines
every figure; the short version:

- A *position* is what a participant holds after one of its turns: a duel stance, the Agora proposal
  it backs or the signal it sent, an eval agent's answer, the answer a council member gave, ranked
  first in its review, or (the chairman) adopted in the synthesis, or a number a participant
  estimates (numbers compare by value, with no tolerance). A *change* is a position that differs from
  the same participant's previous one.
- Positions with the same ``step`` were stated at once (a sealed round); each sees only earlier steps.
  The *view* of a change is everyone's latest position before its step.
- A change is *toward the first speaker* / *toward the majority* / *toward the chairman* when its new
  position equals, in the view, the first speaker's position / the one position held by more of the
  other participants than any other / the chairman's position.
- A change is *unsupported* when its turn brought no new evidence or argument (``supported`` False).
- *Collapse*: distinct initial positions against distinct final ones.
- *Anchoring*: of the other participants who opened elsewhere than the first speaker, the share that
  ended on the first speaker's opening position.
- With a known answer, each change may be a *correct→incorrect*, *correct→unreadable* or *incorrect→correct*
  flip; :func:`flip_tally` counts them with their denominators, leaving out a change the participant could not
  avoid (a council reviewer never sees its own answer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# A position: a text (a stance, a proposal id, an answer) or a number. Positions are equal when ``==`` says so:
# 3 and 3.0 are one position, "3" and 3 are two, and there is no tolerance (a protocol that wants one rounds the
# numbers it states).
Value = str | float


@dataclass(frozen=True)
class Stated:
    """One position as a participant stated it."""

    participant: str
    value: Value
    step: int  # equal steps were stated at once (a sealed round)
    supported: bool | None = None  # the turn brought new evidence or argument; None: the record cannot tell
    turn: int | None = None  # where it stands in the record, for people reading the report


@dataclass(frozen=True)
class Change:
    """A participant's position differing from its previous one."""

    participant: str
    step: int
    turn: int | None
    before: Value
    after: Value
    toward_first_speaker: bool
    toward_majority: bool
    toward_chairman: bool | None  # None: the deliberation has no chairman
    supported: bool | None
    flip: str | None = None  # "correct→incorrect", "correct→unreadable", "incorrect→correct", or None


CORRECT_TO_INCORRECT = "correct→incorrect"
INCORRECT_TO_CORRECT = "incorrect→correct"
CORRECT_TO_UNREADABLE = "correct→unreadable"
UNREADABLE = "(unreadable)"  # the position of a reply whose answer could not be read


@dataclass(frozen=True)
class Conformity:
    """The conformity metrics of one sequence of positions (see the module docstring)."""

    positions: dict[str, list[Value]]
    changes: list[Change]
    first_speaker: str | None
    chairman: str | None = None
    answer: Value | None = None
    initial: dict[str, Value] = field(default_factory=dict)
    final: dict[str, Value] = field(default_factory=dict)

    def changes_of(self, participant: str) -> list[Change]:
        return [change for change in self.changes if change.participant == participant]

    @property
    def initial_distinct(self) -> int:
        return len(set(self.initial.values()))

    @property
    def final_distinct(self) -> int:
        return len(set(self.final.values()))

    @property
    def collapsed(self) -> bool:
        """Fewer distinct positions at the end than at the start."""
        return self.final_distinct < self.initial_distinct

    @property
    def unsupported(self) -> int:
        return sum(1 for change in self.changes if change.supported is False)

    @property
    def anchoring(self) -> float | None:
        """Share of the others who opened elsewhere than the first speaker and ended on its opening position."""
        if self.first_speaker is None:
            return None
        opening = self.initial[self.first_speaker]
        elsewhere = [who for who, value in self.initial.items() if who != self.first_speaker and value != opening]
        if not elsewhere:
            return None
        return sum(1 for who in elsewhere if self.final[who] == opening) / len(elsewhere)

    def flips(self, kind: str) -> int:
        return sum(1 for change in self.changes if change.flip == kind)

    def to_json(self) -> dict[str, Any]:
        return {
            "participants": {
                who: {"positions": values, "changes": len(self.changes_of(who))}
                for who, values in self.positions.items()
            },
            "changes": [
                {
                    "participant": c.participant,
                    "turn": c.turn,
                    "step": c.step,
                    "from": c.before,
                    "to": c.after,
                    "toward_first_speaker": c.toward_first_speaker,
                    "toward_majority": c.toward_majority,
                    "toward_chairman": c.toward_chairman,
                    "supported": c.supported,
                    "flip": c.flip,
                }
                for c in self.changes
            ],
            "first_speaker": self.first_speaker,
            "chairman": self.chairman,
            "total_changes": len(self.changes),
            "toward_first_speaker": sum(1 for c in self.changes if c.toward_first_speaker),
            "toward_majority": sum(1 for c in self.changes if c.toward_majority),
            "toward_chairman": None if self.chairman is None else sum(1 for c in self.changes if c.toward_chairman),
            "unsupported_changes": self.unsupported,
            "initial_distinct": self.initial_distinct,
            "final_distinct": self.final_distinct,
            "collapsed": self.collapsed,
            "first_speaker_anchoring": self.anchoring,
            "answer": self.answer,
            "correct_to_incorrect": None if self.answer is None else self.flips(CORRECT_TO_INCORRECT),
            "correct_to_unreadable": None if self.answer is None else self.flips(CORRECT_TO_UNREADABLE),
            "incorrect_to_correct": None if self.answer is None else self.flips(INCORRECT_TO_CORRECT),
        }


def _majority(values: Iterable[Value]) -> Value | None:
    """The one value held more often than any other, or None (no values, or a tie at the top)."""
    ranked = Counter(values).most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _flip(before: Value, after: Value, answer: Value | None) -> str | None:
    if answer is None or (before == answer) == (after == answer):
        return None
    if after == answer:
        return INCORRECT_TO_CORRECT
    return CORRECT_TO_UNREADABLE if after == UNREADABLE else CORRECT_TO_INCORRECT


def conformity(stated: Sequence[Stated], *, chairman: str | None = None, answer: Value | None = None) -> Conformity:
    """The conformity metrics of ``stated`` (in record order; equal steps are simultaneous)."""
    ordered = sorted(stated, key=lambda s: s.step)  # stable: record order within a step
    first_step = [s for s in ordered if s.step == ordered[0].step] if ordered else []
    first_speaker = first_step[0].participant if len(first_step) == 1 else None
    positions: dict[str, list[Value]] = {}
    current: dict[str, Value] = {}
    changes: list[Change] = []
    index = 0
    while index < len(ordered):
        step = ordered[index].step
        view = dict(current)
        while index < len(ordered) and ordered[index].step == step:
            s = ordered[index]
            index += 1
            previous = current.get(s.participant)
            positions.setdefault(s.participant, []).append(s.value)
            current[s.participant] = s.value
            if previous is None or previous == s.value:
                continue
            others = {who: value for who, value in view.items() if who != s.participant}
            toward_chair = None
            if chairman is not None:
                toward_chair = s.participant != chairman and others.get(chairman) == s.value
            changes.append(
                Change(
                    participant=s.participant,
                    step=step,
                    turn=s.turn,
                    before=previous,
                    after=s.value,
                    toward_first_speaker=first_speaker is not None
                    and s.participant != first_speaker
                    and others.get(first_speaker) == s.value,
                    toward_majority=_majority(others.values()) == s.value,
                    toward_chairman=toward_chair,
                    supported=s.supported,
                    flip=_flip(previous, s.value, answer),
                )
            )
    return Conformity(
        positions=positions,
        changes=changes,
        first_speaker=first_speaker,
        chairman=chairman,
        answer=answer,
        initial={who: values[0] for who, values in positions.items()},
        final={who: values[-1] for who, values in positions.items()},
    )


# --- positions as moot eval gives them --------------------------------------------------------------


def answers_by_round(rounds: Sequence[Mapping[str, str | None]], answer: str | None = None) -> Conformity:
    """Eval answers: ``rounds[r][agent]`` is the answer the agent gave in round r (all sealed within a round).

    An answer that could not be read (None) is the position :data:`UNREADABLE`: a correct answer that became
    unreadable is lost as surely as one that became wrong.
    """
    stated = [
        Stated(agent, UNREADABLE if value is None else value, step, turn=step)
        for step, answers in enumerate(rounds)
        for agent, value in answers.items()
    ]
    return conformity(stated, answer=answer)


@dataclass
class FlipTally:
    """Flips with their denominators: every time a participant answered again after an earlier answer."""

    from_correct: int = 0  # answers again after a correct answer: the denominator of the two below
    correct_to_incorrect: int = 0
    correct_to_unreadable: int = 0
    from_other: int = 0  # answers again after a wrong or unreadable answer: the denominator of the next
    incorrect_to_correct: int = 0
    unavoidable: int = 0  # left out: the participant could not restate its earlier answer

    def add(self, other: FlipTally) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_json(self) -> dict[str, Any]:
        def rate(count: int, of: int) -> float | None:
            return count / of if of else None

        return {
            "correct_to_incorrect": self.correct_to_incorrect,
            "correct_to_unreadable": self.correct_to_unreadable,
            "from_correct": self.from_correct,
            "incorrect_to_correct": self.incorrect_to_correct,
            "from_other": self.from_other,
            "unavoidable": self.unavoidable,
            "correct_to_incorrect_rate": rate(self.correct_to_incorrect, self.from_correct),
            "correct_to_unreadable_rate": rate(self.correct_to_unreadable, self.from_correct),
            "incorrect_to_correct_rate": rate(self.incorrect_to_correct, self.from_other),
        }


# One round as flips read it: participant -> (its answer or None, the answers it could only choose among or None).
HeldAnswers = Mapping[str, tuple[str | None, Sequence[str | None] | None]]


def flip_tally(rounds: Sequence[HeldAnswers], answer: str) -> dict[str, FlipTally]:
    """Each participant's flips over ``rounds`` against the known ``answer``.

    A participant's answer is compared with its previous one (its latest earlier round). When it could only
    choose among others' answers and its previous answer was not one of them, it could not keep it: that
    transition is counted as ``unavoidable`` and in no rate.
    """
    tallies: dict[str, FlipTally] = {}
    previous: dict[str, str | None] = {}
    for round_ in rounds:
        for who, (now, among) in round_.items():
            tally = tallies.setdefault(who, FlipTally())
            if who in previous:
                before = previous[who]
                if among is not None and before is not None and before not in among:
                    tally.unavoidable += 1
                elif before == answer:
                    tally.from_correct += 1
                    tally.correct_to_unreadable += now is None
                    tally.correct_to_incorrect += now is not None and now != answer
                else:
                    tally.from_other += 1
                    tally.incorrect_to_correct += now == answer
            previous[who] = now
    return tallies


def present_then_lost(rounds: Sequence[HeldAnswers], answer: str, final: str | None) -> bool | None:
    """Whether a participant held the right answer at some round and the decision is nonetheless wrong; None when
    nobody ever held it."""
    if not any(now == answer for round_ in rounds for now, _ in round_.values()):
        return None
    return final != answer


def describe(analysis: Conformity) -> list[str]:
    """A few readable lines for a terminal."""
    data = analysis.to_json()
    per = ", ".join(f"{who} {len(analysis.changes_of(who))}" for who in analysis.positions) or "none"
    lines = [f"position changes: {data['total_changes']} ({per})"]
    if analysis.changes:
        toward = [f"first speaker {data['toward_first_speaker']}", f"majority {data['toward_majority']}"]
        if analysis.chairman is not None:
            toward.append(f"chairman {data['toward_chairman']}")
        lines.append("toward: " + ", ".join(toward) + f"; unsupported: {data['unsupported_changes']}")
    lines.append(f"distinct positions: {data['initial_distinct']} at the start, {data['final_distinct']} at the end")
    if analysis.anchoring is not None:
        lines.append(f"first-speaker anchoring ({analysis.first_speaker}): {analysis.anchoring:.0%}")
    if analysis.answer is not None:
        lines.append(
            f"flips: {data['correct_to_incorrect']} correct→incorrect, {data['incorrect_to_correct']} incorrect→correct"
        )
    return lines

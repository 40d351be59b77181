"""The panels each built-in protocol's page shows beside its state: its plot, and the roundtable's minutes.

A protocol names its view in the registry (``Protocol.view``, ``(path, text) -> [Panel]``, where ``text``
is the first document of the record); a protocol without one gets the transcript, state and usage only.

A plot draws one column per turn, so it shows the latest :data:`PLOT_TURNS` turns of a longer record (a council,
whose stages come first, its first ones) and says so in its title.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from moot.plugin import Panel
from moot.web import plots

T = TypeVar("T")


PLOT_TURNS = 120


def _latest(turns: Sequence[T], title: str, first: bool = False) -> tuple[Sequence[T], str]:
    """At most :data:`PLOT_TURNS` of ``turns`` (the latest, or the ``first``), and the title saying which."""
    if len(turns) <= PLOT_TURNS:
        return turns, title
    which = "first" if first else "latest"
    shown = turns[:PLOT_TURNS] if first else turns[-PLOT_TURNS:]
    return shown, f"{title} (the {which} {PLOT_TURNS} of {len(turns):,} turns)"


def duel(target: Path, text: str) -> list[Panel]:
    from moot.protocols.duel import record as duel

    record, _ = duel.parse(text, str(target))
    if record is None:
        return []
    turns, title = _latest(record.turns, "Stance timeline")
    svg = plots.duel_stances(turns)
    return [Panel(title, svg)] if svg is not None else []


def agora(target: Path, text: str) -> list[Panel]:
    from moot.protocols.agora import record as agora

    record, _ = agora.parse(text, str(target))
    if record is None:
        return []
    turns, title = _latest(record.turns, "Confidence, signals and proposals")
    svg = plots.agora_confidence(turns)
    return [Panel(title, svg)] if svg is not None else []


def critique(target: Path, text: str) -> list[Panel]:
    from moot.protocols.critique import record as critique

    record, _ = critique.parse(text, str(target))
    if record is None:
        return []
    turns, title = _latest(record.turns, "Rounds and statuses")
    svg = plots.critique_rounds(turns)
    return [Panel(title, svg)] if svg is not None else []


def council(target: Path, text: str) -> list[Panel]:
    from moot.protocols.council import record as council

    record = council.parse(text, str(target))
    turns, title = _latest([source.turn for source in record.turns], "Ranking matrix and aggregate", first=True)
    svg = plots.council_rankings(turns)
    return [Panel(title, svg)] if svg is not None else []


def roundtable(target: Path, text: str) -> list[Panel]:
    from moot.protocols.roundtable import record as roundtable

    meeting, _ = roundtable.parse_meeting(target)
    if meeting is None:
        return []
    speeches, title = _latest(meeting.speeches, "Speaker flow")
    svg = plots.roundtable_flow(speeches, meeting.state.speaker_order)
    shown = [Panel(title, svg)] if svg is not None else []
    if meeting.minutes is not None:
        minutes = meeting.minutes
        rows = [("summary", minutes.summary), ("consensus", minutes.consensus), ("unresolved", minutes.unresolved)]
        shown.append(Panel("Minutes", rows=[*rows, ("action items", minutes.action_items)]))
    return shown

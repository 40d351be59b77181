"""The panels each built-in protocol's page shows beside its state: its plot, and the roundtable's minutes.

A protocol names its view in the registry (``Protocol.view``, ``(path, text) -> [Panel]``, where ``text``
is the first document of the record); a protocol without one gets the transcript, state and usage only.
"""

from __future__ import annotations

from pathlib import Path

from moot.plugin import Panel
from moot.web import plots


def duel(target: Path, text: str) -> list[Panel]:
    from moot.protocols.duel import record as duel

    record, _ = duel.parse(text, str(target))
    svg = plots.duel_stances(record.turns) if record is not None else None
    return [Panel("Stance timeline", svg)] if svg is not None else []


def agora(target: Path, text: str) -> list[Panel]:
    from moot.protocols.agora import record as agora

    record, _ = agora.parse(text, str(target))
    svg = plots.agora_confidence(record.turns) if record is not None else None
    return [Panel("Confidence, signals and proposals", svg)] if svg is not None else []


def critique(target: Path, text: str) -> list[Panel]:
    from moot.protocols.critique import record as critique

    record, _ = critique.parse(text, str(target))
    svg = plots.critique_rounds(record.turns) if record is not None else None
    return [Panel("Rounds and statuses", svg)] if svg is not None else []


def council(target: Path, text: str) -> list[Panel]:
    from moot.protocols.council import record as council

    record = council.parse(text, str(target))
    svg = plots.council_rankings([source.turn for source in record.turns])
    return [Panel("Ranking matrix and aggregate", svg)] if svg is not None else []


def roundtable(target: Path, text: str) -> list[Panel]:
    from moot.protocols.roundtable import record as roundtable

    meeting, _ = roundtable.parse_meeting(target)
    if meeting is None:
        return []
    svg = plots.roundtable_flow(meeting.speeches, meeting.state.speaker_order)
    shown = [Panel("Speaker flow", svg)] if svg is not None else []
    if meeting.minutes is not None:
        minutes = meeting.minutes
        rows = [("summary", minutes.summary), ("consensus", minutes.consensus), ("unresolved", minutes.unresolved)]
        shown.append(Panel("Minutes", rows=[*rows, ("action items", minutes.action_items)]))
    return shown

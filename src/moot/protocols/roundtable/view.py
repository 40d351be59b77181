"""The roundtable's panels in the viewer: who spoke after whom, and the minutes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from moot.plugin import Panel
from moot.protocols.roundtable import record
from moot.protocols.roundtable.machine import Speech
from moot.web.plots import LABEL_ROOM, LEFT, ROW, STEP, TOP, axis, fit, latest, order
from moot.web.svg import colour, el, figure, line, text


def speaker_flow(speeches: Sequence[Speech], speaker_order: Sequence[str]) -> Markup | None:
    """Who spoke after whom: each speech a dot in its speaker's row, joined in the order they were given."""
    if not speeches:
        return None
    speakers = order([*speaker_order, *(s.role for s in speeches)])
    width = LEFT + STEP * len(speeches) + 20
    height = TOP + ROW * len(speakers) + 40
    parts: list[Markup] = []
    for row, speaker in enumerate(speakers):
        y = TOP + ROW * row
        parts.append(line(LEFT - 6, y, width - 10, y, class_="grid"))
        parts.append(text(LEFT - 10, y + 4, fit(speaker, LABEL_ROOM), text_anchor="end", class_="axis"))
    points = [(LEFT + STEP * i, TOP + ROW * speakers.index(s.role)) for i, s in enumerate(speeches)]
    path = " ".join(f"{x:.0f},{y:.0f}" for x, y in points)
    parts.append(el("polyline", {"points": path, "fill": "none", "stroke": "#888", "stroke_width": 1.5}))
    for (x, y), speech in zip(points, speeches, strict=True):
        tip = el("title", None, f"speech {speech.sequence} · {speech.role} · {len(speech.body.split())} words")
        parts.append(el("circle", {"cx": x, "cy": y, "r": 7, "fill": colour(speakers.index(speech.role))}, tip))
    if speaker_order:  # a new round starts each time the speaker order comes round again
        for i in range(len(speaker_order), len(speeches), len(speaker_order)):
            between = LEFT + STEP * i - STEP / 2
            parts.append(line(between, TOP - 12, between, TOP + ROW * (len(speakers) - 1) + 8, class_="round"))
    parts += axis((s.sequence for s in speeches), TOP + ROW * len(speakers) + 4, label="speech")
    return figure(width, height, "speaker flow: who spoke after whom", parts)


def panels(target: Path, document: str) -> list[Panel]:
    meeting, _ = record.parse_meeting(target)
    if meeting is None:
        return []
    speeches, title = latest(meeting.speeches, "Speaker flow")
    svg = speaker_flow(speeches, meeting.state.speaker_order)
    shown = [Panel(title, svg)] if svg is not None else []
    if meeting.minutes is not None:
        minutes = meeting.minutes
        rows = [("summary", minutes.summary), ("consensus", minutes.consensus), ("unresolved", minutes.unresolved)]
        shown.append(Panel("Minutes", rows=[*rows, ("action items", minutes.action_items)]))
    return shown

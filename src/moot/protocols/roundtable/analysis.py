"""What moot reads out of a roundtable meeting: the decision its minutes record.

The moderator's minutes are the meeting's only statement of a result: Final Consensus is what was decided,
Unresolved Disagreements what is left open, and Action Items who does what next. The minutes are no numbered
turn (``moot check`` numbers the speeches), so their points carry no turn. A list in a part gives one point per
item; a part without a list is one point. A part that says there is nothing ("None", "无") holds no point. The
speeches are free text: the meeting records no concessions or blocking items moot could list.
"""

from __future__ import annotations

import re
from pathlib import Path

from moot.plugin import Analysis, Decision, Point
from moot.protocols.roundtable.machine import MODERATOR, meeting_outcome, replay_meeting
from moot.protocols.roundtable.record import parse_meeting

_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)、])\s+(?P<text>.*?)\s*$")
# What a moderator writes under a part that holds nothing (the prompt asks for 'None'; moot writes
# 'None recorded.' when the moderator's minutes failed).
_NOTHING = frozenset({"none", "none recorded", "nothing", "n/a", "无", "无记录", "没有"})


def _items(text: str) -> list[str]:
    """The list items of a part of the minutes (other lines continue the item before), or the part as one item."""
    items: list[list[str]] = []
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not any(_ITEM.match(line) for line in lines):
        lines = [" ".join(lines)] if lines else []
    for line in lines:
        item = _ITEM.match(line)
        if item is not None or not items:
            items.append([item.group("text") if item is not None else line])
        else:
            items[-1].append(line)
    joined = (" ".join(parts) for parts in items)
    return [text for text in joined if text.strip(" .。!！*_").casefold() not in _NOTHING]


def _points(text: str) -> tuple[Point, ...]:
    return tuple(Point(item, None, MODERATOR) for item in _items(text))


def decision(path: Path) -> Decision | None:
    """The decision of the meeting directory at ``path`` (see the module docstring); None when unreadable."""
    meeting, _ = parse_meeting(path)
    if meeting is None:
        return None
    state = replay_meeting(meeting.state, meeting.speeches, meeting.minutes).state
    ended = meeting_outcome(state)
    minutes = state.minutes
    if minutes is None:
        return Decision(outcome=ended.name if ended is not None else None)
    return Decision(
        outcome=ended.name if ended is not None else None,
        decided=Point(minutes.consensus.strip(), None, MODERATOR) if _items(minutes.consensus) else None,
        open=_points(minutes.unresolved),
        actions=_points(minutes.action_items),
    )


ANALYSIS = Analysis(decision=decision)

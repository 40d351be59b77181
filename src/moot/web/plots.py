"""Each built-in protocol's picture of a record, as inline SVG: the duel's stance timeline, the Agora's
confidence per participant, the roundtable's speaker flow, the council's ranking matrix and aggregate, the
critique's rounds and statuses. Every function takes the parsed record and returns escaped markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from markupsafe import Markup

from moot.protocols.agora.machine import MEDIATOR, AgoraTurn
from moot.protocols.council.machine import CouncilTurn, Review, Synthesis
from moot.protocols.critique.machine import CritiqueTurn
from moot.protocols.duel.machine import DuelTurn, Stance
from moot.protocols.roundtable.machine import Speech
from moot.web.svg import colour, el, figure, line, short, text

LEFT = 150  # room for the row labels
STEP = 46  # horizontal distance between two turns
ROW = 28
TOP = 34


def _order(names: Iterable[str]) -> list[str]:
    """Names in order of first appearance, once each."""
    return list(dict.fromkeys(names))


def _legend(names: Sequence[str], y: float) -> list[Markup]:
    parts: list[Markup] = []
    x = LEFT
    for index, name in enumerate(names):
        parts.append(el("circle", {"cx": x, "cy": y - 4, "r": 5, "fill": colour(index)}))
        parts.append(text(x + 9, y, short(name), class_="legend"))
        x += 20 + 8 * min(len(name), 18)
    return parts


def _axis(ticks: Iterable[object], y: float, label: str = "turn") -> list[Markup]:
    """The labels under the columns, one every ``STEP`` from ``LEFT``."""
    parts = [text(LEFT - 10, y, label, text_anchor="end", class_="axis")]
    parts += [text(LEFT + STEP * i, y, str(tick), text_anchor="middle", class_="axis") for i, tick in enumerate(ticks)]
    return parts


def duel_stances(turns: Sequence[DuelTurn]) -> Markup | None:
    """Each participant's stance after each of its turns, from dissent (top) to accepted consensus (bottom)."""
    if not turns:
        return None
    stances = [s.value for s in (Stance.DISSENTING, Stance.REVISING, Stance.OPEN_TO_DEBATE, Stance.CONVERGING)]
    stances.append(Stance.ACCEPTING_CONSENSUS.value)
    stances += _order(t.stance for t in turns if t.stance not in stances)  # an unknown stance still shows
    people = _order(t.participant for t in turns)
    width = LEFT + STEP * len(turns) + 20
    height = TOP + ROW * len(stances) + 40
    parts: list[Markup] = []
    for row, stance in enumerate(stances):
        y = TOP + ROW * row
        parts.append(line(LEFT - 6, y, width - 10, y, class_="grid"))
        parts.append(text(LEFT - 10, y + 4, short(stance, 20), text_anchor="end", class_="axis"))
    for index, person in enumerate(people):
        points = [
            (LEFT + STEP * i, TOP + ROW * stances.index(t.stance))
            for i, t in enumerate(turns)
            if t.participant == person
        ]
        path = " ".join(f"{x:.0f},{y:.0f}" for x, y in points)
        parts.append(el("polyline", {"points": path, "fill": "none", "stroke": colour(index), "stroke_width": 2}))
        for (x, y), turn in zip(points, [t for t in turns if t.participant == person], strict=True):
            dot = el("circle", {"cx": x, "cy": y, "r": 6, "fill": colour(index)}, el("title", None, _duel_tip(turn)))
            parts.append(dot)
    parts += _axis((t.number for t in turns), TOP + ROW * len(stances) + 2)
    parts += _legend(people, height - 8)
    return figure(width, height, "stance of each participant by turn", parts)


def _duel_tip(turn: DuelTurn) -> str:
    return f"turn {turn.number} · {turn.participant} · {turn.stance}"


SIGNAL_MARKS = {"propose": "P", "counter": "C", "approve": "A", "no-change": "N", "defer": "D"}


def agora_confidence(turns: Sequence[AgoraTurn]) -> Markup | None:
    """Each participant's confidence per turn, every point marked with its signal; proposals are ringed."""
    spoken = [t for t in turns if t.role != MEDIATOR]
    if not spoken:
        return None
    people = _order(t.role for t in spoken)
    first = turns[0].number
    plot_height = 150
    width = max(LEFT + STEP * (turns[-1].number - first + 1) + 20, LEFT + 460)
    height = TOP + plot_height + 64
    parts: list[Markup] = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = TOP + plot_height * (1 - tick)
        parts.append(line(LEFT - 6, y, width - 10, y, class_="grid"))
        parts.append(text(LEFT - 10, y + 4, f"{tick:.2f}", text_anchor="end", class_="axis"))
    parts.append(text(12, TOP - 14, "confidence", class_="axis"))
    for index, person in enumerate(people):
        mine = [t for t in spoken if t.role == person]
        points = [
            (LEFT + STEP * (t.number - first), TOP + plot_height * (1 - max(0.0, min(1.0, t.confidence)))) for t in mine
        ]
        path = " ".join(f"{x:.0f},{y:.0f}" for x, y in points)
        parts.append(el("polyline", {"points": path, "fill": "none", "stroke": colour(index), "stroke_width": 2}))
        for (x, y), turn in zip(points, mine, strict=True):
            tip = el("title", None, _agora_tip(turn))
            if turn.signal == "propose":
                parts.append(el("circle", {"cx": x, "cy": y, "r": 10, "fill": "none", "stroke": colour(index)}))
                parts.append(
                    text(x, y - 14, short(turn.proposal_id or "proposal", 22), text_anchor="middle", class_="axis")
                )
            parts.append(el("circle", {"cx": x, "cy": y, "r": 7, "fill": colour(index)}, tip))
            mark = SIGNAL_MARKS.get(turn.signal, "?")
            parts.append(text(x, y + 4, mark, text_anchor="middle", class_="mark"))
    mediated = [t for t in turns if t.role == MEDIATOR]
    for turn in mediated:
        x = LEFT + STEP * (turn.number - first)
        parts.append(line(x, TOP, x, TOP + plot_height, class_="mediator"))
    parts += _axis(range(first, turns[-1].number + 1), TOP + plot_height + 22)
    key = "  ".join(f"{mark} {signal}" for signal, mark in SIGNAL_MARKS.items()) + "  · ringed: a proposal"
    parts.append(text(LEFT, TOP + plot_height + 40, key, class_="axis"))
    parts += _legend(people + ([MEDIATOR] if mediated else []), height - 6)
    return figure(width, height, "confidence of each participant by turn, with its signal", parts)


def _agora_tip(turn: AgoraTurn) -> str:
    target = f" → {turn.target}" if turn.target else ""
    proposal = f" ({turn.proposal_id})" if turn.proposal_id else ""
    return f"turn {turn.number} · {turn.role} · {turn.signal}{proposal}{target} · confidence {turn.confidence:g}"


def roundtable_flow(speeches: Sequence[Speech], order: Sequence[str]) -> Markup | None:
    """Who spoke after whom: each speech a dot in its speaker's row, joined in the order they were given."""
    if not speeches:
        return None
    speakers = _order([*order, *(s.role for s in speeches)])
    width = LEFT + STEP * len(speeches) + 20
    height = TOP + ROW * len(speakers) + 40
    parts: list[Markup] = []
    for row, speaker in enumerate(speakers):
        y = TOP + ROW * row
        parts.append(line(LEFT - 6, y, width - 10, y, class_="grid"))
        parts.append(text(LEFT - 10, y + 4, short(speaker), text_anchor="end", class_="axis"))
    points = [(LEFT + STEP * i, TOP + ROW * speakers.index(s.role)) for i, s in enumerate(speeches)]
    path = " ".join(f"{x:.0f},{y:.0f}" for x, y in points)
    parts.append(el("polyline", {"points": path, "fill": "none", "stroke": "#888", "stroke_width": 1.5}))
    for (x, y), speech in zip(points, speeches, strict=True):
        tip = el("title", None, f"speech {speech.sequence} · {speech.role} · {len(speech.body.split())} words")
        parts.append(el("circle", {"cx": x, "cy": y, "r": 7, "fill": colour(speakers.index(speech.role))}, tip))
    if order:  # a new round starts each time the speaker order comes round again
        for i in range(len(order), len(speeches), len(order)):
            between = LEFT + STEP * i - STEP / 2
            parts.append(line(between, TOP - 12, between, TOP + ROW * (len(speakers) - 1) + 8, class_="round"))
    parts += _axis((s.sequence for s in speeches), TOP + ROW * len(speakers) + 4, label="speech")
    return figure(width, height, "speaker flow: who spoke after whom", parts)


def _label_member(review: Review, label: str) -> str | None:
    letter = label.strip().rsplit(" ", 1)[-1]
    index = ord(letter.upper()) - ord("A") if len(letter) == 1 else -1
    return review.shown[index] if 0 <= index < len(review.shown) else None


def council_rankings(turns: Sequence[CouncilTurn]) -> Markup | None:
    """The ranking matrix (each reviewer's place for each answer, 1 = best) and the aggregate Borda points."""
    reviews = [t for t in turns if isinstance(t, Review) and t.valid]
    synthesis = next((t for t in turns if isinstance(t, Synthesis)), None)
    if not reviews and synthesis is None:
        return None
    members = _order([m for r in reviews for m in r.shown] + [m for m, _ in (synthesis.ranking if synthesis else ())])
    cell = 56
    width = max(LEFT + cell * len(members) + 20, LEFT + 260)
    parts: list[Markup] = []
    y = TOP
    if reviews:
        parts.append(text(LEFT - 10, y - 14, "reviewer ↓ ranks →", text_anchor="end", class_="axis"))
        for col, member in enumerate(members):
            parts.append(
                text(LEFT + cell * col + cell / 2, y - 14, short(member, 7), text_anchor="middle", class_="axis")
            )
        for row, review in enumerate(reviews):
            top = y + cell * row - 10
            parts.append(text(LEFT - 10, top + cell / 2 + 4, short(review.reviewer), text_anchor="end", class_="axis"))
            places = {_label_member(review, label): place for place, label in enumerate(review.ranking, start=1)}
            for col, member in enumerate(members):
                place = places.get(member)
                shade = "#eee" if place is None else f"hsl(210, 60%, {35 + 45 * (place - 1) / max(1, len(places))}%)"
                box = {"x": LEFT + cell * col, "y": top, "width": cell - 2, "height": cell - 2, "fill": shade}
                tip = (
                    f"{review.reviewer} ranks {member} {place}" if place else f"{review.reviewer} did not rank {member}"
                )
                parts.append(el("rect", box, el("title", None, tip)))
                shown = "—" if place is None else str(place)
                parts.append(
                    text(
                        LEFT + cell * col + cell / 2 - 1, top + cell / 2 + 4, shown, text_anchor="middle", class_="cell"
                    )
                )
        y += cell * len(reviews) + 20
    if synthesis is not None and synthesis.ranking:
        parts.append(text(LEFT - 10, y + 4, "aggregate (Borda)", text_anchor="end", class_="axis"))
        y += 16
        best = max(points for _, points in synthesis.ranking) or 1
        for member, points in synthesis.ranking:
            bar = 200 * points / best
            parts.append(text(LEFT - 10, y + 12, short(member), text_anchor="end", class_="axis"))
            parts.append(
                el(
                    "rect",
                    {"x": LEFT, "y": y, "width": f"{bar:.1f}", "height": 16, "fill": colour(members.index(member))},
                )
            )
            parts.append(text(LEFT + bar + 6, y + 12, str(points), class_="axis"))
            y += 22
    return figure(width, y + 10, "council ranking matrix and aggregate ranking", parts)


STATUS_COLOURS = {"AWAITING": "#56b4e9", "PROPOSING_DONE": "#e69f00", "DONE": "#009e73", "STUCK": "#d55e00"}


def critique_rounds(turns: Sequence[CritiqueTurn]) -> Markup | None:
    """Each role's status in each round."""
    if not turns:
        return None
    roles = _order(t.role for t in turns)
    rounds = sorted({t.round for t in turns})
    width = max(LEFT + STEP * len(rounds) + 20, LEFT + 320)
    height = TOP + ROW * len(roles) + 44
    parts: list[Markup] = []
    for row, role in enumerate(roles):
        parts.append(text(LEFT - 24, TOP + ROW * row + 4, short(role), text_anchor="end", class_="axis"))
    for turn in turns:
        x = LEFT + STEP * rounds.index(turn.round)
        y = TOP + ROW * roles.index(turn.role)
        status = str(turn.status)
        tip = el("title", None, f"round {turn.round} · {turn.role} · {status}")
        box = {"x": x - 18, "y": y - 10, "width": 36, "height": 20, "rx": 4, "fill": STATUS_COLOURS.get(status, "#999")}
        parts.append(el("rect", box, tip))
        parts.append(text(x, y + 4, status[:1], text_anchor="middle", class_="mark"))
    parts += _axis(rounds, TOP + ROW * len(roles) + 2, label="round")
    key = "  ".join(f"{name[:1]} {name}" for name in STATUS_COLOURS)
    parts.append(text(LEFT, height - 8, key, class_="axis"))
    return figure(width, height, "status of each role by round", parts)

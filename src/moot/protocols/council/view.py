"""The council's panel in the viewer: the ranking matrix of the reviews (with each reviewer's stated confidence)
and the aggregate ranking, named by its aggregation (Borda, or confidence-weighted Borda)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from moot.core.confidence import confidence_text
from moot.plugin import Panel
from moot.protocols.council import record
from moot.protocols.council.machine import CONFIDENCE, CouncilTurn, Review, Synthesis, points_text
from moot.web.plots import LABEL_ROOM, LEFT, TOP, fit, latest, order
from moot.web.svg import colour, el, figure, text


def _label_member(review: Review, label: str) -> str | None:
    letter = label.strip().rsplit(" ", 1)[-1]
    index = ord(letter.upper()) - ord("A") if len(letter) == 1 else -1
    return review.shown[index] if 0 <= index < len(review.shown) else None


def rankings(turns: Sequence[CouncilTurn], aggregate: str | None = None) -> Markup | None:
    """The ranking matrix (each reviewer's place for each answer, 1 = best) and the aggregate Borda points,
    confidence-weighted where ``aggregate`` says so."""
    reviews = [t for t in turns if isinstance(t, Review) and t.valid]
    synthesis = next((t for t in turns if isinstance(t, Synthesis)), None)
    if not reviews and synthesis is None:
        return None
    members = order([m for r in reviews for m in r.shown] + [m for m, _ in (synthesis.ranking if synthesis else ())])
    cell = 56
    width = max(LEFT + cell * len(members) + 20, LEFT + 260)
    parts: list[Markup] = []
    y = TOP
    if reviews:
        parts += _matrix(reviews, members, cell)
        y += cell * len(reviews) + 20
    if synthesis is not None and synthesis.ranking:
        named = "aggregate (confidence-weighted Borda)" if aggregate == CONFIDENCE else "aggregate (Borda)"
        parts.append(text(LEFT - 10, y + 4, named, text_anchor="end", class_="axis"))
        y += 16
        best = max(points for _, points in synthesis.ranking) or 1
        for member, points in synthesis.ranking:
            bar = 200 * points / best
            parts.append(text(LEFT - 10, y + 12, fit(member, LABEL_ROOM), text_anchor="end", class_="axis"))
            parts.append(
                el(
                    "rect",
                    {"x": LEFT, "y": y, "width": f"{bar:.1f}", "height": 16, "fill": colour(members.index(member))},
                )
            )
            parts.append(text(LEFT + bar + 6, y + 12, points_text(points), class_="axis"))
            y += 22
    return figure(width, y + 10, "council ranking matrix and aggregate ranking", parts)


def _matrix(reviews: Sequence[Review], members: Sequence[str], cell: int) -> list[Markup]:
    """Each reviewer's row: the place it gave each member's answer, shaded darker the better."""
    y = TOP
    parts = [text(LEFT - 10, y - 14, "reviewer ↓ ranks →", text_anchor="end", class_="axis")]
    for col, member in enumerate(members):
        parts.append(
            text(LEFT + cell * col + cell / 2, y - 14, fit(member, cell - 6), text_anchor="middle", class_="axis")
        )
    for row, review in enumerate(reviews):
        top = y + cell * row - 10
        sure = "" if review.confidence is None else f" ({confidence_text(review.confidence)})"
        parts.append(
            text(
                LEFT - 10, top + cell / 2 + 4, fit(review.reviewer + sure, LABEL_ROOM), text_anchor="end", class_="axis"
            )
        )
        places = {_label_member(review, label): place for place, label in enumerate(review.ranking, start=1)}
        for col, member in enumerate(members):
            place = places.get(member)
            shade = "#eee" if place is None else f"hsl(210, 60%, {35 + 45 * (place - 1) / max(1, len(places))}%)"
            box = {"x": LEFT + cell * col, "y": top, "width": cell - 2, "height": cell - 2, "fill": shade}
            tip = f"{review.reviewer} ranks {member} {place}" if place else f"{review.reviewer} did not rank {member}"
            tip += f", confidence {confidence_text(review.confidence)}" if review.confidence is not None else ""
            parts.append(el("rect", box, el("title", None, tip)))
            shown = "—" if place is None else str(place)
            parts.append(
                text(LEFT + cell * col + cell / 2 - 1, top + cell / 2 + 4, shown, text_anchor="middle", class_="cell")
            )
    return parts


def panels(target: Path, document: str) -> list[Panel]:
    parsed = record.parse(document, str(target))
    turns, title = latest([source.turn for source in parsed.turns], "Ranking matrix and aggregate", first=True)
    svg = rankings(turns, parsed.config.aggregate if parsed.config is not None else None)
    return [Panel(title, svg)] if svg is not None else []

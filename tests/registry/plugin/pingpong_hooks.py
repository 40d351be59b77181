"""Ping-pong with the optional hooks a plugin may add: conformity positions and a viewer panel.

A player's position is a number: 1 while it returns the ball, 0 once it misses. The panel draws each return
with moot's drawing helpers (:mod:`moot.web.plots`, :mod:`moot.web.svg`). Its entry point is
``pingpong = pingpong_hooks:PLUGIN``, the bare plugin with ``analysis`` and ``view`` set.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from markupsafe import Markup
from pingpong import PLUGIN as BARE
from pingpong.protocol import MISS
from pingpong.record import parse

from moot.core.files import read_text
from moot.plugin import Analysis, Panel, Positions, Ref, Stated
from moot.web.plots import LEFT, ROW, STEP, TOP, axis, legend, order
from moot.web.svg import colour, el, figure


def positions(path: Path) -> list[Positions]:
    text, _ = read_text(path)
    config, volleys, _ = (None, [], []) if text is None else parse(text)
    if config is None:
        return []
    returned = [Stated(v.player, 0 if v.word == MISS else 1, n, turn=n) for n, v in enumerate(volleys, start=1)]
    return [Positions("returned", returned)]


def panels(path: Path, document: str) -> list[Panel]:
    config, volleys, _ = parse(document)
    if config is None or not volleys:
        return []
    players = order(v.player for v in volleys)
    parts: list[Markup] = []
    for i, v in enumerate(volleys):
        row = players.index(v.player)
        parts.append(el("circle", {"cx": LEFT + STEP * i, "cy": TOP + ROW * row, "r": 6, "fill": colour(row)}))
    parts += axis(range(1, len(volleys) + 1), TOP + ROW * len(players))
    parts += legend(players, TOP + ROW * len(players) + 24)
    return [Panel("Rally", figure(LEFT + STEP * len(volleys), TOP + ROW * len(players) + 30, "the rally", parts))]


ANALYSIS = Analysis(positions=positions)
PLUGIN = replace(BARE, analysis=Ref("pingpong_hooks:ANALYSIS"), view=Ref("pingpong_hooks:panels"))

"""Ping-pong with the optional hooks a plugin may add: conformity positions and a viewer panel.

A player's position is a number: 1 while it returns the ball, 0 once it misses. The panel draws each return
with moot's drawing helpers (``moot.plugin.plots`` and ``svg``). Its entry point is
``pingpong = pingpong_hooks:PLUGIN``, the bare plugin with ``analysis`` and ``view`` set.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from markupsafe import Markup
from pingpong import PLUGIN as BARE
from pingpong.protocol import MISS
from pingpong.record import parse

from moot.plugin import Analysis, Panel, Positions, Ref, Stated, plots, read_text, svg


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
    players = plots.order(v.player for v in volleys)
    bottom = plots.TOP + plots.ROW * len(players)
    parts: list[Markup] = []
    for i, v in enumerate(volleys):
        row = players.index(v.player)
        dot = {"cx": plots.LEFT + plots.STEP * i, "cy": plots.TOP + plots.ROW * row, "r": 6, "fill": svg.colour(row)}
        parts.append(svg.el("circle", dot))
    parts += plots.axis(range(1, len(volleys) + 1), bottom)
    parts += plots.legend(players, bottom + 24)
    return [Panel("Rally", svg.figure(plots.LEFT + plots.STEP * len(volleys), bottom + 30, "the rally", parts))]


ANALYSIS = Analysis(positions=positions)
PLUGIN = replace(BARE, analysis=Ref("pingpong_hooks:ANALYSIS"), view=Ref("pingpong_hooks:panels"))

"""Ping-pong's record: ``.pingpong/<slug>.md``, a title, the rally length and one line per return.

# Ping Pong: warm-up
Volleys: 4

- ping: ping
- pong: pong
"""

from __future__ import annotations

import re
from pathlib import Path

from moot.plugin import (
    FILE_RULES,
    CheckReport,
    RecordFormat,
    Rule,
    RuleBook,
    atomic_write_text,
    read_text,
    replay_report,
    slugify,
    unreadable,
)
from pingpong.protocol import PingPong, RallyConfig, Volley

FORMAT_RULES = RuleBook([Rule("PINGPONG_LINE", "Each return is one line '- PLAYER: WORD'.")])
TITLE = "# Ping Pong: "
_VOLLEYS = re.compile(r"Volleys: (\d+)$")
_LINE = re.compile(r"- (\w+): (\w+)$")


def path_for(root: Path, topic: str) -> Path:
    return root / ".pingpong" / f"{slugify(topic, 'rally')}.md"


def render(config: RallyConfig, volleys: tuple[Volley, ...]) -> str:
    lines = [f"{TITLE}{config.topic}", f"Volleys: {config.volleys}", ""]
    lines.extend(f"- {v.player}: {v.word}" for v in volleys)
    return "\n".join(lines) + "\n"


def parse(text: str) -> tuple[RallyConfig | None, list[Volley], list[str]]:
    """(config, returns, problems): a line that is not a return is a problem, not an exception."""
    lines = text.splitlines()
    volleys_line = _VOLLEYS.match(lines[1]) if len(lines) > 1 else None
    if not lines or not lines[0].startswith(TITLE) or volleys_line is None:
        return None, [], ["the record must start with '# Ping Pong: TOPIC' and 'Volleys: N'"]
    config = RallyConfig(topic=lines[0][len(TITLE) :], volleys=int(volleys_line.group(1)))
    volleys, problems = [], []
    for number, line in enumerate(lines[3:], start=4):
        match = _LINE.match(line)
        if match is None:
            problems.append(f"line {number} is not '- PLAYER: WORD'")
        else:
            volleys.append(Volley(player=match.group(1), word=match.group(2)))
    return config, volleys, problems


def write(path: Path, config: RallyConfig, volleys: tuple[Volley, ...]) -> None:
    """The whole record, replaced atomically: a crash leaves the old rally or the new one, never half."""
    atomic_write_text(path, render(config, volleys))


def check(path: Path) -> CheckReport:
    text, problems = read_text(path)
    if text is None:
        return unreadable(path, problems, "pingpong")
    config, volleys, bad_lines = parse(text)
    if config is None:
        return unreadable(path, [FILE_RULES.violation("NOT_A_MOOT_ARTIFACT", bad_lines[0])], "pingpong")
    machine = PingPong(config)
    replay = machine.replay(volleys)
    extra = [FORMAT_RULES.violation("PINGPONG_LINE", problem).at(file=str(path)) for problem in bad_lines]
    return replay_report(path, "pingpong", replay, machine.summary(replay.state), extra)


FORMAT = RecordFormat(check=check)

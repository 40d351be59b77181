"""Ping-pong's engine driver and its ``moot run pingpong`` command."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from moot import UserError
from moot.plugin import (
    AgentOpt,
    AgentRequest,
    AgentsOpt,
    Candidate,
    Driver,
    JsonOpt,
    Outcome,
    RootOpt,
    RunFlags,
    Summary,
    execute,
    now_minutes,
    read_text,
    reply_format_violation,
    taking_turns,
)
from pingpong import record
from pingpong.protocol import MISS, PLAYERS, PingPong, RallyConfig, Volley


@dataclass(frozen=True)
class PingPongOptions:
    topic: str
    volleys: int = 4


class PingPongDriver(Driver):
    protocol = "pingpong"
    options_type = PingPongOptions

    def __init__(self, path: Path) -> None:
        self.record_path = path
        text, _ = read_text(path)
        config, volleys, bad = (None, [], []) if text is None else record.parse(text)
        if config is None or bad:
            raise UserError(f"{path} is not a clean ping-pong record; run `moot check` on it.")
        self.config, self.machine, self.failure = config, PingPong(config), None
        self.state = self.machine.replay(volleys).state

    @classmethod
    def start(cls, root: Path, options: PingPongOptions, started: str) -> PingPongDriver:
        path = record.path_for(root, options.topic)
        if path.exists():
            raise UserError(f"{path} already exists; resume it with `moot resume {path}`.")
        record.write(path, RallyConfig(topic=options.topic, volleys=options.volleys), ())
        return cls(path)

    def roles(self) -> list[str]:
        return list(PLAYERS)

    def next_speaker(self) -> str | None:
        return None if self.failure is not None else self.machine.next_speaker(self.state)

    def request_for(self, role: str) -> AgentRequest:
        schema = {"type": "object", "properties": {"word": {"enum": [role, MISS]}}, "required": ["word"]}
        prompt = f"Rally about {self.config.topic}: return the ball by saying {role!r}."
        return AgentRequest(prompt=prompt, json_schema=schema, max_tokens=20, role=role, protocol=self.protocol)

    def read_reply(self, role: str, text: str, now: str) -> Candidate:
        try:
            turn = Volley(player=role, word=json.loads(text)["word"])
        except (ValueError, TypeError, KeyError):
            return Candidate(None, [reply_format_violation('answer with {"word": "..."}')])
        return Candidate(turn, self.machine.validate(self.state, turn))

    def commit(self, turn: Any) -> None:
        state = self.machine.step(self.state, turn)[0]
        record.write(self.record_path, self.config, state.volleys)
        self.state = state

    def fail(self, role: str, reason: str, now: str) -> Outcome:
        self.failure = Outcome(name="MISS", reason=reason)
        return self.failure

    def summary(self) -> Summary:
        summary = self.machine.summary(self.state)
        if self.failure is not None and summary.outcome is None:
            return summary.model_copy(update={"outcome": self.failure, "next_speaker": None})
        return summary

    def call_plan(self) -> list[str]:
        return taking_turns(PLAYERS, self.next_speaker(), self.config.volleys)


def run_pingpong(
    topic: Annotated[str, typer.Option("--topic", help="What the rally is about.")],
    volleys: Annotated[int, typer.Option("--volleys", min=2, help="Returns in a full rally.")] = 4,
    root: RootOpt = Path("."),
    agent: AgentOpt = None,
    agents: AgentsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A ping-pong rally: ping and pong return the ball until one misses."""
    driver = PingPongDriver.start(root, PingPongOptions(topic=topic, volleys=volleys), now_minutes())
    flags = RunFlags(
        root=root,
        agent=agent,
        agents=agents,
        as_json=as_json,
        follow=False,
        repairs=None,
        turn_timeout=None,
        max_tokens=None,
        max_wall=None,
    )
    execute(driver, flags)

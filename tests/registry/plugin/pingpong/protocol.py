"""Ping-pong's rules as a pure state machine (no I/O, no clock)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from moot.plugin import DeliberationProtocol, Outcome, Rule, RuleBook, Summary, Violation

PLAYERS = ("ping", "pong")
MISS = "miss"
RULES = RuleBook(
    [
        Rule("PINGPONG_ORDER", "ping serves, then the players return the ball in turn."),
        Rule("PINGPONG_WORD", "A player says its own name, or 'miss'."),
        Rule("PINGPONG_AFTER_END", "No return after the rally has ended."),
    ]
)


class RallyConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    topic: str
    volleys: int = Field(default=4, ge=2, le=20)


class Volley(BaseModel):
    model_config = ConfigDict(frozen=True)

    player: str
    word: str


class Rally(BaseModel):
    model_config = ConfigDict(frozen=True)

    volleys: tuple[Volley, ...] = ()


class PingPong(DeliberationProtocol[Volley, Rally]):
    name = "pingpong"
    rules = RULES
    turn_model = Volley

    def __init__(self, config: RallyConfig) -> None:
        self.config = config

    def initial_state(self) -> Rally:
        return Rally()

    def next_speaker(self, state: Rally) -> str | None:
        return None if self.outcome(state) is not None else PLAYERS[len(state.volleys) % 2]

    def validate(self, state: Rally, turn: Volley) -> list[Violation]:
        if self.outcome(state) is not None:
            return [RULES.violation("PINGPONG_AFTER_END", "the rally has ended; start a new one.")]
        found = []
        expected = PLAYERS[len(state.volleys) % 2]
        if turn.player != expected:
            found.append(RULES.violation("PINGPONG_ORDER", f"it is {expected}'s return, not {turn.player}'s."))
        if turn.word not in (turn.player, MISS):
            found.append(RULES.violation("PINGPONG_WORD", f"{turn.player} says {turn.player!r} or 'miss'."))
        return found

    def apply(self, state: Rally, turn: Volley) -> Rally:
        return Rally(volleys=(*state.volleys, turn))

    def outcome(self, state: Rally) -> Outcome | None:
        if any(v.word == MISS for v in state.volleys):
            return Outcome(name="MISS", reason="a player missed the ball")
        if len(state.volleys) >= self.config.volleys:
            return Outcome(name="RALLY", reason=f"{self.config.volleys} returns in a row", consensus=True)
        return None

    def summary(self, state: Rally) -> Summary:
        return Summary(
            protocol=self.name,
            turns=len(state.volleys),
            next_speaker=self.next_speaker(state),
            outcome=self.outcome(state),
        )

"""Shared builders for the Agora tests: configs, replies and a debate driven turn by turn."""

from __future__ import annotations

from collections.abc import Sequence

from moot.protocols.agora.machine import (
    AgoraConfig,
    AgoraProtocol,
    AgoraReply,
    AgoraState,
    AgoraTurn,
    Evidence,
    Methodology,
    Position,
    Signal,
)

EVIDENCE = (Evidence(source="codebase", content="3 switch statements in dispatch.clj", confidence=0.8),)


def config(
    *roles: str, methodology: Methodology = "opinion", max_turns: int = 20, deadlock_window: int = 3
) -> AgoraConfig:
    names = roles or ("advocate", "skeptic")
    return AgoraConfig(
        dialogue_id="dispatch-pattern",
        topic="Strategy or Decorator?",
        methodology=methodology,
        participants=tuple(Position(role=r, position=f"{r} is right.") for r in names),
        max_turns=max_turns,
        deadlock_window=deadlock_window,
    )


def reply(signal: Signal, target: str | None = None, *, evidence: bool = False, confidence: float = 0.7) -> AgoraReply:
    return AgoraReply(
        signal=signal,
        message=f"I {signal}.",  # short enough that repeating it is no AGORA_ECHO
        confidence=confidence,
        target=target,
        evidence=EVIDENCE if evidence else (),
    )


class Debate:
    """A protocol and its state, advanced with legal turns by whoever speaks next."""

    def __init__(self, cfg: AgoraConfig | None = None) -> None:
        self.protocol = AgoraProtocol(cfg or config())
        self.state: AgoraState = self.protocol.initial_state()
        self.turns: list[AgoraTurn] = []

    def turn(self, signal: Signal, target: str | None = None, *, evidence: bool = False) -> AgoraTurn:
        """The next speaker's turn with this signal (not yet applied)."""
        return self.protocol.next_turn(self.state, reply(signal, target, evidence=evidence))

    def say(self, signal: Signal, target: str | None = None, *, evidence: bool = False) -> AgoraTurn:
        """Step the next speaker's turn; raises ProtocolViolationError when it breaks a rule."""
        turn = self.turn(signal, target, evidence=evidence)
        self.state, _ = self.protocol.step(self.state, turn)
        self.turns.append(turn)
        return turn

    def play(self, moves: Sequence[tuple[Signal, str | None]]) -> None:
        for signal, target in moves:
            self.say(signal, target)

    def problems(self, turn: AgoraTurn) -> list[str]:
        """The rule ids ``turn`` would break now."""
        return [v.rule for v in self.protocol.validate(self.state, turn)]

"""A third-party agent backend, as a plugin package would ship it (target of a test entry point)."""

from __future__ import annotations

from moot.agents import Agent, AgentReply, AgentRequest


class ShoutAgent(Agent):
    name = "shout"

    def __init__(self, word: str) -> None:
        self.word = word

    async def reply(self, request: AgentRequest) -> AgentReply:
        return AgentReply(text=f"{self.word.upper()}: {request.prompt}", latency_s=0.0, model="shout")


def make_agent(rest: str) -> Agent:
    return ShoutAgent(rest or "hey")


def make_nothing(rest: str) -> object:
    return "not an agent"

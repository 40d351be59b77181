"""Many debates' requests at once against one OpenAI-compatible server: all of them are in flight together,
none waits for another, and no connection pool grows with their number (each pool's bookkeeping looks at
every connection it holds on every request, so one pool of thousands costs O(N²))."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("openai", reason="the openai SDK is not installed (pip install 'moot[openai]')")

from agents_helpers import chat_completion

from moot.agents import AgentRequest, OpenAIAgent
from moot.agents._lanes import LANE_REQUESTS, LanedTransport

HOLD_S = 0.5  # the server's time per answer, as a model's
REQUESTS = 120


class HoldingServer:
    """An HTTP/1.1 keep-alive chat server on loopback that answers each request after HOLD_S, counting how many
    it holds at once."""

    def __init__(self) -> None:
        self.holding = self.most_held = self.open = 0
        body = json.dumps(chat_completion('{"verdict": "agree", "reason": "fine"}')).encode()
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
        self.answer = head + body

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                self.holding += 1
                self.most_held = max(self.most_held, self.holding)
                await asyncio.sleep(HOLD_S)
                self.holding -= 1
                writer.write(self.answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self.open -= 1


def test_many_requests_at_once_are_all_in_flight_together_over_small_pools() -> None:
    async def run() -> tuple[HoldingServer, list[str], list[int]]:
        served = HoldingServer()
        server = await asyncio.start_server(served.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        agent = OpenAIAgent("scripted-model", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test")
        texts: list[str] = []
        for _ in range(2):  # a second round, as a debate's next turn
            replies = await asyncio.gather(*(agent.reply(AgentRequest(prompt="judge")) for _ in range(REQUESTS)))
            texts += [reply.text for reply in replies]
        transport = agent._clients.get()._client._transport
        assert isinstance(transport, LanedTransport)
        pools = [len(lane.transport._pool.connections) for lane in transport._lanes]
        await agent.aclose()
        while served.open:  # the server sees every connection close
            await asyncio.sleep(0.01)
        server.close()
        await server.wait_closed()
        return served, texts, pools

    served, texts, pools = asyncio.run(run())
    assert texts == [json.dumps({"verdict": "agree", "reason": "fine"})] * (2 * REQUESTS)
    assert served.most_held == REQUESTS  # nothing queued behind a pool limit: every request was at the server at once
    assert len(pools) == REQUESTS // LANE_REQUESTS and max(pools) <= 2 * LANE_REQUESTS  # lanes, none of them large

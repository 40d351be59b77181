"""``python -m bench.slow_server --latency S``: an OpenAI-compatible chat server on loopback that answers every
request after S seconds with the same critique turn (AWAITING). It prints its port, then serves until SIGTERM,
when it prints how late its answers were (JSON: answers, and the seconds past S at the median, p99 and worst),
so a run can show that the server itself kept its latency under the load.

The concurrency benchmark points thousands of debates at it: with the model's time fixed, what moot adds is
what keeps the turns/s below N ÷ latency. Plain asyncio streams and HTTP/1.1 keep-alive, so the server
itself costs little next to the debates it serves.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TURN = json.dumps({"message": "Keep one repository; scope the builds.", "status": "AWAITING", "summary": ""})
BODY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "slow",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": TURN}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }
).encode()
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(BODY)) + BODY


LATE_S: list[float] = []  # per answer: seconds past the latency between reading the request and writing the answer


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float) -> None:
    loop = asyncio.get_running_loop()
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            asked = loop.time()
            await asyncio.sleep(latency)
            writer.write(RESPONSE)
            LATE_S.append(loop.time() - asked - latency)
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(latency: float) -> None:
    server = await asyncio.start_server(
        lambda r, w: serve_connection(r, w, latency), "127.0.0.1", 0, backlog=4096, reuse_address=True
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with server:
        await stop.wait()
    print(json.dumps(lateness()), flush=True)


def lateness() -> dict[str, float | int]:
    late = sorted(LATE_S) or [0.0]
    return {
        "answers": len(LATE_S),
        "late_p50_s": statistics.median(late),
        "late_p99_s": late[min(len(late) - 1, int(len(late) * 0.99))],
        "late_max_s": late[-1],
    }


@dataclass
class Running:
    """A slow server in its own process: its port, and once stopped, its lateness report (``said``)."""

    port: int
    said: dict[str, float | int] | None = None


@contextmanager
def running(latency: float) -> Iterator[Running]:
    """``python -m bench.slow_server --latency LATENCY`` for the length of the block; stopped with SIGTERM."""
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.slow_server", "--latency", str(latency)],
        cwd=Path(__file__).resolve().parent.parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        served = Running(int(server.stdout.readline()))
        yield served
    finally:
        server.terminate()
        said, _ = server.communicate(timeout=60)  # the server's lateness, printed as it stops
    lines = said.strip().splitlines()
    served.said = json.loads(lines[-1]) if lines else None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.slow_server")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds before each answer")
    asyncio.run(main(parser.parse_args().latency))

"""An HTTP transport that spreads one endpoint's requests over small connection pools ("lanes").

httpx's connection pool looks at every connection it holds each time a request starts or ends (is it closed,
has the server hung up on it), which costs a system call per idle connection. With thousands of requests in
flight to one server (thousands of debates against one model endpoint) that is O(connections) per request and
O(N²) for the run: the event loop spends its time probing sockets, and the last requests miss their deadline.
Here each request goes to a lane with room, at most ``LANE_REQUESTS`` in flight each, and a new lane opens
when every lane is full; so a pool never holds more than a few dozen connections, and one TLS context serves
every lane.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

LANE_REQUESTS = 8  # requests in flight per lane; its pool keeps at most as many idle connections


class _Lane:
    def __init__(self, transport: httpx2.AsyncHTTPTransport) -> None:
        self.transport = transport
        self.in_flight = 0


class _Released(httpx2.AsyncByteStream):
    """A response body that gives its lane's place back when it is closed (once)."""

    def __init__(self, stream: httpx2.AsyncByteStream, release: _Release) -> None:
        self._stream = stream
        self._release = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            self._release()


class _Release:
    def __init__(self, transport: LanedTransport, lane: _Lane) -> None:
        self._transport, self._lane = transport, lane

    def __call__(self) -> None:
        if self._lane is not None:
            self._transport._release(self._lane)
            self._lane = None  # type: ignore[assignment]


class LanedTransport(httpx2.AsyncBaseTransport):
    """Requests over lanes of at most ``per_lane`` in flight, each lane its own small httpx pool."""

    def __init__(self, *, per_lane: int = LANE_REQUESTS) -> None:
        self._per_lane = per_lane
        self._ssl = httpx2.create_ssl_context()
        self._limits = httpx2.Limits(max_connections=None, max_keepalive_connections=per_lane)
        self._lanes: list[_Lane] = []
        self._open: list[_Lane] = []  # lanes with room; the last one is used first

    def _acquire(self) -> _Lane:
        if not self._open:
            lane = _Lane(httpx2.AsyncHTTPTransport(verify=self._ssl, limits=self._limits))
            self._lanes.append(lane)
            self._open.append(lane)
        lane = self._open[-1]
        lane.in_flight += 1
        if lane.in_flight >= self._per_lane:
            self._open.pop()
        return lane

    def _release(self, lane: _Lane) -> None:
        if lane.in_flight == self._per_lane:
            self._open.append(lane)
        lane.in_flight -= 1

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        lane = self._acquire()
        release = _Release(self, lane)
        try:
            response = await lane.transport.handle_async_request(request)
        except BaseException:
            release()
            raise
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _Released(response.stream, release)
        return response

    async def aclose(self) -> None:
        for lane in self._lanes:
            await lane.transport.aclose()

"""``moot serve`` under load and attack, seen from a real HTTP client: security headers on every response, and a
cap on the live-update streams open at once."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx2
from web_helpers import place_examples, serving

from moot.web.app import MAX_STREAMS

TOKEN = "bounds-viewer-token"
COOKIES = {"moot_token": TOKEN}


@contextmanager
def viewer(root: Path) -> Iterator[str]:
    """``moot serve`` on loopback with a known token; yields its base URL (no token in it)."""
    with serving(root, "--token", TOKEN) as url:
        yield url.split("?")[0]


def security_headers(response: httpx2.Response) -> None:
    """What every answer of the viewer carries as real headers, whatever its status."""
    policy = response.headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy, (response.url, policy)
    assert response.headers.get("x-content-type-options") == "nosniff", response.url
    assert response.headers.get("referrer-policy") == "no-referrer", response.url


def test_every_response_carries_the_security_headers(work_root: Path) -> None:
    placed = place_examples(work_root)
    with viewer(work_root) as base, httpx2.Client(timeout=30) as client:
        # Without the token: the refusal, and the redirect that sets the cookie.
        refused = client.get(base)
        assert refused.status_code == 401
        security_headers(refused)
        redirect = client.get(f"{base}?token={TOKEN}")
        assert redirect.status_code == 303
        security_headers(redirect)

        client.cookies.update(COOKIES)
        for url in (base, f"{base}r/{placed['duel']}", f"{base}r/{placed['roundtable']}"):
            page = client.get(url)
            assert page.status_code == 200
            security_headers(page)
            # The header allows exactly the script the page carries, as its meta tag does.
            nonce = re.search(r"<script nonce=\"([^\"]+)\">", page.text)
            assert nonce is not None and f"'nonce-{nonce.group(1)}'" in page.headers["content-security-policy"]
            assert "connect-src 'self'" in page.headers["content-security-policy"]
        missing = client.get(f"{base}r/no-such-record.md")
        assert missing.status_code == 404
        security_headers(missing)
        with client.stream("GET", f"{base}events") as stream:
            assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
            security_headers(stream)


@asynccontextmanager
async def streams(base: str, count: int) -> AsyncIterator[list[httpx2.Response]]:
    """``count`` live-update streams of the index, held open until the block ends."""
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(httpx2.AsyncClient(cookies=COOKIES, timeout=30))
        opened = [await stack.enter_async_context(client.stream("GET", f"{base}events")) for _ in range(count)]
        yield opened


def test_live_updates_past_the_cap_are_refused_with_a_503_until_one_closes(work_root: Path) -> None:
    place_examples(work_root)

    async def scenario(base: str) -> None:
        async with streams(base, MAX_STREAMS) as opened, httpx2.AsyncClient(cookies=COOKIES, timeout=30) as client:
            assert all(stream.status_code == 200 for stream in opened)
            refused = await client.get(f"{base}events")
            assert refused.status_code == 503
            assert f"already sends {MAX_STREAMS} live updates, its limit" in refused.text
            assert refused.headers["retry-after"].isdigit()
            security_headers(refused)
            page = await client.get(base)  # the pages themselves are still served
            assert page.status_code == 200
            await opened[0].aclose()  # the browser closed one page: its place is free once the server notices
            with anyio.fail_after(10):
                while True:
                    async with client.stream("GET", f"{base}events") as again:
                        if again.status_code == 200:
                            break
                    await anyio.sleep(0.2)

    with viewer(work_root) as base:
        anyio.run(scenario, base)

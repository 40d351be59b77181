"""``moot serve`` under load and attack, seen from a real HTTP client: security headers on every response, a cap
on the live-update streams open at once, and a long record shown a page at a time."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from html import unescape
from pathlib import Path

import anyio
import httpx2
import pytest
from web_helpers import TESTS, place_examples, serving, viewer_process

from moot.web.app import MAX_STREAMS
from moot.web.isolated import CHECKED_BYTES
from moot.web.transcript import LINE_CHARS

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


def repeated_duel(root: Path, size: int) -> tuple[Path, int]:
    """The example duel's turns repeated (renumbered) to about ``size`` bytes; returns the record and its turns."""
    example = (TESTS / "duel/examples/valid/consensus-six-turns.md").read_text(encoding="utf-8")
    example = example.split("## Terminal Conclusion")[0]
    starts = [m.start() for m in re.finditer("^## Turn ", example, re.MULTILINE)]
    header = example[: starts[0]]
    turns = [example[a:b] for a, b in zip(starts, [*starts[1:], len(example)], strict=True)]
    parts = [header]
    while sum(map(len, parts)) < size:
        parts.append(re.sub(r"Turn \d+", f"Turn {len(parts)}", turns[(len(parts) - 1) % len(turns)], count=1))
    record = root / "debates" / "2026-04-25-shared-cache.md"
    record.parent.mkdir(parents=True)
    record.write_text("".join(parts), encoding="utf-8")
    return record, len(parts) - 1


def test_a_long_record_is_shown_a_page_at_a_time_and_says_where_the_rest_is(work_root: Path) -> None:
    record, written = repeated_duel(work_root, CHECKED_BYTES - 256 * 1024)  # checked, in the viewer's child
    url = "r/debates/" + record.name
    with viewer(work_root) as base, httpx2.Client(cookies=COOKIES, timeout=300) as client:
        first = client.get(base + url)
        assert first.status_code == 200
        shown = unescape(first.text)
        pages = int(re.search(r"Page 1 of ([\d,]+)", shown).group(1).replace(",", ""))  # type: ignore[union-attr]
        assert pages > 1 and "too long for one page" in shown and "this page shows part of it" in shown
        assert 'href="?page=2">next</a>' in first.text and f'href="?page={pages}">last</a>' in first.text
        assert "## Turn 1 — alice" in shown and f"## Turn {written} —" not in shown
        assert len(first.content) < 1024 * 1024  # a page, not the record
        # The first violations are listed, each linked to where it is shown; the rest are on their own pages.
        assert re.search(r'href="#v\d+"><code>DUEL_MAX_TURNS</code>', first.text)
        assert f"more are shown on the transcript's pages, and <code>moot check {record.name}</code>" in shown
        second = client.get(f"{base}{url}?page=2")
        assert re.search(r'href="\?page=1#v\d+"><code>DUEL_MAX_TURNS</code>', second.text)
        assert re.search(r'<div class="violation error" id="v\d+"><code>DUEL_MAX_TURNS</code>', second.text)

        last = client.get(f"{base}{url}?page={pages}")
        assert f"## Turn {written} —" in unescape(last.text) and f"Page {pages} of {pages}" in unescape(last.text)
        assert 'href="?page=1">first</a>' in last.text and ">next</a>" not in last.text
        beyond = client.get(f"{base}{url}?page=999999")  # past the end: the last page
        assert f"Page {pages} of {pages}" in unescape(beyond.text)
        # The page's live updates follow that page.
        assert f'data-events="/events/debates/{record.name}?page={pages}"' in last.text


def test_a_record_too_large_to_check_is_still_shown_a_page_at_a_time_with_the_command_that_checks_it(
    work_root: Path,
) -> None:
    record, written = repeated_duel(work_root, 3 * CHECKED_BYTES)
    url = "r/debates/" + record.name
    with viewer(work_root) as base, httpx2.Client(cookies=COOKIES, timeout=300) as client:
        index = unescape(client.get(base).text)
        assert f"run moot check {record.name} for its verdict" in index and "unchecked" in index
        first = client.get(base + url)
        assert first.status_code == 200 and len(first.content) < 1024 * 1024
        shown = unescape(first.text)
        assert "unchecked" in shown and f"more than the {CHECKED_BYTES / 2**20:g} MiB the viewer checks" in shown
        assert f"run moot check {record.name} for its verdict" in shown
        assert "DUEL_MAX_TURNS" not in shown  # nothing was checked, so nothing is claimed
        # The text is the record's own, decoded (the headings' em dash), a page at a time.
        assert "## Turn 1 — alice" in shown and f"## Turn {written} —" not in shown
        pages = int(re.search(r"Page 1 of ([\d,]+)", shown).group(1).replace(",", ""))  # type: ignore[union-attr]
        last = unescape(client.get(f"{base}{url}?page={pages}").text)
        assert f"## Turn {written} — " in last and f"Page {pages} of {pages}" in last


def children_of(pid: int) -> set[int]:
    return {int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()}


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie has ended; only its parent's reaping is left


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_the_viewers_child_process_ends_with_the_viewer_however_it_is_stopped(
    work_root: Path, stop: signal.Signals
) -> None:
    record, _ = repeated_duel(work_root, CHECKED_BYTES - 256 * 1024)  # checked in the viewer's child
    with (
        viewer_process(work_root, "--token", TOKEN, stop=stop) as (viewer, url),
        httpx2.Client(cookies=COOKIES, timeout=300) as client,
    ):
        assert client.get(f"{url.split('?')[0]}r/debates/{record.name}").status_code == 200
        children = children_of(viewer.pid)
        assert children, "the viewer checked the record in no child process"
    deadline = time.monotonic() + 15
    while any(running(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ") for pid in children if running(pid)]
    assert not left, f"still running after the viewer was stopped: {left}"


def test_an_enormous_line_is_cut_and_says_how_much_is_left_out(work_root: Path) -> None:
    record = work_root / ".dialogues" / "one-line.md"
    record.parent.mkdir()
    example = (TESTS / "critique/examples/valid/planning-done.md").read_text(encoding="utf-8")
    record.write_text(example + "\n" + "x" * 2_000_000 + "\n", encoding="utf-8")
    with viewer(work_root) as base, httpx2.Client(cookies=COOKIES, timeout=300) as client:
        page = client.get(base + "r/.dialogues/one-line.md")
    assert page.status_code == 200 and len(page.content) < 1024 * 1024
    assert f"… {2_000_000 - LINE_CHARS:,} more characters on this line" in unescape(page.text)

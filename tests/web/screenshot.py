"""Take the README's screenshots of a record page: ``python tests/web/screenshot.py docs/img``.

It serves a copy of the duel examples with ``moot serve`` and photographs their pages in Debian's chromium: the
valid duel at 1280 px and 400 px, and an invalid one's source with a violation under its line. Each picture is
stored with a palette of 256 colours, which keeps it small.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from PIL import Image
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # web_helpers imports forked_moot, beside tests/
from web_helpers import CHROMIUM, TESTS, TOKEN_COOKIE, place_examples, serving

INVALID = "duel/examples/invalid/DUEL_AFTER_TERMINAL.md"


def shot(page: Any, out: Path) -> None:
    page.screenshot(path=str(out))
    Image.open(out).convert("RGB").quantize(256).save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")


def main(folder: Path) -> None:
    with tempfile.TemporaryDirectory() as work, sync_playwright() as playwright:
        root = Path(work)
        placed = place_examples(root)
        shutil.copyfile(TESTS / INVALID, root / "debates" / "after-the-end.md")
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        with serving(root) as url:
            for width, name in ((1280, "record-page.png"), (400, "record-page-narrow.png")):
                page = browser.new_page(viewport={"width": width, "height": 800})
                page.context.add_cookies([TOKEN_COOKIE])
                page.goto(url + "r/" + placed["duel"])
                page.locator("#live.on").wait_for()
                shot(page, folder / name)
                page.close()
            page = browser.new_page(viewport={"width": 1280, "height": 560})
            page.context.add_cookies([TOKEN_COOKIE])
            page.goto(url + "r/debates/after-the-end.md")
            page.locator("#live.on").wait_for()
            page.locator('label[for="view-source"]').click()
            page.locator(".source .violation").scroll_into_view_if_needed()
            page.evaluate("window.scrollBy(0, 200)")  # the line above it, and the violation, in the middle
            shot(page, folder / "record-source.png")
        browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Take the README's screenshot of a record page: ``python tests/web/screenshot.py docs/img/record-page.png``.

It serves a copy of the duel example with ``moot serve`` and photographs its page in Debian's chromium.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright
from web_helpers import CHROMIUM, TOKEN_COOKIE, place_examples, serving


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as work, sync_playwright() as playwright:
        root = Path(work)
        placed = place_examples(root)
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 720})
        page.context.add_cookies([TOKEN_COOKIE])
        with serving(root) as url:
            page.goto(url + "r/" + placed["duel"])
            page.locator("#live.on").wait_for()
            page.screenshot(path=str(out))
        browser.close()
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_helpers import CHROMIUM, TOKEN_COOKIE


def _chromium_problem() -> str | None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the browser tests need PyPI's playwright (pip install -e '.[dev]')"
    if not CHROMIUM.exists() and shutil.which("chromium") is None:
        return "the browser tests need Debian's chromium (apt-get install -y chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium, driven by playwright (its own browser download is not used).

    Module-scoped: playwright's sync API keeps an event loop running in this thread while it is open, and tests
    run after these call ``asyncio.run``."""
    problem = _chromium_problem()
    if problem is not None:
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    executable = str(CHROMIUM) if CHROMIUM.exists() else shutil.which("chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.add_cookies([TOKEN_COOKIE])  # as after opening the URL moot serve printed
    shown = context.new_page()
    shown.set_default_timeout(15_000)
    yield shown
    context.close()


@pytest.fixture
def work_root(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root

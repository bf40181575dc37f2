"""Test helpers for the web view: Debian's Chromium driven by Playwright, headless.

Browser tests skip when /usr/bin/chromium is absent, unless TOOLREEL_REQUIRE_UI=1 (CI), which fails
them instead. Playwright's own browser download is never used (`executable_path` is Debian's).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.async_api import Browser

__all__ = ["CHROMIUM", "SCREENSHOTS_ENV", "chromium", "needs_chromium", "screenshot_dir"]

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS_ENV = "TOOLREEL_SCREENSHOTS"  # a folder to keep the screenshots in (default: the test's tmp dir)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def needs_chromium() -> None:
    reason = None
    if not CHROMIUM.exists():
        reason = "Debian's chromium is not installed (apt-get install chromium; .ci/run does)"
    else:
        try:
            import playwright.async_api  # noqa: F401
        except ImportError:
            reason = "playwright is not installed (pip install -e '.[dev]')"
    if reason is None:
        return
    if os.environ.get("TOOLREEL_REQUIRE_UI") == "1":
        pytest.fail(f"TOOLREEL_REQUIRE_UI=1 but {reason}")
    pytest.skip(reason)


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    needs_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


def screenshot_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder

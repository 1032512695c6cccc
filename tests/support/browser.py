"""Headless Debian Chromium driven by Playwright (never a downloaded browser).

One browser per test module: `with chromium() as browser:` in a module-scoped fixture, then a
fresh context per test so cookies never leak between tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# `expect(...)` waits for the page's own event; 5 s (Playwright's default) is too short for a
# shell to start and answer on a machine whose two cores are busy with other work.
expect.set_options(timeout=15_000)


@contextmanager
def chromium(*extra_flags: str) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        args = [*FLAGS, *extra_flags]
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        try:
            yield browser
        finally:
            browser.close()

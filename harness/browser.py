"""Headless Debian Chromium driven by Playwright (never a downloaded browser).

One browser per test module: `with chromium() as browser:` in a module-scoped fixture, then a
fresh context per test so cookies never leak between tests.

By default the browser is Debian's `chromium-headless-shell`: the same Chromium build (Blink, V8,
the network stack) without the desktop browser's layer on top, which is what Playwright itself
runs for headless tests. A fresh context and page costs it ~0.05 s of CPU where `chromium
--headless` takes ~0.3 s, and a dashboard load ~0.2 s where it takes ~0.55 s; the suite opens
~200 of them. A module that needs what only the full browser has asks for `full=True`: Web Push
(the shell has no notification permission to grant) and a plain-HTTP tunnel host treated as a
secure origin (the shell ignores `--unsafely-treat-insecure-origin-as-secure`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
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
def chromium(*extra_flags: str, full: bool = False) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        args = [*FLAGS, *extra_flags]
        executable = CHROMIUM if full else HEADLESS_SHELL
        browser = playwright.chromium.launch(executable_path=executable, args=args, headless=True)
        try:
            yield browser
        finally:
            browser.close()

"""Moving around the dashboard as a person does: by its navigation (the sidebar's on a desktop,
the bottom bar and its "More" view on a phone), never by calling its code."""

from __future__ import annotations

from playwright.sync_api import Page, expect


def show(page: Page, view: str) -> None:
    """Opens a view (sessions, previews, turns, remote, channels, usage, search, settings, …)."""
    side = page.locator(f"#app-nav a.nav-{view}")
    if side.is_visible():
        side.click()
    elif page.locator(f"#bottom-nav a.nav-{view}").count():
        page.locator(f"#bottom-nav a.nav-{view}").click()
    else:
        page.locator("#bottom-nav a.nav-more").click()
        page.locator(f"#more-nav a.nav-{view}").click()
    expect(page.locator(f"#views > [data-view='{view}']")).to_be_visible()

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


def session_action(page: Page, name: str) -> None:
    """Clicks one of the open session's actions (Rename, Changes, Hand over, Stop, Resume,
    Close): in a row on a desktop, behind the head's "⋯" button on a phone."""
    head = page.locator("#session-panel .session-view.active .session-head")
    menu = head.get_by_role("button", name="Session actions")
    if menu.is_visible():
        menu.click()
    head.get_by_role("group", name="Session actions").get_by_role(
        "button", name=name, exact=True
    ).click()

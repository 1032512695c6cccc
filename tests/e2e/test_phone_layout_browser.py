"""The conversation first (issue 43, friction 6: "Phone chat is cramped: the notification offer,
the title and five buttons on two rows take ~40 % of the screen; the phone's Sessions view puts
the form before the list. At 1440×900 'Cancel turn' and the terminal's key bar are cut off at
the bottom"). In Chromium against a live daemon with the fake ACP agent, at 390×844 and 1440×900,
with the notification offer up as a new user sees it: the phone's chat log takes most of the
screen and the session's actions are one "⋯" away; the phone's Sessions view lists the sessions
before the form; a running turn's Cancel and the terminal's key bar are inside the viewport."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from harness.browser import chromium
from harness.daemon import Daemon
from harness.dashboard import show
from harness.termclient import create_session, start_hosting_daemon

ACTIVE = "#session-panel .session-view.active"
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 2,
}
DESKTOP = {"viewport": {"width": 1440, "height": 900}}
SIZES = {"desktop": DESKTOP, "phone": PHONE}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """The full Chromium: it offers notifications as a new user's browser does (the headless
    shell has them denied, so the offer that crowded the screen would never show)."""
    with chromium(full=True) as launched:
        yield launched


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-phone-layout"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def workspace(host: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("phone-layout") / "app"
    path.mkdir()
    httpx.post(
        f"{host.url}/api/workspaces",
        json={"path": str(path), "name": "app"},
        headers=host.owner_headers(),
    ).raise_for_status()
    return path


def open_page(browser: Browser, host: Daemon, size: str) -> Page:
    page = browser.new_context(**SIZES[size]).new_page()  # type: ignore[arg-type]
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator("#sidebar h1")).to_have_text("svc")
    return page


def open_from_list(page: Page, session: dict) -> None:
    """As a person does on either size: the session's Open button in the Sessions view."""
    show(page, "sessions")
    row = page.locator(f"#sessions tr[data-session-id='{session['id']}']")
    row.get_by_role("button", name="Open").click()
    expect(page.locator(ACTIVE)).to_have_attribute("data-session-id", session["id"])


def box(locator: Locator) -> dict:
    found = locator.bounding_box()
    assert found, f"{locator} has no box"
    return found


def bottom_of_screen(page: Page) -> float:
    """Where the screen's usable part ends: the viewport's foot, or a phone's bottom bar."""
    height = page.viewport_size["height"] if page.viewport_size else 0
    bar = page.locator("#bottom-nav")
    return box(bar)["y"] if bar.is_visible() else height


def inside(page: Page, locator: Locator) -> None:
    expect(locator).to_be_visible()
    found = box(locator)
    foot = bottom_of_screen(page)
    assert found["y"] >= 0 and found["y"] + found["height"] <= foot + 0.5, (
        f"{locator} spans {found['y']:.0f}–{found['y'] + found['height']:.0f}, screen ends {foot}"
    )


def said(page: Page, text: str) -> None:
    field = page.locator(f"{ACTIVE} .chat-input textarea")
    field.fill(f"echo {text}")
    field.press("Enter")
    expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text(text)


def test_the_phone_chat_gives_the_conversation_most_of_the_screen(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    chat = create_session(host, workspace, agent="fake", kind="chat")
    page = open_page(browser, host, "phone")
    try:
        open_from_list(page, chat)
        said(page, "first")
        # The conversation takes most of the screen: the offer (made when a session opens)
        # waits for another view, the head is one line ...
        log = box(page.locator(f"{ACTIVE} .chat-log"))
        assert log["height"] >= 0.55 * 844, f"the chat log is {log['height']:.0f} px of 844"
        expect(page.locator(".push-offer")).to_be_hidden()
        inside(page, page.locator(f"{ACTIVE} .chat-send"))
        head = page.locator(f"{ACTIVE} .session-head")
        assert box(head)["height"] <= 56, f"the head takes {box(head)['height']:.0f} px"
        # ... and the actions are one tap away, all on the screen once the menu is open.
        menu = head.get_by_role("button", name="Session actions")
        expect(menu).to_have_attribute("aria-expanded", "false")
        for name in ("Rename", "Changes", "Hand over", "Stop", "Close"):
            expect(head.get_by_role("button", name=name, exact=True)).to_be_hidden()
        menu.click()
        expect(menu).to_have_attribute("aria-expanded", "true")
        for name in ("Rename", "Changes", "Hand over", "Stop", "Close"):
            inside(page, head.get_by_role("button", name=name, exact=True))
        page.keyboard.press("Escape")
        expect(head.get_by_role("button", name="Stop", exact=True)).to_be_hidden()
        expect(menu).to_be_focused()
        menu.click()
        head.get_by_role("button", name="Hand over", exact=True).click()
        expect(head.get_by_role("button", name="Stop", exact=True)).to_be_hidden()  # closed
        expect(head.locator("[role=status]")).to_contain_text("Handover code")
        # The offer is still made, where it is out of a conversation's way.
        show(page, "sessions")
        expect(page.get_by_role("button", name="Not now")).to_be_visible()
    finally:
        page.context.close()


def test_the_phones_sessions_view_lists_the_sessions_before_the_form(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    create_session(host, workspace)
    page = open_page(browser, host, "phone")
    try:
        show(page, "sessions")
        listed = box(page.locator("#sessions tbody tr").first)
        form = box(page.locator("#new-session"))
        assert listed["y"] < form["y"], (listed, form)
        inside(page, page.locator("#sessions tbody tr").first)
    finally:
        page.context.close()


@pytest.mark.parametrize("size", list(SIZES))
def test_cancel_turn_and_the_key_bar_are_inside_the_viewport(
    browser: Browser, host: Daemon, workspace: Path, size: str
) -> None:
    chat = create_session(host, workspace, agent="fake", kind="chat")
    terminal = create_session(host, workspace)
    page = open_page(browser, host, size)
    try:
        open_from_list(page, chat)
        field = page.locator(f"{ACTIVE} .chat-input textarea")
        field.fill("sleep 30")  # a turn that runs until cancelled
        field.press("Enter")
        cancel = page.locator(f"{ACTIVE} .chat-cancel")
        expect(cancel).to_be_visible()
        if size == "desktop":  # the offer stays up above the pane, as a new user meets it
            expect(page.get_by_role("button", name="Not now")).to_be_visible()
        inside(page, cancel)
        inside(page, field)
        scrolls = page.evaluate("document.documentElement.scrollHeight - window.innerHeight")
        assert scrolls <= 0, f"the open chat scrolls the page by {scrolls}px"
        cancel.click()
        expect(cancel).to_be_hidden()

        open_from_list(page, terminal)
        keys = page.locator(f"{ACTIVE} .term-keys")
        inside(page, keys)
        inside(page, keys.get_by_role("button", name="Right"))
        screen = box(page.locator(f"{ACTIVE} .term-screen"))
        assert screen["height"] >= 200, f"the terminal got {screen['height']:.0f} px"
        scrolls = page.evaluate("document.documentElement.scrollHeight - window.innerHeight")
        assert scrolls <= 0, f"the open terminal scrolls the page by {scrolls}px"
    finally:
        page.context.close()

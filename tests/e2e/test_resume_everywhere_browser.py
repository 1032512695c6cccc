"""Resume works from every place it is offered, tab open or not (issue 34, friction 3: "Resume
does nothing when the chat's tab is open; a prompt then answers 'no live chat session …'. The
chat pane shows Stop but no Resume"). In Chromium against a live daemon with the fake ACP agent:
the sidebar's Resume with the chat's tab open, and the chat pane's own Resume after its agent
died mid-turn (at desktop and phone sizes), each followed by a prompt that gets its answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon
from harness.dashboard import show
from harness.termclient import get_session, start_hosting_daemon, stop_session
from tests.e2e.test_approvals_browser import PHONE, serious_violations

ACTIVE = "#session-panel .session-view.active"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-resume-everywhere"))
    yield server
    server.stop()


@pytest.fixture
def workspace(tmp_path: Path, host: Daemon) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    httpx.post(
        f"{host.url}/api/workspaces", json={"path": str(path)}, headers=host.owner_headers()
    ).raise_for_status()
    return path


def open_page(browser: Browser, host: Daemon, workspace: Path, **context: object) -> Page:
    page = browser.new_context(**context).new_page()  # type: ignore[arg-type]
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator(f"#new-workspace option[value='{workspace}']")).to_have_count(1)
    return page


def start_chat(page: Page, workspace: Path) -> str:
    show(page, "sessions")
    page.select_option("#new-agent", "fake")
    page.select_option("#new-workspace", str(workspace))
    page.select_option("#new-kind", "chat")
    page.click("#new-session button[type=submit]")
    expect(page.locator(f"{ACTIVE} .chat-input textarea")).to_be_visible()
    sid = page.locator(ACTIVE).get_attribute("data-session-id")
    assert sid
    return sid


def send(page: Page, text: str) -> None:
    box = page.locator(f"{ACTIVE} .chat-input textarea")
    box.fill(text)
    box.press("Enter")


def answered(page: Page, words: str) -> None:
    send(page, f"echo {words}")
    expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text(words)
    expect(page.locator(f"{ACTIVE} .chat-error")).to_have_count(0)  # no "no live chat session"


def test_resume_from_the_sidebar_with_the_chat_tab_open(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    page = open_page(browser, host, workspace, viewport={"width": 1280, "height": 800})
    try:
        sid = start_chat(page, workspace)
        answered(page, "before")
        stop_session(host, sid)  # from elsewhere (the CLI, a phone): the tab stays open
        item = page.locator(f"#sidebar li[data-session-id='{sid}']")
        expect(page.locator(f"{ACTIVE} .chat-ended")).to_be_visible()
        item.get_by_role("button", name="Resume").click()
        expect(
            page.locator(f"{ACTIVE} .session-head").get_by_role("button", name="Stop")
        ).to_be_visible()
        expect(item.get_by_role("button", name="Resume")).to_have_count(0)
        answered(page, "after-sidebar-resume")
        assert len(page.locator("#session-tabs .session-tab").all()) == 1
        assert get_session(host, sid)["status"] == "running"
        assert serious_violations(page) == []
    finally:
        page.context.close()
    stop_session(host, sid)


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_chat_whose_agent_died_says_so_and_resumes_from_its_pane(
    browser: Browser, host: Daemon, workspace: Path, size: str
) -> None:
    context = PHONE if size == "phone" else {"viewport": {"width": 1280, "height": 800}}
    page = open_page(browser, host, workspace, **context)
    try:
        sid = start_chat(page, workspace)
        send(page, "crash")
        ended = page.locator(f"{ACTIVE} .chat-ended")
        expect(ended).to_contain_text("exit code 3")
        expect(ended.locator(".chat-ended-detail")).to_contain_text("crashing on purpose")
        row = get_session(host, sid)
        assert row["exit_code"] == 3 and "crashing on purpose" in row["detail"], row
        assert serious_violations(page) == []
        ended.get_by_role("button", name="Resume").click()
        expect(ended).to_have_count(0)
        answered(page, "after-pane-resume")
        wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"the chat scrolls sideways by {wide}px"
    finally:
        page.context.close()
    stop_session(host, sid)

"""What a new user hit in the dashboard, in Chromium: a phone has no Ctrl key for the terminal
(a key bar under it sends Ctrl-C, Esc, Tab and the arrows), the chat had no Send button, agent
messages showed raw Markdown, a tool call showed as two lines, every turn ended in a raw
"— end_turn" line, Cancel showed when nothing ran, and a failed prompt read as svc's error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon
from harness.dashboard import session_action
from harness.termclient import start_hosting_daemon

ACTIVE = "#session-panel .session-view.active"  # the session tab shown
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-keys-chat"))
    yield server
    server.stop()


def open_page(browser: Browser, host: Daemon, workspace: Path, viewport: str) -> Page:
    httpx.post(
        f"{host.url}/api/workspaces", json={"path": str(workspace)}, headers=host.owner_headers()
    ).raise_for_status()
    page = browser.new_context(**VIEWPORTS[viewport]).new_page()
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator(f"#new-workspace option[value='{workspace}']")).to_have_count(1)
    return page


def start(page: Page, agent: str, workspace: Path, kind: str) -> None:
    page.select_option("#new-agent", agent)
    page.select_option("#new-workspace", str(workspace))
    page.select_option("#new-kind", kind)
    page.click("#new-session button[type=submit]")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def test_a_phone_sends_ctrl_c_and_arrows_from_the_key_bar(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    page = open_page(browser, host, workspace, "phone")
    try:
        start(page, "shell", workspace, "terminal")
        rows = page.locator(f"{ACTIVE} .xterm-rows")
        expect(rows).to_be_visible()
        bar = page.locator(f"{ACTIVE} .term-keys")
        expect(bar).to_be_visible()
        # The bar sits under the terminal, inside the phone's width.
        screen = page.locator(f"{ACTIVE} .xterm").bounding_box()
        keys = bar.bounding_box()
        assert screen and keys and keys["y"] >= screen["y"] + screen["height"] - 1
        assert keys["x"] + keys["width"] <= 390
        page.keyboard.type("echo up-$((2*3))")
        page.keyboard.press("Enter")
        expect(rows).to_contain_text("up-6")
        page.keyboard.type("sleep 30")
        page.keyboard.press("Enter")
        ctrl = bar.get_by_role("button", name="Control: the next key is sent with Ctrl")
        ctrl.tap()
        expect(ctrl).to_have_attribute("aria-pressed", "true")
        expect(page.locator(f"{ACTIVE} .xterm-helper-textarea")).to_be_focused()
        page.keyboard.type("c")  # Ctrl then c: the sleep is interrupted
        expect(ctrl).to_have_attribute("aria-pressed", "false")
        page.keyboard.type("echo after-$((6*7))")
        page.keyboard.press("Enter")
        expect(rows).to_contain_text("after-42", timeout=5000)
        # ↑ brings the last command back (arrows go as escape sequences).
        bar.get_by_role("button", name="Up").tap()
        bar.get_by_role("button", name="Up").tap()
        bar.get_by_role("button", name="Up").tap()
        page.keyboard.press("Enter")
        expect(rows.locator("div", has_text="up-6")).to_have_count(2)  # printed twice
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        page.context.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_chat_renders_markdown_safely_and_has_a_send_button(
    browser: Browser, host: Daemon, workspace: Path, viewport: str
) -> None:
    page = open_page(browser, host, workspace, viewport)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        start(page, "fake", workspace, "chat")
        box = page.locator(f"{ACTIVE} .chat-input textarea")
        expect(box).to_be_visible()
        cancel = page.locator(f"{ACTIVE} button:text('Cancel turn')")
        expect(cancel).to_be_hidden()  # no turn runs yet
        send = page.locator(f"{ACTIVE} button:text-is('Send')")
        expect(send).to_be_visible()
        box.fill("echo **bold** and `code` <img src=x onerror=alert(1)>")
        if viewport == "phone":
            send.tap()
        else:
            send.click()
        agent = page.locator(f"{ACTIVE} .chat-agent").last
        expect(agent.locator("strong")).to_have_text("bold")
        expect(agent.locator("code")).to_have_text("code")
        expect(agent).to_contain_text("<img src=x onerror=alert(1)>")  # shown as text
        expect(page.locator(f"{ACTIVE} .chat-log img")).to_have_count(0)
        expect(box).to_have_value("")
        # Enter still sends; a turn ends in a quiet separator, not "— end_turn".
        box.fill("echo second")
        box.press("Enter")
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text("second")
        expect(page.locator(f"{ACTIVE} .chat-turn-end")).to_have_count(2)
        expect(page.locator(f"{ACTIVE} .chat-log")).not_to_contain_text("end_turn")
        assert dialogs == []
    finally:
        page.context.close()


def test_a_tool_call_is_one_row_updated_in_place(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    page = open_page(browser, host, workspace, "desktop")
    try:
        start(page, "fake", workspace, "chat")
        box = page.locator(f"{ACTIVE} .chat-input textarea")
        box.fill("permission")
        box.press("Enter")
        tools = page.locator(f"{ACTIVE} .chat-tool")
        expect(tools).to_have_count(1)
        expect(tools).to_contain_text("rm -rf build")
        expect(tools).to_contain_text("pending")
        page.locator(f"{ACTIVE} .chat-permission button:text('Allow once')").click()
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text("permission: allow")
        expect(tools).to_have_count(1)
        expect(tools).to_contain_text("rm -rf build")
        expect(tools).to_contain_text("completed")
        expect(tools).not_to_contain_text("call-")
    finally:
        page.context.close()


def test_cancel_shows_only_while_a_turn_runs(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    page = open_page(browser, host, workspace, "phone")
    try:
        start(page, "fake", workspace, "chat")
        box = page.locator(f"{ACTIVE} .chat-input textarea")
        cancel = page.locator(f"{ACTIVE} button:text('Cancel turn')")
        expect(page.locator(f"{ACTIVE} .chat-end")).to_contain_text("session running")
        expect(cancel).to_be_hidden()
        box.fill("sleep 20")
        page.locator(f"{ACTIVE} button:text-is('Send')").tap()
        expect(cancel).to_be_visible()
        cancel.tap()
        expect(cancel).to_be_hidden(timeout=5000)
        expect(page.locator(f"{ACTIVE} .chat-turn-end").last).to_have_text("turn cancelled")
        # Reopened while a turn runs, the chat shows Cancel again.
        box.fill("sleep 20")
        box.press("Enter")
        expect(cancel).to_be_visible()
        chat_id = page.locator("#session-panel").get_attribute("data-session-id")
        session_action(page, "Close")  # behind the head's "⋯" on a phone
        page.goto(f"{page.url.split('#')[0]}#session={chat_id}")
        page.reload()
        expect(page.locator(f"{ACTIVE} button:text('Cancel turn')")).to_be_visible()
        page.locator(f"{ACTIVE} button:text('Cancel turn')").tap()
        expect(page.locator(f"{ACTIVE} button:text('Cancel turn')")).to_be_hidden(timeout=5000)
    finally:
        page.context.close()


def test_a_failed_prompt_reads_as_the_agents_own_message(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    page = open_page(browser, host, workspace, "desktop")
    try:
        start(page, "fake", workspace, "chat")
        box = page.locator(f"{ACTIVE} .chat-input textarea")
        box.fill("crash")
        box.press("Enter")
        failed = page.locator(f"{ACTIVE} .chat-agent", has_text="prompt failed")
        expect(failed).to_have_count(1, timeout=15000)
        expect(page.locator(f"{ACTIVE} .chat-error", has_text="prompt failed")).to_have_count(0)
        expect(page.locator(f"{ACTIVE} button:text('Cancel turn')")).to_be_hidden()
    finally:
        page.context.close()


def test_a_prompt_the_agent_refused_shows_its_words_and_its_log(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    """Agents answer a failed prompt with JSON-RPC's "Internal error" and the reason in `data`:
    the chat showed "prompt failed: Internal error" and nothing else."""
    page = open_page(browser, host, workspace, "desktop")
    try:
        start(page, "fake", workspace, "chat")
        box = page.locator(f"{ACTIVE} .chat-input textarea")
        box.fill("fail the model said: quota exceeded for this key")
        box.press("Enter")
        failed = page.locator(f"{ACTIVE} .chat-agent-error")
        expect(failed).to_contain_text("prompt failed: the model said: quota exceeded for this key")
        expect(failed).not_to_contain_text("Internal error")
        failed.locator("summary", has_text="The agent's log").click()
        expect(failed.locator(".agent-log")).to_contain_text(
            "fake agent: the model said: quota exceeded for this key"
        )
    finally:
        page.context.close()

"""The dashboard's terminal and chat in headless Chromium against a live daemon."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.sessions_app.termclient import start_hosting_daemon
from tests.support.daemon import Daemon


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-dash"))
    yield server
    server.stop()


@pytest.fixture
def page(browser: Browser, host: Daemon) -> Iterator[Page]:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{host.url}/login?token={host.owner_token}")
    page.goto(f"{host.url}/")
    yield page
    context.close()


def start(page: Page, agent: str, workspace: Path, kind: str) -> None:
    page.select_option("#new-agent", agent)
    page.fill("#new-session input[name=workspace]", str(workspace))
    page.select_option("#new-session select[name=kind]", kind)
    page.click("#new-session button[type=submit]")


def sessions(host: Daemon) -> list[dict]:
    return httpx.get(f"{host.url}/api/sessions", headers=host.owner_headers()).json()


def test_a_terminal_opened_from_the_dashboard_runs_commands(
    page: Page, host: Daemon, tmp_path: Path
) -> None:
    expect(page.locator("#new-agent option[value=shell]")).to_have_count(1)
    start(page, "shell", tmp_path, "terminal")
    rows = page.locator("#session-panel .xterm-rows")
    expect(rows).to_be_visible()
    page.locator("#session-panel .xterm").click()
    page.keyboard.type("echo svc-$((6*7))")
    page.keyboard.press("Enter")
    expect(rows).to_contain_text("svc-42")
    created = next(s for s in sessions(host) if s["workspace"] == str(tmp_path.resolve()))
    assert created["status"] == "running"
    page.click("#session-panel button:text('Stop')")
    expect(rows).to_contain_text("process exited with code")


def test_a_chat_opened_from_the_dashboard_streams_and_asks_permission(
    page: Page, host: Daemon, tmp_path: Path
) -> None:
    start(page, "fake", tmp_path, "chat")
    box = page.locator("#session-panel textarea")
    expect(box).to_be_visible()
    box.fill("echo hello dashboard")
    box.press("Enter")
    expect(page.locator(".chat-agent").last).to_have_text("hello dashboard")
    box.fill("permission")
    box.press("Enter")
    page.locator(".chat-permission button:text('Allow once')").click()
    expect(page.locator(".chat-agent").last).to_have_text("permission: allow")
    page.click("#session-panel button:text('Stop')")
    expect(page.locator(".chat-end").last).to_contain_text("session exited")

"""Chat channels from the owner's side (contract §14): `manage.py channels` against a live daemon
and the dashboard's Channels section in Chromium. The daemon declares a Telegram bot whose Bot API
root is a closed local port (so it never gets online and says why) and a disabled Slack app; its
literal token never shows in the CLI, /api/channels, /api/settings or the daemon's log."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, expect

from harness.daemon import Daemon, migrated_home
from harness.dashboard import show

TOKEN = "123:ABC"
SETTINGS = {
    "channels": {
        "telegram": {
            "api_base": "http://127.0.0.1:9",  # nothing listens: getMe fails at once
            "bot_token": TOKEN,
            "allowed_users": [1],
        },
        "slack": {"enabled": False, "bot_token": "xoxb-NOPE", "app_token": "xapp-NOPE"},
    }
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    home = migrated_home(tmp_path_factory.mktemp("svc-channels-ui") / "home", settings=SETTINGS)
    daemon = Daemon(home).start()
    yield daemon
    daemon.stop()


def get(server: Daemon, path: str) -> httpx.Response:
    response = httpx.get(f"{server.url}/api/{path}", headers=server.owner_headers())
    assert response.status_code == 200, response.text
    return response


def telegram_failed(server: Daemon) -> dict:
    """The telegram row once its first start has failed (it is retried with a growing backoff)."""
    deadline = time.monotonic() + 20
    while True:
        row = next(r for r in get(server, "channels").json() if r["name"] == "telegram")
        if row["status"] == "error":
            return row
        assert row["status"] == "connecting" and time.monotonic() < deadline, row
        time.sleep(0.2)


def test_cli_lists_channels_and_never_a_token(server: Daemon) -> None:
    assert telegram_failed(server)["detail"]
    listed = server.manage("channels", "--json").stdout
    rows = {r["name"]: r for r in json.loads(listed)}
    assert list(rows) == ["web", "slack", "telegram"]
    assert rows["web"]["builtin"] is True and rows["web"]["status"] == "online"
    telegram = rows["telegram"]
    assert telegram["kind"] == "telegram" and telegram["status"] in ("connecting", "error")
    assert telegram["status"] == "connecting" or telegram["detail"], telegram
    assert telegram["chats"] == 0 and telegram["bot"] is None
    assert (rows["slack"]["kind"], rows["slack"]["status"], rows["slack"]["enabled"]) == (
        "slack",
        "disabled",
        False,
    )

    table = server.manage("channels").stdout.splitlines()
    assert table[0].split() == ["name", "kind", "status", "bot", "chats", "detail"]
    assert [line.split()[:2] for line in table[1:]] == [
        ["web", "web"],
        ["slack", "slack"],
        ["telegram", "telegram"],
    ]

    api_rows = get(server, "channels").text
    shown = get(server, "settings").json()["channels"]
    assert shown["telegram"]["bot_token"] == "[redacted]"
    assert shown["telegram"]["api_base"] == "http://127.0.0.1:9"
    for text in (listed, "\n".join(table), api_rows, json.dumps(shown), server.log()):
        for secret in (TOKEN, "xoxb-NOPE", "xapp-NOPE"):
            assert secret not in text


def test_dashboard_channels_section(browser: Browser, server: Daemon) -> None:
    detail = telegram_failed(server)["detail"]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{server.url}/login?token={server.owner_token}")  # hands over to the dashboard
        section = page.locator("#channels-box")
        expect(page.locator("#app-nav a.nav-channels")).to_have_text("Channels")
        show(page, "channels")
        expect(section.locator("h2")).to_have_text("Channels")
        expect(section.locator(".hint").first).to_contain_text("docs/channels.md")
        expect(page.locator("#settings-box #channels")).to_have_count(0)

        cards = section.locator("#channels > li")
        expect(cards).to_have_count(3)
        expect(cards.nth(0)).to_have_attribute("data-channel", "web")
        web = section.locator('li[data-channel="web"]')
        expect(web).to_contain_text("built-in")
        expect(web.locator(".channel-status")).to_have_text("online")

        slack = section.locator('li[data-channel="slack"]')
        expect(slack.locator(".channel-status")).to_have_text("disabled")
        expect(slack).to_contain_text('"enabled": false')

        telegram = section.locator('li[data-channel="telegram"]')
        expect(telegram).to_contain_text("telegram")
        expect(telegram).to_contain_text("0 chats")
        # The card follows the retries live; while it waits to retry, it says what failed.
        expect(telegram).to_have_attribute("data-status", "error", timeout=15000)
        expect(telegram.locator(".channel-status")).to_have_text("error")
        # After it, the countdown to the next try and a link to docs/channels.md (issue 43).
        expect(telegram.locator(".channel-detail")).to_contain_text(detail)
        expect(telegram.locator(".channel-detail .retry-in")).to_contain_text("trying again")
        assert TOKEN not in page.content()
    finally:
        context.close()

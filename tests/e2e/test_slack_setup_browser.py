"""Slack from the dashboard (issue 34, "Chat apps from the dashboard"), against a live daemon,
Debian's Chromium and the fake Slack (harness/fakes/slack_api.py: Web API and Socket Mode) at a
desktop and a phone size: the bot and app tokens pasted in the Channels view's Slack form, Check
shows the bot's name (auth.test), Save brings the channel online (Socket Mode) and keeps both
tokens in $SVC_HOME/secrets.json (0600, never in settings.json nor any answer or log), a message
from a user not yet allowed shows them by their Slack name (users.info) with Allow, one click,
and that user's next message starts a session whose answer arrives through chat.postMessage /
chat.update. The view is axe-clean. A token Slack refuses (invalid_auth) is a 400 and nothing is
stored; a paired device is refused (403 main_port_only)."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon
from harness.dashboard import show
from harness.fakes.slack_api import FakeSlack
from tests.e2e.test_approvals_browser import PHONE, serious_violations
from tests.e2e.test_channels_setup_browser import DESKTOP, host, until
from tests.e2e.test_remote_tunnel import Remote

__all__ = ["host"]  # the live daemon with a workspace, as the Telegram test has it
NEWCOMER = "U0GRACE"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(bot_name="ada_helper", retry_delays=(0.0, 0.5, 1.0)).start()
    fake.add_user(NEWCOMER, "grace")
    yield fake
    fake.stop()


def answers(slack: FakeSlack, thread: str) -> list[str]:
    """The bot's messages in `thread` as they read now (chat.update applied)."""
    return [m["text"] for m in slack.posted() if m.get("thread_ts") == thread]


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_slack_from_the_dashboard(
    browser: Browser, host: Daemon, slack: FakeSlack, size: dict
) -> None:
    page: Page = browser.new_context(**size).new_page()  # type: ignore[arg-type]
    try:
        page.goto(f"{host.url}/login?token={host.owner_token}")
        show(page, "channels")
        form = page.locator("#slack-setup")
        expect(form.locator("select[name=agent] option[value=fake]")).to_have_count(1)
        form.locator("input[name=bot_token]").fill(slack.bot_token)
        form.locator("input[name=app_token]").fill(slack.app_token)
        form.locator("summary").click()
        form.locator("input[name=api_base]").fill(slack.base_url)
        form.get_by_role("button", name="Check").click()
        expect(form.locator("[data-bot]")).to_contain_text("@ada_helper")
        expect(page.locator("#slack-setup-status")).to_contain_text("Token works: @ada_helper")
        assert [c.token for c in slack.calls("auth.test")] == [slack.bot_token]
        form.locator("select[name=agent]").select_option("fake")
        form.get_by_role("button", name="Save").click()
        expect(page.locator("#slack-setup-status")).to_contain_text("Saved")
        expect(form.locator("input[name=bot_token]")).to_have_value("")
        expect(form.locator("input[name=app_token]")).to_have_value("")

        card = page.locator('li[data-channel="slack"]')
        expect(card).to_have_attribute("data-status", "online", timeout=20000)
        expect(card).to_contain_text("@ada_helper")

        # Both tokens: in secrets.json (0600) only.
        secrets = host.home / "secrets.json"
        assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
        kept = json.loads(secrets.read_text())
        assert slack.bot_token in kept.values() and slack.app_token in kept.values()
        written = (host.home / "settings.json").read_text()
        entry = json.loads(written)["channels"]["slack"]
        assert entry["bot_token_secret"] == "channels.slack.bot_token"
        assert entry["app_token_secret"] == "channels.slack.app_token"
        assert slack.bot_token not in written and slack.app_token not in written

        # A newcomer writes: told no in the thread, and asking in the dashboard by their name.
        first = slack.post_message(NEWCOMER, "hello?")
        until(lambda: answers(slack, first), "the newcomer is answered")
        assert "not allowed" in answers(slack, first)[0]
        asking = card.locator(f'[data-asking="{NEWCOMER}"]')
        expect(asking).to_contain_text("grace")
        wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"the Channels view scrolls sideways by {wide}px"
        assert serious_violations(page) == []

        asking.get_by_role("button", name="Allow grace").click()
        expect(card.locator("#asking-status-slack")).to_contain_text("Allowed grace")
        expect(asking).to_have_count(0)
        entry = json.loads((host.home / "settings.json").read_text())["channels"]["slack"]
        assert entry["allowed_users"] == [NEWCOMER]

        # Their next message starts a session of the channel's agent and is answered.
        asked = slack.post_message(NEWCOMER, "echo hello from grace")
        done = until(
            lambda: [t for t in answers(slack, asked) if "— done" in t],
            f"an answer; the thread shows {answers(slack, asked)}",
            timeout=60,
        )
        assert "hello from grace" in done[-1]
        assert slack.updates(), "the answer streams by chat.update"
        shown = httpx.get(f"{host.url}/api/sessions", headers=host.owner_headers()).json()
        assert [s["agent"] for s in shown] == ["fake"]

        # The tokens were never in an answer, nor in the daemon's log.
        for path in ("channels", "settings", "channels/slack/asking"):
            got = httpx.get(f"{host.url}/api/{path}", headers=host.owner_headers())
            assert got.status_code == 200
            assert slack.bot_token not in got.text and slack.app_token not in got.text
        assert slack.bot_token not in host.log() and slack.app_token not in host.log()
    finally:
        page.context.close()


def test_refused_slack_tokens_and_a_paired_device_are_refused(
    host: Daemon, slack: FakeSlack
) -> None:
    owner = host.owner_headers()
    wrong_bot = {"bot_token": "xoxb-wrong", "app_token": slack.app_token}
    checked = httpx.post(
        f"{host.url}/api/channels/slack/check",
        json={**wrong_bot, "api_base": slack.base_url},
        headers=owner,
        timeout=30,
    )
    assert checked.status_code == 400, checked.text
    assert (
        checked.json()["error"]["message"] == "Slack refused the bot token (xoxb-…): invalid_auth"
    )
    assert [c.error for c in slack.calls("auth.test")] == ["invalid_auth"]
    wrong_app = {"bot_token": slack.bot_token, "app_token": "xapp-wrong"}
    for body in (wrong_bot, wrong_app):
        saved = httpx.put(
            f"{host.url}/api/channels/slack",
            json={**body, "api_base": slack.base_url},
            headers=owner,
            timeout=30,
        )
        assert saved.status_code == 400, saved.text
        assert "Slack refused the" in saved.json()["error"]["message"]
        assert "wrong" not in saved.text and slack.bot_token not in saved.text
    assert "app token" in saved.json()["error"]["message"]
    assert not (host.home / "secrets.json").exists()
    assert "slack" not in json.loads((host.home / "settings.json").read_text()).get("channels", {})

    asked_slack = len(slack.log)
    remote = Remote(host, host.auth()["remote_port"])
    with remote.client() as client:
        key = {"X-Svc-Page-Key": remote.pair(client)["page_key"]}
        for method, path, body in (
            ("POST", "/api/channels/slack/check", {**wrong_app, "bot_token": slack.bot_token}),
            ("PUT", "/api/channels/slack", {"bot_token": slack.bot_token}),
            ("POST", "/api/channels/slack/allow", {"user": NEWCOMER}),
        ):
            refused = client.request(method, path, json=body, headers=key)
            assert refused.status_code == 403, (path, refused.text)
            assert refused.json()["error"]["code"] == "main_port_only"
    assert not (host.home / "secrets.json").exists()
    assert len(slack.log) == asked_slack, "a paired device's check reached Slack"

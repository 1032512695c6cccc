"""Chat apps from the dashboard (issue 34, friction 4 and acceptance 3), against a live daemon,
Debian's Chromium and the fake Bot API (harness/fakes/telegram_api.py) at a desktop and a phone
size: the BotFather token pasted in the Channels view, Check shows the bot's name, Save keeps the
token in $SVC_HOME/secrets.json (0600, never in settings.json nor any answer or log), `/start`
from a new user shows them with Allow, one click, and that user's next message starts a session
of the channel's agent and gets its answer through sendMessage. The view is axe-clean. The new
endpoints refuse a paired device (403 main_port_only) and a token Telegram refuses (400)."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon
from harness.dashboard import show
from harness.fakes.telegram_api import FakeTelegram
from harness.termclient import start_hosting_daemon
from tests.e2e.test_approvals_browser import PHONE, serious_violations
from tests.e2e.test_remote_tunnel import Remote

DESKTOP = {"viewport": {"width": 1280, "height": 900}}
NEWCOMER = 4242


def until(predicate: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    """Poll: FakeTelegram.wait_for refuses to block beside Playwright's own loop."""
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)
    return found


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    fake = FakeTelegram(bot_first_name="Ada's helper", bot_username="ada_svc_bot").start()
    yield fake
    fake.stop()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    httpx.post(
        f"{server.url}/api/workspaces", json={"path": str(work)}, headers=server.owner_headers()
    ).raise_for_status()
    yield server
    server.stop()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_telegram_from_the_dashboard(
    browser: Browser, host: Daemon, tg: FakeTelegram, size: dict
) -> None:
    page: Page = browser.new_context(**size).new_page()  # type: ignore[arg-type]
    try:
        page.goto(f"{host.url}/login?token={host.owner_token}")
        show(page, "channels")
        form = page.locator("#telegram-setup")
        expect(form.locator("select[name=agent] option[value=fake]")).to_have_count(1)
        form.locator("input[name=bot_token]").fill(tg.token)
        form.locator("summary").click()
        form.locator("input[name=api_base]").fill(tg.api_base)
        form.get_by_role("button", name="Check").click()
        expect(form.locator("[data-bot]")).to_contain_text("@ada_svc_bot")
        expect(form.locator("[data-bot]")).to_contain_text("Ada's helper")
        form.locator("select[name=agent]").select_option("fake")
        form.get_by_role("button", name="Save").click()
        expect(page.locator("#telegram-setup-status")).to_contain_text("Saved")
        expect(form.locator("input[name=bot_token]")).to_have_value("")

        card = page.locator('li[data-channel="telegram"]')
        expect(card).to_have_attribute("data-status", "online", timeout=20000)
        expect(card).to_contain_text("Send /start to @ada_svc_bot")

        # The token: in secrets.json (0600) only.
        secrets = host.home / "secrets.json"
        assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
        assert tg.token in secrets.read_text()
        entry = json.loads((host.home / "settings.json").read_text())["channels"]["telegram"]
        assert (
            entry["bot_token_secret"] == "channels.telegram.bot_token" and "bot_token" not in entry
        )

        # A newcomer writes /start: told no, and asking in the dashboard.
        tg.send_text(NEWCOMER, "/start", first_name="Grace", username="grace")
        until(lambda: tg.sent(NEWCOMER), "the newcomer is answered")
        assert "not allowed" in tg.sent(NEWCOMER)[0]["text"]
        asking = card.locator(f'[data-asking="{NEWCOMER}"]')
        expect(asking).to_contain_text("@grace")
        wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"the Channels view scrolls sideways by {wide}px"
        assert serious_violations(page) == []

        asking.get_by_role("button", name="Allow @grace").click()
        expect(card.locator("#asking-status-telegram")).to_contain_text("Allowed @grace")
        expect(asking).to_have_count(0)
        entry = json.loads((host.home / "settings.json").read_text())["channels"]["telegram"]
        assert entry["allowed_users"] == [NEWCOMER]

        # Their next message starts a session of the channel's agent and is answered.
        tg.send_text(NEWCOMER, "echo hello from grace", first_name="Grace", username="grace")
        done = until(
            lambda: [m["text"] for m in tg.sent(NEWCOMER) if "— done" in m.get("text", "")],
            f"an answer; the chat shows {tg.sent(NEWCOMER)}",
            timeout=60,
        )
        answer = done[-1]
        assert "hello from grace" in answer
        shown = httpx.get(f"{host.url}/api/sessions", headers=host.owner_headers()).json()
        assert [s["agent"] for s in shown] == ["fake"]

        # The token was never in an answer, nor in the daemon's log.
        for path in ("channels", "settings", "channels/telegram/asking"):
            got = httpx.get(f"{host.url}/api/{path}", headers=host.owner_headers())
            assert got.status_code == 200 and tg.token not in got.text
        assert tg.token not in host.log()
    finally:
        page.context.close()


def test_a_refused_token_and_a_paired_device_are_refused(host: Daemon, tg: FakeTelegram) -> None:
    owner = host.owner_headers()
    wrong = httpx.post(
        f"{host.url}/api/channels/telegram/check",
        json={"token": "1:WRONG", "api_base": tg.api_base},
        headers=owner,
        timeout=30,
    )
    assert wrong.status_code == 400 and "refused this token" in wrong.json()["error"]["message"]
    assert "1:WRONG" not in wrong.text
    saved = httpx.put(
        f"{host.url}/api/channels/telegram",
        json={"bot_token": "1:WRONG", "api_base": tg.api_base},
        headers=owner,
        timeout=30,
    )
    assert saved.status_code == 400 and not (host.home / "secrets.json").exists()
    assert "telegram" not in json.loads((host.home / "settings.json").read_text()).get(
        "channels", {}
    )

    remote = Remote(host, host.auth()["remote_port"])
    with remote.client() as client:
        key = {"X-Svc-Page-Key": remote.pair(client)["page_key"]}
        assert client.get("/api/channels", headers=key).status_code == 200
        for method, path, body in (
            ("POST", "/api/channels/telegram/check", {"token": tg.token}),
            ("PUT", "/api/channels/telegram", {"bot_token": tg.token}),
            ("POST", "/api/channels/telegram/allow", {"user": "1"}),
            ("GET", "/api/channels/telegram/asking", None),
        ):
            refused = client.request(method, path, json=body, headers=key)
            assert refused.status_code == 403, (path, refused.text)
            assert refused.json()["error"]["code"] == "main_port_only"
    assert not (host.home / "secrets.json").exists()

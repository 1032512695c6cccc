"""What cannot work says why, in the dashboard (issue 43, frictions 2 and 9), in Chromium at
desktop and phone sizes:

- a localtunnel whose server cannot be reached (the npx stand-in in its "offline" mode prints
  localtunnel's real `debug` line, only if svc asks for it) shows "cannot reach localtunnel.me
  (localtunnel's server): name not resolved" on its card in the Remote view, stays `error` while
  it tries again (it flipped to `starting` every 30 s before), and counts down to the next try;
- a Telegram channel whose api_base names a host that does not resolve shows "cannot reach … :
  name not resolved" (it showed `httpx.ConnectError: [Errno -2] …`) with a link to
  docs/channels.md, which opens the doc, served by svc itself (/docs/channels.md);
- /docs/ is the owner's on the main port and a paired device's on the remote one, and serves
  only docs/*.md."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon, migrated_home
from harness.dashboard import show
from tests.e2e.test_remote_tunnel import Remote

STANDINS = Path(__file__).resolve().parents[1] / "fixtures" / "tunnel-standins"
NOWHERE = "svc-words-test.invalid"  # never resolves (RFC 2606)
LOCALTUNNEL_SAYS = "cannot reach localtunnel.me (localtunnel's server): name not resolved"
TELEGRAM_SAYS = (
    f"cannot reach {NOWHERE} (the Telegram Bot API, channels.tg.api_base): name not resolved"
)
SIZES = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-words")
    tools = tmp / "tools"
    tools.mkdir()
    for name in ("npx", "_standin.py"):
        shutil.copy(STANDINS / name, tools / name)
    (tools / "python3").symlink_to(sys.executable)
    settings = {
        "tunnels": {"lt": {"provider": "localtunnel"}},
        "channels": {
            "tg": {"kind": "telegram", "bot_token": "123:svcwords", "api_base": f"http://{NOWHERE}"}
        },
    }
    env = {
        "PATH": os.pathsep.join([str(tools), os.environ["PATH"]]),
        "STANDIN_MODE": "offline",
        "STANDIN_RETRY_S": "0.1",
        "STANDIN_PORT_FILE": str(tmp / "standin.json"),
        "DEBUG": "",  # svc must ask localtunnel for its reason itself
    }
    server = Daemon(migrated_home(tmp / "home", settings), env=env).start()
    yield server
    server.stop()


def owner_page(browser: Browser, daemon: Daemon, size: str) -> Page:
    page = browser.new_context(**SIZES[size]).new_page()  # type: ignore[arg-type]
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
    return page


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_tunnel_that_cannot_reach_its_server_says_so_and_stays_error(
    browser: Browser, daemon: Daemon, size: str
) -> None:
    page = owner_page(browser, daemon, size)
    try:
        show(page, "remote")
        card = page.locator('#tunnels li[data-tunnel="lt"]')
        expect(card.locator(".tunnel-detail")).to_contain_text(LOCALTUNNEL_SAYS, timeout=30000)
        expect(card.locator(".tunnel-error")).to_have_text("error")
        expect(card.locator(".retry-in")).to_contain_text("trying again", timeout=30000)
        card.scroll_into_view_if_needed()
        assert card.is_visible()
        # For a few seconds (tries under way and waits between them), what the card says never
        # flips back to `starting` or loses its reason.
        seen = set()
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            seen.add((card.locator("[class^=tunnel-]").first.text_content(), LOCALTUNNEL_SAYS in (
                card.locator(".tunnel-detail").text_content() or "")))  # fmt: skip
            page.wait_for_timeout(100)
        assert seen == {("error", True)}, seen
        rows = httpx.get(f"{daemon.url}/api/tunnels", headers=daemon.owner_headers()).json()
        assert rows[0]["status"] == "error" and rows[0]["retry_in_s"] is not None, rows
    finally:
        page.context.close()


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_channel_that_cannot_reach_its_platform_says_so_with_a_link_to_the_docs(
    browser: Browser, daemon: Daemon, size: str
) -> None:
    page = owner_page(browser, daemon, size)
    try:
        show(page, "channels")
        card = page.locator('#channels li[data-channel="tg"]')
        detail = card.locator(".channel-detail")
        expect(detail).to_contain_text(TELEGRAM_SAYS, timeout=30000)
        assert "ConnectError" not in (detail.text_content() or "")
        assert "Errno" not in (detail.text_content() or "")
        expect(card.locator(".channel-status")).to_have_text("error")
        link = detail.get_by_role("link", name="docs/channels.md")
        expect(link).to_have_attribute("href", "/docs/channels.md#the-service")
        view = page.locator("#views > [data-view='channels']")
        expect(view.locator("a[href='/docs/channels.md']")).to_have_text("docs/channels.md")
        with page.context.expect_page() as opened:
            link.click()
        doc = opened.value
        expect(doc.locator("h2#the-service")).to_have_text("The service")
        expect(doc).to_have_title("svc: docs/channels.md")
        # The links between the docs are relative, and work from there.
        doc.goto(doc.url.split("/docs/")[0] + "/docs/runtime.md")
        doc.locator("a[href^='contract.md#']").first.click()
        expect(doc).to_have_title("svc: docs/contract.md")
    finally:
        page.context.close()


def test_docs_are_the_owners_and_a_paired_devices_and_only_docs(daemon: Daemon) -> None:
    owner = daemon.owner_headers()
    served = httpx.get(f"{daemon.url}/docs/channels.md", headers=owner)
    assert served.status_code == 200 and "<h1" in served.text
    assert "script-src 'nonce-" in served.headers["content-security-policy"]
    anonymous = httpx.get(f"{daemon.url}/docs/channels.md")
    assert anonymous.status_code == 401 and "The service" not in anonymous.text
    for outside in (
        "/docs/..%2FREADME.md",
        "/docs/%2E%2E%2Fmanage.py",
        "/docs/../README.md",
        "/docs/screenshots",
        "/docs/no-such-doc.md",
        "/docs/CHANNELS.md",
        "/docs/channels.md.bak",
    ):
        refused = httpx.get(f"{daemon.url}{outside}", headers=owner)
        assert refused.status_code == 404, (outside, refused.status_code)
    assert httpx.post(f"{daemon.url}/docs/channels.md", headers=owner).status_code in (403, 405)

    remote = Remote(daemon, daemon.auth()["remote_port"])
    with remote.client() as stranger:
        refused = stranger.get("/docs/channels.md")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "not_paired"
    with remote.client() as phone:
        remote.pair(phone)
        assert "The service" in phone.get("/docs/channels.md").text

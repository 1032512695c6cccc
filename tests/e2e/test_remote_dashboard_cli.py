"""Remote access from the owner's side (contract §13, §10): `manage.py tunnels` and `manage.py
pair` against a live daemon, and the dashboard's Remote section in Chromium — a tunnel that
cannot start shows its error, a pairing request appears live, its code is approved there, the
device is listed and revoked."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon, migrated_home
from harness.dashboard import show

SETTINGS = {
    "tunnels": {
        "t1": {
            "provider": "command",
            "command": ["no-such-tunnel-cmd", "{port}"],
            "url_pattern": "https://\\S+",
        }
    }
}
PHONE = "Mozilla/5.0 (Linux; Android 14; Pixel 8) Mobile Safari/537.36"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for the module: each test leaves no device or request behind."""
    home = migrated_home(tmp_path_factory.mktemp("svc-remote-ui") / "home", settings=SETTINGS)
    daemon = Daemon(home).start()
    yield daemon
    daemon.stop()


def remote(server: Daemon) -> str:
    return f"http://127.0.0.1:{server.auth()['remote_port']}"


def pair_start(server: Daemon) -> dict:
    """What the pairing page of a phone that came through a tunnel does first."""
    response = httpx.post(f"{remote(server)}/pair/start", headers={"User-Agent": PHONE})
    assert response.status_code == 200, response.text
    return response.json()


def pair_status(server: Daemon, pair_id: str) -> str:
    """The pairing page's poll: the first one that sees the approval makes the device."""
    response = httpx.get(f"{remote(server)}/pair/status", params={"pair_id": pair_id})
    assert response.status_code == 200, response.text
    return response.json()["status"]


def api(server: Daemon, path: str) -> list[dict]:
    response = httpx.get(f"{server.url}/api/{path}", headers=server.owner_headers())
    assert response.status_code == 200, response.text
    return response.json()


def tunnel(server: Daemon, name: str = "t1") -> dict:
    return next(row for row in api(server, "tunnels") if row["name"] == name)


def test_tunnels_cli_lists_stops_and_starts(server: Daemon) -> None:
    deadline = time.monotonic() + 15
    while tunnel(server)["status"] != "error":  # its command is missing: it fails at once
        assert time.monotonic() < deadline, tunnel(server)
        time.sleep(0.2)
    rows = json.loads(server.manage("tunnels", "--json").stdout)
    assert [(r["name"], r["provider"], r["public_url"]) for r in rows] == [("t1", "command", None)]
    assert rows[0]["status"] in ("starting", "error") and rows[0]["detail"], rows

    stopped = server.manage("tunnels", "stop", "t1")
    assert stopped.stdout.splitlines()[0].split()[:3] == ["name", "provider", "status"]
    assert stopped.stdout.splitlines()[1].split()[:3] == ["t1", "command", "stopped"]
    assert tunnel(server)["status"] == "stopped"
    started = server.manage("tunnels", "start", "t1", "--json")
    assert json.loads(started.stdout)["status"] in ("starting", "error")

    missing = server.manage("tunnels", "stop", "nope", check=False)
    assert missing.returncode != 0 and "no tunnel 'nope'" in missing.stderr


def test_pair_cli_approves_lists_and_revokes(server: Daemon) -> None:
    started = pair_start(server)
    wrong = "000000" if started["code"] != "000000" else "111111"
    refused = server.manage("pair", wrong, check=False)
    assert refused.returncode != 0
    assert "403" in refused.stderr and "no pairing request shows that code" in refused.stderr

    assert [r["device"] for r in api(server, "pairings/pending")] == [PHONE]

    approved = server.manage("pair", started["code"])
    assert approved.stdout.startswith(f"Paired: {PHONE}"), approved.stdout
    assert pair_status(server, started["pair_id"]) == "approved"

    devices = json.loads(server.manage("pair", "--list", "--json").stdout)
    assert [d["device"] for d in devices] == [PHONE]

    revoked = server.manage("pair", "--revoke", devices[0]["id"])
    assert revoked.stdout.strip() == f"Revoked: {devices[0]['id']}"
    assert api(server, "pairings") == []


@pytest.fixture
def page(browser: Browser, server: Daemon) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{server.url}/login?token={server.owner_token}")  # hands over to the dashboard
    show(page, "remote")
    expect(page.locator("#remote-box h2")).to_have_text("Remote access")
    yield page
    context.close()


def test_dashboard_remote_section_pairs_and_revokes(page: Page, server: Daemon) -> None:
    tunnel = page.locator('#tunnels li[data-tunnel="t1"]')
    expect(tunnel).to_contain_text("command")
    expect(tunnel.locator(".tunnel-error")).to_have_text("error")
    expect(tunnel.locator(".hint")).not_to_be_empty()
    expect(tunnel.get_by_role("button", name="Stop")).to_be_visible()
    expect(page.locator("#settings-box #tunnels")).to_have_count(0)

    started = pair_start(server)  # after the page loaded: the request arrives over /ws/pairings
    waiting = page.locator("#pairings li[data-request]")
    expect(waiting).to_contain_text(f"waiting: {PHONE} since")
    expect(waiting.get_by_role("button", name="Deny")).to_be_visible()

    form = page.locator("#pair-approve")
    form.locator('input[name="code"]').fill(started["code"])
    form.get_by_role("button", name="Approve").click()
    expect(page.locator("#pair-approve-status")).to_contain_text("Approved")
    expect(waiting).to_have_count(0)
    expect(page.locator("#banner")).to_be_hidden()

    assert pair_status(server, started["pair_id"]) == "approved"  # the phone picks it up
    revoke = page.locator("#pairings button[data-revoke]")
    expect(revoke).to_have_count(1)
    # Named from its User-Agent (issue 43), the whole string on hover.
    device = page.locator("#pairings li[data-device]")
    expect(device.locator(".device-name")).to_have_text("Android browser on Android 14, Pixel 8")
    expect(device.locator(".hint")).to_have_attribute("title", PHONE)
    revoke.click()
    expect(revoke).to_have_count(0)
    assert api(server, "pairings") == []


def test_dashboard_shows_a_wrong_code_and_denies_a_request(page: Page, server: Daemon) -> None:
    started = pair_start(server)
    wrong = "000000" if started["code"] != "000000" else "111111"
    page.fill('#pair-approve input[name="code"]', wrong)
    page.click("#pair-approve button[type=submit]")
    expect(page.locator("#pair-approve-status")).to_have_text(
        "no pairing request shows that code (wrong, used or expired)"
    )
    expect(page.locator("#banner")).to_be_hidden()  # a wrong code is not "logged out"

    waiting = page.locator("#pairings li[data-request]")
    waiting.get_by_role("button", name="Deny").click()
    expect(waiting).to_have_count(0)
    assert pair_status(server, started["pair_id"]) == "denied"


def test_remote_dashboard_lists_devices_but_cannot_approve(
    browser: Browser, server: Daemon
) -> None:
    """A phone that paired through the remote listener sees the Remote section without the
    approve form (approving is for svc's own machine) and its own device with Revoke."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone = context.new_page()
    try:
        phone.goto(f"{remote(server)}/")
        phone.click("#start")
        expect(phone.locator("#code")).to_have_text(re.compile(r"^\d{6}$"))
        server.manage("pair", phone.locator("#code").inner_text())
        expect(phone.locator("#sidebar h1")).to_have_text("svc")  # it reloaded
        show(phone, "remote")
        expect(phone.locator("#remote-box h2")).to_have_text("Remote access")
        expect(phone.locator("#pair-approve")).to_be_hidden()
        expect(phone.locator("#pairings button[data-revoke]")).to_have_count(1)
        expect(phone.locator('#tunnels li[data-tunnel="t1"]')).to_be_visible()
    finally:
        context.close()
    for device in api(server, "pairings"):
        httpx.delete(f"{server.url}/api/pairings/{device['id']}", headers=server.owner_headers())

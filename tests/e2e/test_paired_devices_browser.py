"""Paired devices as the owner and the phones see them (issue 43, friction 8: "Paired devices are
named by their raw User-Agent: two phones look the same. A paired phone sees settings forms it
may not save (refused with a good message — but the forms look editable)"). In Chromium against a
live daemon, phones pairing through its remote listener on loopback (the socket makes a request
remote; a tunnel only carries bytes to it): two phones with different User-Agents read as two
different readable names; a rename on the machine shows live on the phone and the phone's own
rename on the machine; a phone renames no other device; its Settings show what it may not change
disabled, with a note, and a write from it is still refused."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from harness.daemon import Daemon
from harness.dashboard import show
from harness.termclient import start_hosting_daemon
from tests.e2e.test_remote_tunnel import Remote

PHONE = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 2,
}
PIXEL = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Mobile Safari/537.36"
)
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)
PIXEL_NAME = "Chrome Mobile 126 on Android 14, Pixel 7"
IPHONE_NAME = "Mobile Safari 17 on iOS 17.5, iPhone"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    daemon = start_hosting_daemon(tmp_path_factory.mktemp("svc-paired-devices"))
    yield daemon
    daemon.stop()


@pytest.fixture(autouse=True)
def no_devices_left(server: Daemon) -> Iterator[None]:
    yield
    for device in owner(server, "GET", "pairings").json():
        owner(server, "DELETE", f"pairings/{device['id']}")


def owner(server: Daemon, method: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.request(
        method, f"{server.url}/api/{path}", headers=server.owner_headers(), **kwargs
    )  # type: ignore[arg-type]


def remote_url(server: Daemon) -> str:
    return f"http://127.0.0.1:{server.auth()['remote_port']}"


def paired_phone(browser: Browser, server: Daemon, user_agent: str) -> Page:
    """A phone's browser through the remote listener: the pairing page, its code approved on
    the machine, then the dashboard it reloads into."""
    phone = browser.new_context(**PHONE, user_agent=user_agent).new_page()  # type: ignore[arg-type]
    phone.goto(f"{remote_url(server)}/")
    phone.click("#start")
    expect(phone.locator("#code")).to_have_text(re.compile(r"^\d{6}$"))
    approved = owner(server, "POST", "pairings/approve", json={"code": phone.inner_text("#code")})
    assert approved.status_code == 200, approved.text
    expect(phone.locator("#sidebar h1")).to_have_text("svc")
    return phone


def desk(browser: Browser, server: Daemon) -> Page:
    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.goto(f"{server.url}/login?token={server.owner_token}")
    expect(page.locator("#sidebar h1")).to_have_text("svc")
    return page


def card(page: Page, name: str) -> Locator:
    return page.locator(
        "#pairings li[data-device]", has=page.locator(".device-name", has_text=name)
    )


def rename(page: Page, name: str, to: str) -> None:
    found = card(page, name)
    found.get_by_role("button", name=f"Rename {name}").click()
    field = found.get_by_role("textbox", name="Name")
    expect(field).to_be_focused()
    field.fill(to)
    found.get_by_role("button", name="Save name").click()


def test_two_paired_phones_read_as_two_names_and_a_rename_shows_live(
    browser: Browser, server: Daemon
) -> None:
    machine = desk(browser, server)
    pixel = paired_phone(browser, server, PIXEL)
    iphone = paired_phone(browser, server, IPHONE)
    try:
        show(machine, "remote")
        names = machine.locator("#pairings li[data-device] .device-name")
        expect(names).to_have_text([PIXEL_NAME, IPHONE_NAME])
        expect(machine.locator("#pairings")).not_to_contain_text("Mozilla")
        # Renamed on the machine: the phone's open Remote view follows, no reload.
        show(pixel, "remote")
        expect(card(pixel, PIXEL_NAME).locator(".device-self")).to_have_text("(this device)")
        rename(machine, PIXEL_NAME, "Anna's Pixel")
        expect(pixel.locator("#pairings li[data-device] .device-name")).to_have_text(
            ["Anna's Pixel", IPHONE_NAME]
        )
        # What its User-Agent says stays beside any name.
        expect(card(pixel, "Anna's Pixel").locator(".hint")).to_contain_text(PIXEL_NAME)

        # A phone renames itself, and no other device.
        show(iphone, "remote")
        expect(
            card(iphone, "Anna's Pixel").get_by_role("button", name=re.compile("^Rename"))
        ).to_have_count(0)
        rename(iphone, IPHONE_NAME, "Work iPhone")
        expect(names).to_have_text(["Anna's Pixel", "Work iPhone"])
        other = owner(server, "GET", "pairings").json()[0]["id"]
        refused = iphone.evaluate(
            """async (id) => {
                const key = document.querySelector('meta[name="svc-page-key"]').content;
                const answer = await fetch(`/api/pairings/${id}`, {
                  method: "PATCH", body: JSON.stringify({ name: "Lost phone" }),
                  headers: { "Content-Type": "application/json", "X-Svc-Page-Key": key } });
                return [answer.status, (await answer.json()).error.code];
            }""",
            other,
        )
        assert refused == [403, "main_port_only"]
        expect(names.first).to_have_text("Anna's Pixel")
    finally:
        for page in (machine, pixel, iphone):
            page.context.close()


def test_a_paired_phone_sees_settings_it_may_not_change_as_read_only(
    browser: Browser, server: Daemon
) -> None:
    phone = paired_phone(browser, server, PIXEL)
    machine = desk(browser, server)
    try:
        show(phone, "settings")
        for part, controls in {
            "profiles": [
                "#profile-form input[name=profile_id]",
                "#profile-form button[type=submit]",
            ],
            "agents": [
                "#agent-form input[name=agent_name]",
                "#agent-form textarea[name=env]",
                "#agent-form button[type=submit]",
                "#agents button",
            ],
            "agent integrations": ["#integrations-sync"],
        }.items():
            box = phone.locator(f"fieldset[data-machine-only='{part}']")
            expect(box.locator("legend")).to_contain_text(
                f"{part} are changed on svc's own machine"
            )
            for control in controls:
                expect(phone.locator(control).first).to_be_disabled()
        # What a paired device may change stays editable: folders, its own notifications.
        expect(phone.locator("#register-workspace input[name=path]")).to_be_enabled()
        # On the machine nothing is read-only.
        show(machine, "settings")
        expect(machine.locator("fieldset[data-machine-only]")).to_have_count(0)
        expect(machine.locator("#profile-form input[name=profile_id]")).to_be_enabled()

        # The write is still refused, with its message, when the form is forced open.
        phone.evaluate(
            "document.querySelector(\"fieldset[data-machine-only='profiles']\").disabled = false"
        )
        form = phone.locator("#profile-form")
        form.locator("input[name=profile_id]").fill("evil")
        form.locator("input[name=base_url]").fill("https://attacker.example/v1")
        form.locator("button[type=submit]").click()
        expect(phone.locator("#profile-status")).to_contain_text(
            "cannot change what svc runs or who may reach it"
        )
        assert "evil" not in owner(server, "GET", "settings").json().get("profiles", {})
    finally:
        phone.context.close()
        machine.context.close()


def test_who_may_rename_a_paired_device_over_http(server: Daemon) -> None:
    """The PATCH's answers on both listeners: the owner renames any device (a blank name gives
    its readable name back), a device itself, a stranger nothing."""
    remote = Remote(server, server.auth()["remote_port"])
    with (
        remote.client(headers={"User-Agent": PIXEL}) as pixel,
        remote.client(headers={"User-Agent": IPHONE}) as iphone,
    ):
        mine = remote.pair(pixel)
        theirs = remote.pair(iphone)["device"]
        key = {"X-Svc-Page-Key": mine["page_key"]}
        ok = pixel.patch(
            f"/api/pairings/{mine['device']['id']}", json={"name": "mine"}, headers=key
        )
        assert ok.status_code == 200 and ok.json()["name"] == "mine", ok.text
        refused = pixel.patch(f"/api/pairings/{theirs['id']}", json={"name": "x"}, headers=key)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "main_port_only"
        with remote.client() as stranger:
            nobody = stranger.patch(f"/api/pairings/{theirs['id']}", json={"name": "x"})
            assert nobody.status_code == 401
        by_owner = owner(server, "PATCH", f"pairings/{theirs['id']}", json={"name": ""})
        assert by_owner.status_code == 200 and by_owner.json()["name"] == IPHONE_NAME
        too_long = owner(server, "PATCH", f"pairings/{theirs['id']}", json={"name": "x" * 61})
        assert too_long.status_code == 400
        missing = owner(server, "PATCH", "pairings/nope", json={"name": "x"})
        assert missing.status_code == 404

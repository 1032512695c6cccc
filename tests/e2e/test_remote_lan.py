"""A phone with nothing but this machine (issue 43, item 1; docs/remote.md "A phone on the same
network"): the owner turns the LAN listener on in the Remote view, a phone-sized Chromium opens
its URL from the QR code — this machine's own network address, https with a certificate made
here — pairs (approved beside the QR), chats with the scripted agent and types into a terminal.
The Remote view shows the remote listener's address and port and an SSH command, which is run
here with the real `ssh` against the test SSH server and reaches the pairing page.

The LAN address is this machine's, found here from the default route's interface (`ip`), never
written into the test."""

from __future__ import annotations

import getpass
import hashlib
import json
import shlex
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon, free_port, migrated_home
from harness.dashboard import show
from harness.ssh import SSHServer
from harness.termclient import hosting_settings, shell_env
from tests.e2e.test_approvals_browser import serious_violations

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESK = {"viewport": {"width": 1280, "height": 900}}
ACTIVE = "#session-views > :not([hidden])"


def default_route_address() -> str:
    """The IPv4 address of the interface the default route leaves by, as `ip` reports it."""
    route = json.loads(subprocess.check_output(["ip", "-j", "-4", "route", "show", "default"]))
    device = route[0]["dev"]
    links = json.loads(subprocess.check_output(["ip", "-j", "-4", "addr", "show", "dev", device]))
    return next(a["local"] for link in links for a in link["addr_info"] if a["family"] == "inet")


@pytest.fixture(scope="module")
def lan_ip() -> str:
    return default_route_address()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lan-ws")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, workspace: Path) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-lan")
    settings = {**hosting_settings(), "workspaces": [str(workspace)]}
    server = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    yield server
    server.stop()


def owner_page(browser: Browser, daemon: Daemon, **context: object) -> Page:
    page = browser.new_context(**context).new_page()  # type: ignore[arg-type]
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
    show(page, "remote")
    return page


def lan_state(daemon: Daemon) -> dict:
    return httpx.get(f"{daemon.url}/api/remote", headers=daemon.owner_headers()).json()["lan"]


def served_fingerprint(address: str, port: int) -> str:
    der = ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate((address, port)))
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


def test_a_phone_on_the_same_network_pairs_and_chats(
    browser: Browser, daemon: Daemon, workspace: Path, lan_ip: str
) -> None:
    desk = owner_page(browser, daemon, **DESK)
    # The certificate is made on svc's machine, so no browser knows it: a person compares its
    # fingerprint (below, and on the pairing page) and accepts it; here the context ignores the
    # certificate error instead, as Playwright lets a test do.
    phone = browser.new_context(ignore_https_errors=True, **PHONE)  # type: ignore[arg-type]
    try:
        card = desk.locator("#lan-listener")
        expect(card).to_have_attribute("data-status", "off")  # secure by default
        card.get_by_role("button", name="Turn on").click()
        expect(card).to_have_attribute("data-status", "on", timeout=15000)
        lan = lan_state(daemon)
        assert lan["address"] == lan_ip, lan
        assert lan["port"] == daemon.auth()["remote_port"], lan  # one number for both sockets
        expect(desk.locator("#lan-address")).to_have_text(f"{lan_ip}:{lan['port']}")
        fingerprint = served_fingerprint(lan_ip, lan["port"])
        expect(desk.locator("#lan-fingerprint")).to_have_text(fingerprint)
        link = f"https://{lan_ip}:{lan['port']}/#cert={fingerprint}"
        expect(card.locator("svg.qr")).to_have_attribute("aria-label", f"QR code of {link}")
        written = json.loads((daemon.home / "settings.json").read_text())
        assert written["remote"]["lan"] == {"enabled": True}
        assert serious_violations(desk) == []

        page = phone.new_page()
        page.goto(link)  # what scanning the QR code opens
        expect(page.locator("h1")).to_have_text("Pair this browser with svc")
        expect(page.locator("#cert-fingerprint")).to_have_text(fingerprint)
        page.click("#start")
        page.wait_for_function("/^\\d{6}$/.test(document.getElementById('code').textContent)")
        code = page.locator("#code").text_content() or ""
        waiting = desk.locator("#pairings li[data-request]")
        expect(waiting.locator(".pair-code")).to_have_text(code)
        waiting.get_by_role("button", name=f"Approve {code}").click()

        expect(page.locator("#sidebar h1")).to_have_text("svc", timeout=15000)  # the dashboard
        assert page.url.startswith(f"https://{lan_ip}:{lan['port']}/"), page.url
        cookie = next(c for c in phone.cookies() if c["name"] == "svc_remote")
        assert cookie["secure"] and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        show(page, "sessions")
        page.select_option("#new-agent", "fake")
        page.select_option("#new-workspace", str(workspace))
        page.select_option("#new-kind", "chat")
        page.click("#new-session button[type=submit]")
        box = page.locator(f"{ACTIVE} .chat-input textarea")
        expect(box).to_be_visible(timeout=15000)
        box.fill("echo hello from the phone")
        page.locator(f"{ACTIVE} .chat-send").click()
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text(
            "hello from the phone", timeout=15000
        )
        expect(desk.locator("#pairings [data-revoke]")).to_have_count(1)

        # A terminal too: its output's backpressure hook sits under the TLS layer here.
        show(page, "sessions")
        page.select_option("#new-agent", "shell")
        page.select_option("#new-workspace", str(workspace))
        page.select_option("#new-kind", "terminal")
        page.click("#new-session button[type=submit]")
        expect(page.locator(f"{ACTIVE} .xterm-rows")).to_be_visible(timeout=15000)
        page.locator(f"{ACTIVE} .xterm-helper-textarea").focus()
        page.keyboard.type("echo lan-$((6*7))")
        page.keyboard.press("Enter")
        expect(page.locator(f"{ACTIVE} .xterm-rows")).to_contain_text("lan-42", timeout=15000)

        # The paired phone sees where svc listens, without the switch.
        show(page, "remote")
        expect(page.locator("#lan-listener")).to_have_attribute("data-status", "on")
        expect(page.locator("#lan-toggle")).to_have_count(0)
    finally:
        phone.close()
        desk.context.close()


def test_the_remote_view_shows_the_listener_and_an_ssh_command_that_reaches_it(
    browser: Browser, daemon: Daemon, lan_ip: str, tmp_path: Path
) -> None:
    remote_port = daemon.auth()["remote_port"]
    desk = owner_page(browser, daemon, **DESK)
    sshd = SSHServer(tmp_path / "sshd").start()
    forward: subprocess.Popen | None = None
    try:
        expect(desk.locator("#remote-listener-address")).to_have_text(f"127.0.0.1:{remote_port}")
        shown = desk.locator("#ssh-command").text_content() or ""
        user = getpass.getuser()
        assert shown == f"ssh -N -L {remote_port}:127.0.0.1:{remote_port} {user}@{lan_ip}", shown

        # Run on "another computer": here, so its local port is another free one, and the
        # server is the test's SSH server (its port, key and host key added).
        argv = shlex.split(shown)
        local = free_port()
        argv[argv.index("-L") + 1] = f"{local}:127.0.0.1:{remote_port}"
        argv[-1:] = [
            *("-p", str(sshd.port), "-i", str(sshd.user_key_path)),
            *("-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "ExitOnForwardFailure=yes"),
            *("-o", f"UserKnownHostsFile={sshd.known_hosts()}", "-o", "StrictHostKeyChecking=yes"),
            f"{user}@127.0.0.1",
        ]
        forward = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{local}/"
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                assert forward.poll() is None, forward.stderr.read() if forward.stderr else ""
                assert time.monotonic() < deadline, "the SSH forward never answered"
                time.sleep(0.2)
        laptop = browser.new_context(**DESK).new_page()
        try:
            laptop.goto(url)
            expect(laptop.locator("h1")).to_have_text("Pair this browser with svc")
            assert httpx.get(f"{url}login").status_code == 404  # the remote listener's rules
        finally:
            laptop.context.close()
    finally:
        if forward is not None:
            forward.terminate()
            forward.wait(10)
        sshd.stop()
        desk.context.close()


def test_the_remote_view_with_the_lan_listener_fits_a_phone(
    browser: Browser, daemon: Daemon
) -> None:
    httpx.put(
        f"{daemon.url}/api/remote/lan", json={"enabled": True}, headers=daemon.owner_headers()
    ).raise_for_status()
    page = owner_page(browser, daemon, **PHONE)
    try:
        expect(page.locator("#lan-listener svg.qr")).to_be_visible()
        expect(page.locator("#ssh-command")).to_be_visible()
        assert serious_violations(page) == []
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
    finally:
        page.context.close()

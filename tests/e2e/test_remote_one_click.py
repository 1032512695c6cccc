"""One-click phone access (issue 34, acceptance 2; docs/remote.md "One click"): the Remote view
offers what works on this machine, one click on the Cloudflare quick tunnel (the stand-in from
tests/fixtures/tunnel-standins) writes it into settings.json (unknown keys kept) and starts it,
its public URL shows as a QR code, a phone-sized Chromium opens that URL, its pairing request
appears beside the QR with the same code and an Approve button, one click, and the phone types
into a terminal. localtunnel (the npx stand-in) is offered and started the same way, and removed.

The stand-in's public host is made up: Chromium maps it to a TLS front run here (a test CA's
certificate, errors ignored in the phone's context), which forwards to the stand-in's relay —
the phone's every request goes through the tunnel process svc started."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon, free_port, migrated_home
from harness.dashboard import show
from harness.termclient import hosting_settings, shell_env
from tests.e2e.test_approvals_browser import serious_violations
from tests.e2e.test_remote_tunnel import Remote

STANDINS = Path(__file__).resolve().parents[1] / "fixtures" / "tunnel-standins"
CLOUDFLARED_HOST = "svc-standin-quick-tunnel.trycloudflare.com"
CLOUDFLARED_URL = f"https://{CLOUDFLARED_HOST}"
LOCALTUNNEL_URL = "https://svc-standin.loca.lt"
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
ACTIVE = "#session-views > :not([hidden])"


class TLSFront:
    """The tunnel service's edge: TLS for the public host, then bytes to the stand-in's relay
    (its port read from STANDIN_PORT_FILE when a connection comes)."""

    def __init__(self, facts: Path) -> None:
        self.facts, self.port = facts, free_port()
        ca = trustme.CA()
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(CLOUDFLARED_HOST).configure_cert(self.context)
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        threading.Thread(target=self._run, args=(started,), daemon=True).start()
        started.wait(10)

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = asyncio.start_server(self._client, "127.0.0.1", self.port, ssl=self.context)
        self.loop.run_until_complete(server)
        started.set()
        self.loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        relay = json.loads(self.facts.read_text())["port"]
        up_r, up_w = await asyncio.open_connection("127.0.0.1", relay)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, ssl.SSLError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cloudflared and npx (the stand-ins) and python3 on PATH, and nothing else of theirs:
    no tailscale, whatever this machine has."""
    folder = tmp_path_factory.mktemp("tools")
    for name in ("cloudflared", "npx", "_standin.py"):
        shutil.copy(STANDINS / name, folder / name)
    (folder / "python3").symlink_to(sys.executable)
    return folder


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("standin") / "relay.json"


@pytest.fixture(scope="module")
def front(facts: Path) -> Iterator[TLSFront]:
    edge = TLSFront(facts)
    yield edge
    edge.stop()


@pytest.fixture(scope="module")
def browser(front: TLSFront) -> Iterator[Browser]:
    from harness.browser import chromium

    with chromium(f"--host-resolver-rules=MAP {CLOUDFLARED_HOST} 127.0.0.1:{front.port}") as b:
        yield b


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("one-click-ws")


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory, tools: Path, facts: Path, workspace: Path
) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-one-click")
    # A key svc does not know, hand-written: it must survive the dashboard's tunnel writes.
    settings = {**hosting_settings(), "workspaces": [str(workspace)], "x-mine": {"keep": [1, 2]}}
    env = {
        **shell_env(tmp),
        "PATH": os.pathsep.join([str(tools), os.environ["PATH"]]),
        "STANDIN_PORT_FILE": str(facts),
        "NGROK_AUTHTOKEN": "",
    }
    server = Daemon(migrated_home(tmp / "home", settings), env=env).start()
    yield server
    server.stop()


def owner_page(browser: Browser, daemon: Daemon, **context: object) -> Page:
    page = browser.new_context(**context).new_page()  # type: ignore[arg-type]
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
    show(page, "remote")
    return page


def settings_on_disk(daemon: Daemon) -> dict:
    return json.loads((daemon.home / "settings.json").read_text())


def test_the_remote_view_offers_what_works_here(daemon: Daemon) -> None:
    offers = httpx.get(f"{daemon.url}/api/tunnels/offers", headers=daemon.owner_headers()).json()
    by = {o["provider"]: o for o in offers}
    assert by["cloudflared"]["available"] and by["localtunnel"]["available"], offers
    assert not by["tailscale"]["available"] and "not installed" in by["tailscale"]["reason"]
    assert by["ngrok"]["needs"] == ["token"] and by["ssh"]["needs"] == ["host"]


def test_one_click_then_the_phone_pairs_and_types_into_a_terminal(
    browser: Browser, daemon: Daemon, workspace: Path
) -> None:
    desk = owner_page(browser, daemon, viewport={"width": 1280, "height": 900})
    phone = browser.new_context(ignore_https_errors=True, **PHONE)  # type: ignore[arg-type]
    try:
        assert serious_violations(desk) == []
        desk.locator("#offer-cloudflared").click()
        card = desk.locator('#tunnels li[data-tunnel="cloudflared"]')
        qr = card.locator("svg.qr")
        expect(qr).to_have_attribute("aria-label", f"QR code of {CLOUDFLARED_URL}", timeout=30000)
        expect(card.get_by_role("link")).to_have_text(CLOUDFLARED_URL)
        # The QR's modules are the URL's own (drawn again here from the same text).
        drawn = desk.evaluate(
            """async (text) => {
                const qrcode = (await import("qrcode-generator")).default;
                const qr = qrcode(0, "M"); qr.addData(text); qr.make();
                let path = ""; const n = qr.getModuleCount();
                for (let r = 0; r < n; r++) for (let c = 0; c < n; c++)
                    if (qr.isDark(r, c)) path += `M${c + 4} ${r + 4}h1v1h-1z`;
                return path;
            }""",
            CLOUDFLARED_URL,
        )
        assert qr.locator("path").get_attribute("d") == drawn
        written = settings_on_disk(daemon)
        assert written["tunnels"]["cloudflared"] == {"provider": "cloudflared", "enabled": True}
        assert written["x-mine"] == {"keep": [1, 2]}

        page = phone.new_page()
        page.goto(qr.get_attribute("aria-label").removeprefix("QR code of ") + "/")
        expect(page.locator("h1")).to_have_text("Pair this browser with svc")
        page.click("#start")
        page.wait_for_function("/^\\d{6}$/.test(document.getElementById('code').textContent)")
        code = page.locator("#code").text_content() or ""

        waiting = desk.locator("#pairings li[data-request]")
        expect(waiting.locator(".pair-code")).to_have_text(code)  # the same code on both sides
        waiting.get_by_role("button", name=f"Approve {code}").click()

        expect(page.locator("#sidebar h1")).to_have_text("svc", timeout=15000)
        assert page.url == CLOUDFLARED_URL + "/"
        page.select_option("#new-agent", "shell")
        page.select_option("#new-workspace", str(workspace))
        page.select_option("#new-kind", "terminal")
        page.click("#new-session button[type=submit]")
        expect(page.locator(f"{ACTIVE} .xterm-rows")).to_be_visible(timeout=15000)
        page.locator(f"{ACTIVE} .xterm-helper-textarea").focus()
        page.keyboard.type("echo phone-$((6*7))")
        page.keyboard.press("Enter")
        expect(page.locator(f"{ACTIVE} .xterm-rows")).to_contain_text("phone-42", timeout=15000)
        expect(desk.locator("#pairings [data-revoke]")).to_have_count(1)

        # The paired phone may use sessions, never make or remove tunnels or see the offers.
        for method, path in (("POST", "tunnels"), ("GET", "tunnels/offers")):
            said = page.evaluate(
                """async ([method, path]) => {
                    const key = document.querySelector('meta[name=svc-page-key]').content;
                    const r = await fetch('/api/' + path, {method, headers: {'X-Svc-Page-Key': key,
                        'Content-Type': 'application/json'}, body: method === 'GET' ? undefined
                        : JSON.stringify({provider: 'localtunnel'})});
                    return [r.status, (await r.json()).error.code];
                }""",
                [method, path],
            )
            assert said == [403, "main_port_only"], (method, path, said)
        show(page, "remote")
        expect(page.locator("#tunnel-offers")).to_have_count(0)
    finally:
        phone.close()
        desk.context.close()


def test_localtunnel_in_one_click_and_removed(browser: Browser, daemon: Daemon) -> None:
    desk = owner_page(browser, daemon, viewport={"width": 1280, "height": 900})
    try:
        desk.locator("#offer-localtunnel").click()
        card = desk.locator('#tunnels li[data-tunnel="localtunnel"]')
        expect(card.locator("svg.qr")).to_have_attribute(
            "aria-label", f"QR code of {LOCALTUNNEL_URL}", timeout=30000
        )
        desk.once("dialog", lambda dialog: dialog.accept())
        card.get_by_role("button", name="Remove").click()
        expect(card).to_have_count(0)
        written = settings_on_disk(daemon)
        assert "localtunnel" not in written["tunnels"] and written["x-mine"] == {"keep": [1, 2]}
    finally:
        desk.context.close()


def test_the_remote_listener_refuses_tunnel_writes(daemon: Daemon) -> None:
    remote = Remote(daemon, daemon.auth()["remote_port"])
    with remote.client() as client:
        key = {"X-Svc-Page-Key": remote.pair(client)["page_key"]}
        for method, path in (("POST", "/api/tunnels"), ("DELETE", "/api/tunnels/cloudflared")):
            said = client.request(method, path, json={"provider": "ssh"}, headers=key)
            assert said.status_code == 403, said.text
            assert said.json()["error"]["code"] == "main_port_only"
        pending = client.get("/api/pairings/pending", headers=key).json()
        assert all("code" not in row for row in pending)


def test_a_broken_settings_file_refuses_the_click(daemon: Daemon) -> None:
    path = daemon.home / "settings.json"
    good = path.read_text()
    path.write_text(good.rstrip().rstrip("}") + ',"tunnels": {},}')  # a trailing comma
    try:
        deadline = time.monotonic() + 15
        while True:  # svc notices the file by its mtime
            said = httpx.post(
                f"{daemon.url}/api/tunnels",
                json={"provider": "ssh", "host": "example.com"},
                headers=daemon.owner_headers(),
            )
            if said.status_code == 409 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert said.status_code == 409 and said.json()["error"]["code"] == "settings_invalid"
    finally:
        path.write_text(good)


def test_the_remote_view_is_axe_clean_on_a_phone(browser: Browser, daemon: Daemon) -> None:
    page = owner_page(browser, daemon, **PHONE)
    try:
        expect(page.locator("#tunnel-offers li")).to_have_count(5)
        assert serious_violations(page) == []
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
    finally:
        page.context.close()


def test_the_same_from_bin_svc_remote(daemon: Daemon) -> None:
    offers = daemon.manage("remote", "offers").stdout.splitlines()
    assert offers[0].split()[:2] == ["cloudflared", "ready"], offers
    assert any(line.startswith("ssh") and "needs --host" in line for line in offers), offers
    started = daemon.manage("remote", "start", "localtunnel", "--name", "lt")
    assert started.stdout.splitlines()[0] == f"lt: {LOCALTUNNEL_URL}", started.stdout
    assert settings_on_disk(daemon)["tunnels"]["lt"]["provider"] == "localtunnel"
    removed = daemon.manage("remote", "stop", "lt", "--remove")
    assert removed.stdout.strip() == "Removed: lt"
    assert "lt" not in settings_on_disk(daemon)["tunnels"]
    wrong = daemon.manage("remote", "start", "ssh", check=False)
    assert wrong.returncode != 0 and "tunnels.ssh.host: required" in wrong.stderr, wrong.stderr

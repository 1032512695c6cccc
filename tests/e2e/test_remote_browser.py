"""Remote access in headless Chromium, through a real SSH reverse tunnel (contract §13): a phone
pairs (approved from the local dashboard in another browser), then uses a terminal; a share
renders whole through the tunnel (Vite); and a paired phone's owner preview cannot use the
remote session against /api/ or /ws.

The tunnel's public host name (`tunnel.example.test`) resolves to this machine in Chromium, as
DNS would for a VPS; every request the phone makes goes through the SSH server's forwarded port.
Chromium treats that origin as secure, as it would the https URL every tunnel service hands out
(browsers send Fetch Metadata only there); the plain-http case is tested in test_remote_tunnel.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from harness.daemon import Daemon, free_port, migrated_home
from harness.dashboard import show
from harness.ssh import SSHServer
from harness.termclient import hosting_settings, shell_env
from harness.upstream import Upstream
from tests.e2e.test_remote_tunnel import PUBLIC_HOST, wait_online

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
ACTIVE = "#session-views > :not([hidden])"


@pytest.fixture(scope="module")
def forwarded() -> int:
    """The port the SSH server opens for the tunnel: the public URL's port."""
    return free_port()


@pytest.fixture(scope="module")
def browser(forwarded: int) -> Iterator[Browser]:
    from harness.browser import chromium

    with chromium(
        f"--host-resolver-rules=MAP {PUBLIC_HOST} 127.0.0.1",
        f"--unsafely-treat-insecure-origin-as-secure=http://{PUBLIC_HOST}:{forwarded}",
        full=True,  # the headless shell ignores the flag above: the page is no secure context
    ) as launched:
        yield launched


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("remote-ws")


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory, workspace: Path, forwarded: int
) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-remote-browser")
    ssh = SSHServer(tmp / "sshd").start()
    settings = {
        **hosting_settings(),
        "workspaces": [str(workspace)],
        "tunnels": {
            "vps": ssh.tunnel(forwarded, public_url=f"http://{PUBLIC_HOST}:{{remote_port}}")
        },
    }
    server = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    server.public = wait_online(server, "vps")["public_url"]  # type: ignore[attr-defined]
    yield server
    server.stop()
    ssh.stop()


def public(daemon: Daemon) -> str:
    return daemon.public  # type: ignore[attr-defined]


def pair_in_page(page: Page, daemon: Daemon) -> None:
    """Pairing as the pairing page does it, from inside the phone's browser (so the cookie lands
    there), approved with the owner's API on the main port."""
    started = page.evaluate("async () => (await fetch('/pair/start', {method: 'POST'})).json()")
    approved = httpx.post(
        f"{daemon.url}/api/pairings/approve",
        json={"code": started["code"]},
        headers=daemon.owner_headers(),
    )
    assert approved.status_code == 200, approved.text
    status = page.evaluate(
        "async (id) => (await fetch('/pair/status?pair_id=' + id)).json()", started["pair_id"]
    )
    assert status == {"status": "approved"}


def test_a_phone_pairs_through_the_tunnel_and_types_into_a_terminal(
    browser: Browser, daemon: Daemon, workspace: Path
) -> None:
    phone = browser.new_context(**PHONE)
    owner = browser.new_context()
    try:
        page = phone.new_page()
        page.goto(public(daemon) + "/")
        expect(page.locator("h1")).to_have_text("Pair this browser with svc")
        page.click("#start")
        code = page.locator("#code")
        page.wait_for_function("/^\\d{6}$/.test(document.getElementById('code').textContent)")
        shown = code.text_content()
        page.reload()  # a reload mid-flow resumes the same request
        page.wait_for_function("/^\\d{6}$/.test(document.getElementById('code').textContent)")
        assert code.text_content() == shown

        desk = owner.new_page()
        desk.goto(f"{daemon.url}/login?token={daemon.owner_token}")
        show(desk, "remote")
        expect(desk.locator("#pairings")).to_contain_text("waiting")  # appears live
        desk.fill("#pair-approve input[name=code]", shown or "")
        desk.click("#pair-approve button")
        expect(desk.locator("#pair-approve-status")).not_to_be_empty()

        expect(page.locator("#sidebar h1")).to_have_text("svc", timeout=15000)  # the dashboard
        assert page.url == public(daemon) + "/"
        page.select_option("#new-agent", "shell")
        page.select_option("#new-workspace", str(workspace))
        page.select_option("#new-kind", "terminal")
        page.click("#new-session button[type=submit]")
        expect(page.locator(f"{ACTIVE} .xterm-rows")).to_be_visible(timeout=15000)
        page.locator(f"{ACTIVE} .xterm-helper-textarea").focus()
        page.keyboard.type("echo remote-$((6*7))")
        page.keyboard.press("Enter")
        expect(page.locator(f"{ACTIVE} .xterm-rows")).to_contain_text("remote-42", timeout=15000)
        expect(desk.locator("#pairings [data-revoke]")).to_have_count(1)
    finally:
        phone.close()
        owner.close()


def test_a_share_renders_whole_through_the_tunnel(
    browser: Browser,
    daemon: Daemon,
    vite,
) -> None:
    port, app = vite
    made = httpx.post(
        f"{daemon.url}/api/previews",
        json={"port": port, "workspace": str(app)},
        headers=daemon.owner_headers(),
    )
    links = made.json()
    assert links["share_url"].startswith(public(daemon) + "/preview/s/"), links
    assert links["local_share_url"].startswith(daemon.url + "/preview/s/"), links
    stranger = browser.new_context(**PHONE)
    try:
        page = stranger.new_page()
        page.goto(links["share_url"])
        page.locator("#message", has_text="hello from vite").wait_for(timeout=20000)
    finally:
        stranger.close()


PROBE = """async () => {
    const out = {};
    const api = await fetch('/api/sessions', {credentials: 'include'});
    out.api = api.status;
    const home = await fetch('/', {credentials: 'include'});
    out.home = home.status + (/svc-page-key/.test(await home.text()) ? ' key!' : '');
    out.ws = await new Promise((resolve) => {
        const ws = new WebSocket('ws://' + location.host + '/ws/sessions');
        let frames = 0;
        ws.onmessage = () => { frames += 1; };
        ws.onclose = (e) => resolve('closed after ' + frames + ' frames');
    });
    out.frame = await new Promise((resolve) => {
        const f = document.createElement('iframe');
        f.src = '/';
        f.onload = () => {
            try {
                const d = f.contentDocument;
                const m = d && d.querySelector('meta[name=svc-page-key]');
                resolve(m ? 'read the key' : 'no key');
            } catch (e) { resolve('blocked'); }
        };
        document.body.append(f);
        setTimeout(() => resolve('blocked'), 5000);
    });
    out.popup = await new Promise((resolve) => {
        const w = window.open('/');
        setTimeout(() => {
            try {
                const m = w && !w.closed && w.document.querySelector('meta[name=svc-page-key]');
                resolve(m ? 'read the key' : 'no key');
            } catch (e) { resolve('blocked'); }
        }, 3000);
    });
    return out;
}"""


def test_a_paired_phones_owner_preview_cannot_use_the_remote_session(
    browser: Browser, daemon: Daemon
) -> None:
    with Upstream() as upstream:
        made = httpx.post(
            f"{daemon.url}/api/previews",
            json={"port": upstream.port},
            headers=daemon.owner_headers(),
        )
        slug = made.json()["slug"]
        phone: BrowserContext = browser.new_context(**PHONE)
        try:
            page = phone.new_page()
            page.goto(public(daemon) + "/")
            pair_in_page(page, daemon)
            page.goto(f"{public(daemon)}/preview/u/{slug}/")
            page.wait_for_function("document.getElementById('status').textContent === 'script ran'")
            page.wait_for_function("document.getElementById('logo').complete")
            assert page.eval_on_selector("#logo", "e => e.naturalWidth") == 2  # root-relative
            probe = page.evaluate(PROBE)
            assert probe["api"] == 403, probe  # the cookie rode along; the page key did not
            assert probe["home"] == "403", probe
            assert probe["ws"] == "closed after 0 frames", probe
            assert probe["frame"] in ("blocked", "no key"), probe
            assert probe["popup"] in ("blocked", "no key"), probe
            # The same phone's own dashboard still works: the session itself is fine.
            page.goto(public(daemon) + "/")
            expect(page.locator("#sidebar h1")).to_have_text("svc")
        finally:
            phone.close()


def test_an_invite_from_the_dashboard_pairs_the_phone_that_opens_it(
    browser: Browser, daemon: Daemon
) -> None:
    owner = browser.new_context()
    phone = browser.new_context(**PHONE)
    try:
        desk = owner.new_page()
        desk.goto(f"{daemon.url}/login?token={daemon.owner_token}")
        show(desk, "remote")
        desk.click("#pair-invite-make")
        link = desk.locator("#pair-invite-link code")
        expect(link).to_contain_text("/pair#invite=")
        expect(desk.locator("#pair-invite-link svg.qr")).to_be_visible()
        url = link.text_content() or ""
        assert url.startswith(public(daemon) + "/pair#invite=")
        page = phone.new_page()
        page.goto(url)
        expect(page.locator("#sidebar h1")).to_have_text("svc", timeout=15000)  # paired at once
        assert "invite" not in page.url  # the secret left the address bar
        again = browser.new_context(**PHONE)
        try:
            other = again.new_page()
            other.goto(url)  # one use
            expect(other.locator("#status")).to_contain_text("wrong, used or expired")
        finally:
            again.close()
    finally:
        owner.close()
        phone.close()

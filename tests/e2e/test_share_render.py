"""A shared preview renders the whole page as the owner sees it (contract §8, issue 12), in Debian
Chromium: root-relative scripts, styles, images and a Vite app's ES modules through the share URL
alone — also through a single foreign host name (a tunnel) — and still nothing of svc's."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext

from harness.browser_login import dashboard_url, lget
from harness.daemon import Daemon

TUNNEL_HOST = "share.example.test"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium that resolves the tunnel's host name to this machine, as DNS would for it."""
    from harness.browser import chromium

    with chromium(f"--host-resolver-rules=MAP {TUNNEL_HOST} 127.0.0.1") as launched:
        yield launched


def share_url(daemon: Daemon, port: int, workspace: str = "") -> str:
    made = httpx.post(
        f"{daemon.url}/api/previews",
        json={"port": port, **({"workspace": workspace} if workspace else {})},
        headers=daemon.owner_headers(),
    )
    return made.json()["share_url"]


@pytest.fixture
def stranger(browser: Browser) -> Iterator[BrowserContext]:
    """Whoever the link was sent to: a browser that never logged in to svc."""
    ctx = browser.new_context()
    yield ctx
    ctx.close()


def assert_static_site_rendered(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("document.getElementById('status').textContent === 'script ran'")
    assert page.eval_on_selector("#headline", "e => getComputedStyle(e).color") == "rgb(12, 34, 56)"
    page.wait_for_function("document.getElementById('logo').complete")
    assert page.eval_on_selector("#logo", "e => e.naturalWidth") == 2  # /logo.png loaded


def test_a_shared_static_site_with_root_relative_assets_renders(
    stranger: BrowserContext,
    daemon: Daemon,
    site: dict,
) -> None:
    page = stranger.new_page()
    page.goto(share_url(daemon, site["port"]))
    assert_static_site_rendered(page)


def test_a_shared_vite_app_loads_its_module_graph(
    stranger: BrowserContext,
    daemon: Daemon,
    vite,
) -> None:
    port, app = vite
    page = stranger.new_page()
    page.goto(share_url(daemon, port, str(app)))
    page.locator("#message", has_text="hello from vite").wait_for(timeout=20000)


def test_a_shared_page_cannot_use_the_owners_login(
    browser: Browser,
    daemon: Daemon,
    site: dict,
) -> None:
    owner = browser.new_context()
    page = owner.new_page()
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")  # logged in, as the README says
    page.goto(share_url(daemon, site["port"]))
    assert_static_site_rendered(page)
    probe = page.evaluate(
        """async (dashboard) => {
        const out = {};
        const r = await fetch('/api/sessions', {credentials: 'include'});
        out.api = r.status + ' ' + (await r.text()).slice(0, 200);
        try {
            const d = await fetch(dashboard + '/api/sessions', {credentials: 'include'});
            out.dashboard = 'read ' + d.status;
        } catch (e) { out.dashboard = 'blocked'; }
        out.ws = await new Promise((resolve) => {
            const ws = new WebSocket('ws://' + location.host + '/ws/sessions');
            let data = '';
            ws.onmessage = (m) => { data += m.data; };
            ws.onclose = (e) => resolve('closed ' + e.code + ' ' + data);
        });
        return out;
    }""",
        dashboard_url(daemon),
    )
    # The page's own /api/sessions is its dev server's (svc sends it there), never svc's list.
    assert '"agent"' not in probe["api"] and not probe["api"].startswith("200 [")
    assert probe["dashboard"] == "blocked"
    assert probe["ws"] == "closed 4401 "  # no credential for svc rides along
    owner.close()


class Relay:
    """A tunnel stand-in: one local TCP port forwarding bytes to svc, so svc sees the browser's
    `Host: share.example.test:<port>`."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.server.close()


def test_through_a_tunnel_host_the_share_renders_and_nothing_else_answers(
    stranger: BrowserContext,
    daemon: Daemon,
    site: dict,
) -> None:
    relay = Relay(daemon.port)
    public = f"http://{TUNNEL_HOST}:{relay.port}"
    share = share_url(daemon, site["port"]).replace(daemon.url, public)
    try:
        page = stranger.new_page()
        page.goto(share)
        assert page.url.startswith(f"{public}/preview/s/")
        assert_static_site_rendered(page)
        tunnel = f"http://127.0.0.1:{relay.port}"
        host = {"Host": f"{TUNNEL_HOST}:{relay.port}"}
        path = share.split(str(relay.port), 1)[1]
        assert httpx.get(tunnel + path, headers=host).status_code == 200
        assert httpx.head(tunnel + path, headers=host).status_code == 200
        assert httpx.post(tunnel + path, headers=host, json={}).status_code == 405
        assert httpx.delete(tunnel + path, headers=host).status_code == 405
        owner = {**host, **daemon.owner_headers()}
        for refused in ("/api/sessions", "/", "/admin/", f"/preview/u/{site['slug']}/", "/mcp"):
            answer = httpx.get(tunnel + refused, headers=owner)
            assert answer.status_code in (400, 403, 421), (refused, answer.status_code)
    finally:
        relay.close()


def test_through_a_tunnel_host_no_websocket_opens(daemon: Daemon) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    relay = Relay(daemon.port)
    try:
        url = f"ws://{TUNNEL_HOST}:{relay.port}/ws/sessions?token={daemon.owner_token}"
        raw = socket.create_connection(("127.0.0.1", relay.port))
        with pytest.raises(InvalidStatus) as refused, connect(url, sock=raw, open_timeout=10):
            pass
        assert refused.value.response.status_code == 403
    finally:
        relay.close()


def test_a_share_never_runs_on_the_dashboard_host(daemon: Daemon, site: dict) -> None:
    """The dashboard host carries the owner's browser session: a shared page opened there would
    be same-origin with it, so svc sends it to the loopback origin instead."""
    share = share_url(daemon, site["port"])
    path = share.removeprefix(daemon.url)
    answer = lget(dashboard_url(daemon) + path + "index.html?x=1")
    assert answer.status_code == 303
    assert answer.headers["location"] == f"{daemon.url}{path}index.html?x=1"


def test_only_a_live_shares_own_page_routes_a_root_relative_read(
    daemon: Daemon,
    site: dict,
) -> None:
    share = share_url(daemon, site["port"])
    page = share + "index.html"
    path = share.removeprefix(daemon.url)
    routed = httpx.get(f"{daemon.url}/app.js", headers={"Referer": page})
    assert routed.status_code == 307 and routed.headers["location"] == f"{path}app.js"
    unknown = page.replace(path.split("/")[3], "0" * 32)
    elsewhere = page.replace(daemon.url, "http://evil.test")
    for referer in (unknown, elsewhere):  # a dead share, or another site naming a live one
        answer = httpx.get(f"{daemon.url}/app.js", headers={"Referer": referer})
        assert answer.status_code != 307, referer
    # A write from the shared page goes to svc itself, which wants the owner's credential.
    write = httpx.post(f"{daemon.url}/api/sessions", json={}, headers={"Referer": page})
    assert write.status_code == 401

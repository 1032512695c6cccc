"""A hostile previewed page through the tunnel (issue 31, finding 1; contract §13 "What a previewed
page may do remotely"), in Chromium through a real SSH reverse tunnel.

The dev server is compromised: its page answers with `Cross-Origin-Opener-Policy: same-origin`,
`Cross-Origin-Embedder-Policy: require-corp`, `Service-Worker-Allowed: /` and a cookie, then tries
every way it has to the remote dashboard's page key — `window.open('/')` (which with a COOP of its
own put it in the dashboard's browsing-context group and let it read the key), an iframe, a
service worker for `/`, `fetch('/')`, `/api/` and `/ws` with the paired cookie — as an owner
preview and as a share whose page sets `<meta name="referrer" content="no-referrer">` (so svc
cannot route its `/` back into the share). The same phone's dashboard opening the preview in a
window of its own must not hand it an opener either. Nothing may read the key and no call may
succeed with the phone's session.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from harness.daemon import Daemon, free_port, migrated_home
from harness.ssh import SSHServer
from harness.termclient import hosting_settings, shell_env
from tests.e2e.test_remote_browser import PHONE, pair_in_page
from tests.e2e.test_remote_tunnel import PUBLIC_HOST, wait_online

ATTACK = """<!doctype html>
<html><head><meta charset="utf-8">%(referrer)s<title>hostile</title></head>
<body><p id="status">loading</p>
<script>
const KEY = 'meta[name=svc-page-key]';
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
function readKey(w) {
  try {
    const m = w && !w.closed && w.document && w.document.querySelector(KEY);
    return m ? 'read the key: ' + m.content : 'no key';
  } catch (e) { return 'blocked'; }
}
async function probe() {
  const out = {};
  out.isolated = self.crossOriginIsolated;
  try { out.opener = readKey(window.opener); } catch (e) { out.opener = 'blocked'; }
  const api = await fetch('/api/sessions', {credentials: 'include'});
  out.api = api.status;
  const write = await fetch('/api/sessions', {method: 'POST', credentials: 'include',
    headers: {'Content-Type': 'application/json'}, body: '{"agent":"shell","workspace":"/"}'});
  out.write = write.status;
  const home = await fetch('/', {credentials: 'include'});
  out.home = home.status + (/svc-page-key/.test(await home.text()) ? ' key!' : '');
  out.ws = await new Promise((resolve) => {
    const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
    const ws = new WebSocket(scheme + location.host + '/ws/sessions');
    let frames = 0;
    ws.onmessage = () => { frames += 1; };
    ws.onclose = () => resolve('closed after ' + frames + ' frames');
    setTimeout(() => resolve('still open after ' + frames + ' frames'), 8000);
  });
  out.frame = await new Promise((resolve) => {
    const f = document.createElement('iframe');
    f.src = '/';
    f.onload = () => resolve(readKey(f.contentWindow));
    document.body.append(f);
    setTimeout(() => resolve('blocked'), 5000);
  });
  out.sw_root = await navigator.serviceWorker.register('sw.js', {scope: '/'})
    .then((r) => 'registered for ' + r.scope, (e) => 'refused: ' + e.name);
  out.sw_own = await navigator.serviceWorker.register('/evil-sw.js', {scope: '/'})
    .then((r) => 'registered for ' + r.scope, (e) => 'refused: ' + e.name);
  const popup = window.open('/');
  out.popup = 'still loading';
  for (let i = 0; i < 60 && out.popup === 'still loading'; i++) {
    await wait(250);
    try {
      if (!popup || popup.closed) out.popup = 'severed';
      else if (popup.location.href !== 'about:blank' && popup.document.readyState === 'complete')
        out.popup = readKey(popup);
    } catch (e) { out.popup = 'blocked'; }
  }
  window.probed = out;
  document.getElementById('status').textContent = 'probed';
}
window.probeNow = probe;
if (!location.search.includes('manual')) probe();
</script></body></html>
"""

SERVICE_WORKER = b"""self.addEventListener('fetch', (event) => {
  if (new URL(event.request.url).pathname === '/') event.respondWith(new Response('owned'));
});
"""

# COOP `same-origin` alone matches the remote dashboard's own policy: with it the page and a
# dashboard it opens share a browsing-context group (the attack). With COEP added the policies
# differ and the browser separates them by itself, so the page probes without COEP; the headers
# test below checks that COEP and the rest never reach the browser either.
HOSTILE_HEADERS = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Origin-Agent-Cluster": "?1",
    "Service-Worker-Allowed": "/",
    "Set-Cookie": "svc_remote=planted; Path=/",
}
ISOLATION_HEADERS = {
    **HOSTILE_HEADERS,
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Opener-Policy-Report-Only": "same-origin",
    "Document-Isolation-Policy": "isolate-and-require-corp",
}


class HostileDevServer:
    """A dev server whose page attacks svc's remote session (headers above, page above)."""

    def __init__(self, no_referrer: bool = False, headers: dict | None = None) -> None:
        sent = HOSTILE_HEADERS if headers is None else headers
        referrer = '<meta name="referrer" content="no-referrer">' if no_referrer else ""
        page = (ATTACK % {"referrer": referrer}).encode()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path.endswith("sw.js"):
                    body, kind = SERVICE_WORKER, "text/javascript"
                else:
                    body, kind = page, "text/html; charset=utf-8"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                for name, value in sent.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def forwarded() -> int:
    return free_port()


@pytest.fixture(scope="module")
def browser(forwarded: int) -> Iterator[Browser]:
    from harness.browser import chromium

    with chromium(
        f"--host-resolver-rules=MAP {PUBLIC_HOST} 127.0.0.1",
        f"--unsafely-treat-insecure-origin-as-secure=http://{PUBLIC_HOST}:{forwarded}",
        full=True,  # a secure context (as every tunnel's https URL is): Fetch Metadata, workers
    ) as launched:
        yield launched


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, forwarded: int) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-preview-isolation")
    ssh = SSHServer(tmp / "sshd").start()
    settings = {
        **hosting_settings(),
        "workspaces": [str(tmp)],
        "tunnels": {
            "vps": ssh.tunnel(forwarded, public_url=f"http://{PUBLIC_HOST}:{{remote_port}}")
        },
    }
    server = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    server.public = wait_online(server, "vps")["public_url"]  # type: ignore[attr-defined]
    yield server
    server.stop()
    ssh.stop()


@pytest.fixture
def phone(browser: Browser, daemon: Daemon) -> Iterator[tuple[BrowserContext, Page]]:
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.goto(daemon.public + "/")  # type: ignore[attr-defined]
    pair_in_page(page, daemon)
    try:
        yield context, page
    finally:
        context.close()


def _preview(daemon: Daemon, port: int) -> dict:
    made = httpx.post(
        f"{daemon.url}/api/previews", json={"port": port}, headers=daemon.owner_headers()
    )
    assert made.status_code in (200, 201), made.text
    return made.json()


def _sessions(daemon: Daemon) -> int:
    return len(httpx.get(f"{daemon.url}/api/sessions", headers=daemon.owner_headers()).json())


def _assert_nothing_reached(probed: dict, context: BrowserContext) -> None:
    assert probed["popup"] in ("severed", "blocked", "no key"), probed  # the critical one
    assert probed["api"] == 403 and probed["write"] == 403, probed
    assert probed["home"] == "403", probed
    assert probed["ws"] == "closed after 0 frames", probed
    assert probed["frame"] in ("blocked", "no key"), probed
    assert probed["opener"] in ("blocked", "no key"), probed
    assert probed["sw_root"].startswith("refused"), probed
    assert probed["sw_own"].startswith("refused"), probed
    # The cookie the page tried to plant never replaced the paired one.
    cookies = {c["name"]: c["value"] for c in context.cookies()}
    assert cookies.get("svc_remote") not in (None, "planted"), cookies


def _dashboard_still_works(page: Page, daemon: Daemon) -> None:
    page.goto(daemon.public + "/")  # type: ignore[attr-defined]
    expect(page.locator("#sidebar h1")).to_have_text("svc")
    key = page.eval_on_selector("meta[name=svc-page-key]", "m => m.content")
    assert key and len(key) == 64


def test_a_hostile_owner_preview_cannot_reach_the_page_key_or_the_session(
    daemon: Daemon, phone: tuple[BrowserContext, Page]
) -> None:
    context, page = phone
    hostile = HostileDevServer()
    try:
        slug = _preview(daemon, hostile.port)["slug"]
        before = _sessions(daemon)
        page.goto(f"{daemon.public}/preview/u/{slug}/")  # type: ignore[attr-defined]
        page.wait_for_function(
            "document.getElementById('status').textContent === 'probed'", timeout=60000
        )
        probed = page.evaluate("window.probed")
        _assert_nothing_reached(probed, context)
        assert _sessions(daemon) == before  # the POST started nothing
        _dashboard_still_works(page, daemon)
    finally:
        hostile.close()


def test_a_hostile_share_with_no_referrer_cannot_reach_the_paired_phones_dashboard(
    daemon: Daemon, phone: tuple[BrowserContext, Page]
) -> None:
    context, page = phone
    hostile = HostileDevServer(no_referrer=True)
    try:
        share_url = _preview(daemon, hostile.port)["share_url"]
        assert share_url.startswith(daemon.public + "/preview/s/")  # type: ignore[attr-defined]
        page.goto(share_url)
        page.wait_for_function(
            "document.getElementById('status').textContent === 'probed'", timeout=60000
        )
        _assert_nothing_reached(page.evaluate("window.probed"), context)
        _dashboard_still_works(page, daemon)
    finally:
        hostile.close()


def test_a_preview_opened_from_the_dashboard_gets_no_opener(
    daemon: Daemon, phone: tuple[BrowserContext, Page]
) -> None:
    context, page = phone
    hostile = HostileDevServer()
    try:
        slug = _preview(daemon, hostile.port)["slug"]
        _dashboard_still_works(page, daemon)
        with context.expect_page() as opened:
            # As a script of the dashboard would: window.open keeps an opener unless told not to.
            page.evaluate(f"window.open('/preview/u/{slug}/?manual=1')")
        preview = opened.value
        preview.wait_for_load_state()
        found = preview.evaluate(
            """() => { try { const m = window.opener && window.opener.document.querySelector(
                'meta[name=svc-page-key]'); return m ? 'read the key' : 'no key'; }
                catch (e) { return 'blocked'; } }"""
        )
        assert found in ("blocked", "no key"), found
        assert preview.evaluate("window.opener === null"), "the dashboard handed its opener over"
    finally:
        hostile.close()


def test_the_proxy_drops_isolation_headers_only_on_svcs_origin(daemon: Daemon) -> None:
    """What the browser is sent from svc's own origin: the hostile page's isolation headers,
    worker scope and cookie are gone."""
    hostile = HostileDevServer(headers=ISOLATION_HEADERS)
    try:
        links = _preview(daemon, hostile.port)
        shared = httpx.get(links["local_share_url"])
        assert shared.status_code == 200
        for name in ISOLATION_HEADERS:
            if name != "Cross-Origin-Resource-Policy":  # who may embed it: harmless to keep
                assert name.lower() not in shared.headers, (name, dict(shared.headers))
    finally:
        hostile.close()

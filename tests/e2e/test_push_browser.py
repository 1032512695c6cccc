"""Web Push end to end in Debian's Chromium (contract §15; docs/notifications.md "Browser side"):
the page subscribes, the scripted agent asks permission, svc encrypts and signs a push for that
subscription, and the page's real service worker shows it as a notification whose click opens
the session.

Headless Chromium offline cannot subscribe at its real push service (FCM), so the push service is
harness/fakes/push_endpoint.py, a strict local one on https://127.0.0.1 with a throw-away CA — the
daemon trusts it through SSL_CERT_FILE and lists 127.0.0.1 in notifications.push_private_hosts,
as a deployment with a self-hosted push service does — and the test carries the push the last
step:

1. Before any page loads, an init script replaces `PushManager.prototype.subscribe` and
   `getSubscription`: they return a subscription whose endpoint is the fake's URL and whose
   p256dh/auth keys are the fake's browser-side keys (the fake holds their private halves). The
   rest is the page's own code: the permission prompt, the service worker's registration, the
   application server key from `GET /api/push/key`, the POST of the subscription to svc.
2. svc sends the push as to any push service: the fake checks its VAPID JWT and decrypts the
   RFC 8291 body with the browser-side keys — a push svc got wrong never arrives.
3. The decrypted payload goes to the page's service worker through the DevTools protocol's
   `ServiceWorker.deliverPushMessage`, the same `push` event a browser fires for a real push.

A click on a notification cannot be made in headless Chromium: the test dispatches a
`notificationclick` event with the shown notification inside the service worker (Playwright's
`Worker.evaluate`). Such an event is untrusted, so the browser refuses it focus and a new window
(no user gesture): the test covers the path of an open dashboard, which the worker tells where
to go and which follows its hash.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from playwright.sync_api import Browser, BrowserContext, Page, expect

from harness.browser_login import dashboard_url, lget
from harness.browser_push import DevTools, service_worker
from harness.daemon import Daemon
from harness.fakes.push_endpoint import PRIVATE_HOSTS, PushCA, PushEndpoint
from harness.termclient import start_hosting_daemon

ACTIVE = "#session-panel .session-view.active"
OFFER = "#push-offer aside"
FAKE_SUBSCRIPTION = "test.fake-push-subscription"  # localStorage: the stub's "subscribed"

# Stands in for the browser's push service client (module docstring, step 1). Everything else the
# page does is its own code.
STUB = """
(() => {
  const fake = %s;
  const KEY = %r;
  const bytes = (text) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")),
                                          (c) => c.charCodeAt(0)).buffer;
  const text = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer)))
    .replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
  const made = (serverKey) => ({
    endpoint: fake.endpoint,
    expirationTime: null,
    options: { userVisibleOnly: true, applicationServerKey: bytes(serverKey) },
    getKey: (name) => bytes(fake.keys[name]),
    toJSON: () => ({ endpoint: fake.endpoint, expirationTime: null, keys: fake.keys }),
    unsubscribe: async () => { localStorage.removeItem(KEY); return true; },
  });
  PushManager.prototype.subscribe = async function (options) {
    if (!options || !options.userVisibleOnly) {
      throw new DOMException("Chromium requires userVisibleOnly", "NotAllowedError");
    }
    const given = options.applicationServerKey;
    const serverKey = typeof given === "string" ? given : text(given.buffer || given);
    localStorage.setItem(KEY, serverKey);
    return made(serverKey);
  };
  PushManager.prototype.getSubscription = async function () {
    const serverKey = localStorage.getItem(KEY);
    return serverKey ? made(serverKey) : null;
  };
})();
"""


class Endpoint(PushEndpoint):
    """The strict fake push service, telling the test when a push got through."""

    def __init__(self, ca: PushCA) -> None:
        super().__init__(ca)
        self.arrived = threading.Condition()

    async def handle(self, request: web.Request) -> web.Response:
        response = await super().handle(request)
        with self.arrived:
            self.arrived.notify_all()
        return response

    def wait_for(self, name: str, count: int, timeout: float = 45) -> list[dict[str, Any]]:
        with self.arrived:
            done = self.arrived.wait_for(lambda: len(self.payloads(name)) >= count, timeout)
        assert done, f"no push for {name} (rejected: {self.rejected}, attempts: {self.attempts})"
        return self.payloads(name)


@pytest.fixture(scope="module")
def push_ca(tmp_path_factory: pytest.TempPathFactory) -> PushCA:
    return PushCA(tmp_path_factory.mktemp("push-ca"))


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory, push_ca: PushCA) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-push-browser")
    server = start_hosting_daemon(tmp, env={"SSL_CERT_FILE": str(push_ca.cert_file)})
    workspace = tmp / "work"
    workspace.mkdir()
    with httpx.Client(base_url=f"{server.url}/api", headers=server.owner_headers()) as api:
        api.post("/workspaces", json={"path": str(workspace)}, timeout=30).raise_for_status()
        # The owner lets the self-hosted push service's private address through, on svc's
        # main port.
        private = {"notifications": {"push_private_hosts": PRIVATE_HOSTS}}
        api.patch("/settings", json=private, timeout=30).raise_for_status()
    server.workspace = workspace  # type: ignore[attr-defined]
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """The full browser: the headless shell has no notification permission to grant."""
    from harness.browser import chromium

    with chromium(full=True) as launched:
        yield launched


@pytest.fixture(scope="module")
def push_service(push_ca: PushCA) -> Iterator[Endpoint]:
    endpoint = Endpoint(push_ca)
    endpoint.start()
    yield endpoint
    endpoint.stop()


def new_context(
    browser: Browser, host: Daemon, stub: dict[str, Any] | None = None
) -> BrowserContext:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["notifications"], origin=dashboard_url(host))
    if stub is not None:
        context.add_init_script(STUB % (json.dumps(stub), FAKE_SUBSCRIPTION))
    return context


def log_in(page: Page, host: Daemon) -> None:
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator("#push-settings")).to_be_attached()  # push.js has run
    expect(page.locator("#new-agent option[value=fake]")).to_have_count(1)


def show(page: Page, view: str) -> None:
    page.evaluate("(view) => { location.hash = `view=${view}`; }", view)
    expect(page.locator(f"#{view}-box")).to_be_visible()


def start_chat(page: Page, host: Daemon, agent: str = "fake") -> str:
    show(page, "sessions")
    page.select_option("#new-agent", agent)
    page.select_option("#new-workspace", str(host.workspace))  # type: ignore[attr-defined]
    page.select_option("#new-kind", "chat")
    page.click("#new-session button[type=submit]")
    expect(page.locator(f"{ACTIVE} .chat-input textarea")).to_be_visible()
    session_id = page.locator(ACTIVE).get_attribute("data-session-id")
    assert session_id
    return session_id


def settled(page: Page) -> None:
    """Two frames later: whatever the page was going to render by now, it has."""
    page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def notifications(page: Page) -> list[dict[str, Any]]:
    return page.evaluate(
        """async () => (await (await navigator.serviceWorker.ready).getNotifications())
            .map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data }))"""
    )


# --- the tests ------------------------------------------------------------------------------------


def test_sw_js_is_served_at_the_root_for_the_whole_dashboard_on_both_listeners(
    host: Daemon,
) -> None:
    source = (Path(__file__).parents[2] / "static" / "svc" / "sw.js").read_bytes()
    remote_port = host.auth()["remote_port"]
    assert remote_port, "the remote listener is bound at start"
    for base in (host.url, dashboard_url(host), f"http://127.0.0.1:{remote_port}"):
        response = lget(f"{base}/sw.js", timeout=30)
        assert response.status_code == 200, (base, response.text)
        assert response.headers["content-type"].startswith("application/javascript")
        assert response.headers["service-worker-allowed"] == "/"
        assert response.headers["cache-control"] == "no-cache"
        assert response.content == source
    refused = httpx.post(f"{host.url}/sw.js", timeout=30)
    assert refused.status_code in (401, 403, 405), refused.status_code


def test_the_offer_comes_after_a_session_opens_and_not_now_is_remembered(
    browser: Browser, host: Daemon
) -> None:
    context = new_context(browser, host, stub=None)
    page = context.new_page()
    try:
        log_in(page, host)
        show(page, "settings")
        expect(page.locator("#push-settings h3")).to_have_text("Browser notifications")
        expect(page.locator("#push-status")).to_have_text("Off.")
        settled(page)
        expect(page.locator(OFFER)).to_have_count(0)  # never on page load

        start_chat(page, host)
        offer = page.get_by_role("region", name="Notifications")
        expect(offer).to_contain_text("Get a notification when an agent waits for you?")
        offer.get_by_role("button", name="Not now").click()
        expect(page.locator(OFFER)).to_have_count(0)
        assert page.evaluate("localStorage.getItem('svc.push.offer')") == "dismissed"

        page.goto(f"{dashboard_url(host)}/")  # a load, not the chat its hash names
        expect(page.locator("#push-settings")).to_be_attached()
        start_chat(page, host)
        settled(page)
        expect(page.locator(OFFER)).to_have_count(0)  # asked once, never again
        show(page, "settings")
        expect(page.locator("#push-status")).to_have_text("Off.")  # still there to turn on
        expect(page.locator("#push-settings button")).to_have_text("Turn on")
    finally:
        context.close()


def test_a_push_svc_sends_for_a_permission_request_shows_and_opens_the_session(
    browser: Browser, host: Daemon, push_service: Endpoint
) -> None:
    origin = dashboard_url(host)
    subscription = push_service.subscribe("chromium")
    context = new_context(browser, host, stub=subscription)
    # DevTools on a page of its own: it must outlive the dashboard's tab, which is closed below.
    helper = context.new_page()
    devtools = DevTools(helper, context.new_cdp_session(helper))
    page = context.new_page()
    try:
        log_in(page, host)
        session_id = start_chat(page, host)

        # The offer, then the page's own subscribing.
        offer = page.get_by_role("region", name="Notifications")
        with page.expect_response(
            lambda r: r.url.endswith("/api/push/subscriptions") and r.request.method == "POST"
        ) as posted:
            offer.get_by_role("button", name="Turn on").click()
        assert posted.value.status == 201
        assert json.loads(posted.value.request.post_data or "{}")["keys"] == subscription["keys"]
        expect(offer).to_contain_text("Notifications are on.")
        server_key = httpx.get(f"{host.url}/api/push/key", headers=host.owner_headers()).json()
        stub_key = page.evaluate(f"localStorage.getItem('{FAKE_SUBSCRIPTION}')")
        assert stub_key == server_key["public_key"]  # subscribed with svc's VAPID key
        devtools.registration(origin)  # the worker's scope is the whole dashboard

        # The scripted agent asks permission: svc pushes, the strict fake push service verifies
        # the VAPID signature and decrypts it with the browser-side keys.
        box = page.locator(f"{ACTIVE} .chat-input textarea")
        box.fill("permission")
        box.press("Enter")
        expect(page.locator(".chat-permission button:text('Allow once')")).to_be_visible()
        [payload] = push_service.wait_for("chromium", 1)
        assert payload["event"] == "permission_requested"
        assert payload["session_id"] == session_id
        assert payload["title"] == "fake asks permission: rm -rf build"
        show(page, "settings")
        expect(page.locator("#push-status")).to_contain_text("On:")
        expect(page.locator("#push-settings button")).to_have_text("Turn off")

        # Someone looking at the dashboard (headless Chromium's page is focused) sees it there:
        # no system notification on top.
        devtools.deliver(origin, {**payload, "id": "seen-on-the-page", "title": "not shown"})
        assert notifications(page) == []

        # With the tab closed, the push reaches the service worker, which shows it.
        page.close()
        devtools.deliver(origin, payload)
        page = context.new_page()
        page.goto(f"{origin}/#view=sessions")
        expect(page.locator("#push-settings")).to_be_attached()
        assert notifications(page) == [
            {
                "title": "fake asks permission: rm -rf build",
                "body": payload["body"],
                "tag": payload["id"],
                "data": {
                    "url": f"/#session={session_id}",
                    "session_id": session_id,
                    "event": "permission_requested",
                },
            }
        ]

        # A click on it: the open dashboard is told to open the session, and does.
        worker = service_worker(context, page)
        worker.evaluate(
            """async () => {
                const [notification] = await self.registration.getNotifications();
                self.dispatchEvent(new NotificationEvent("notificationclick", { notification }));
            }"""
        )
        expect(page).to_have_url(f"{origin}/#session={session_id}")
        expect(page.locator(f"{ACTIVE} .chat-permission button:text('Allow once')")).to_be_visible()
        assert notifications(page) == []  # the click closed it

        # svc lost its copy (a new database): the next page load sends it again.
        forget = {"endpoint": subscription["endpoint"]}
        with httpx.Client(base_url=f"{host.url}/api", headers=host.owner_headers()) as api:
            assert api.request("DELETE", "/push/subscriptions", json=forget).status_code == 204
            with page.expect_response(
                lambda r: r.url.endswith("/api/push/subscriptions") and r.request.method == "POST"
            ) as posted:
                page.goto(f"{origin}/")
            assert posted.value.status == 201

            # Turned off in Settings: svc forgets it, the browser unsubscribes, no offer again.
            show(page, "settings")
            with page.expect_response(
                lambda r: r.url.endswith("/api/push/subscriptions") and r.request.method == "DELETE"
            ) as deleted:
                page.locator("#push-settings").get_by_role("button", name="Turn off").click()
            assert deleted.value.status == 204
            expect(page.locator("#push-status")).to_have_text("Off.")
            assert page.evaluate(f"localStorage.getItem('{FAKE_SUBSCRIPTION}')") is None
            assert api.request("DELETE", "/push/subscriptions", json=forget).status_code == 404
    finally:
        context.close()

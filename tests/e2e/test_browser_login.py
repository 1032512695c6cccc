"""The browser holds no token and no credential scoped to localhost or 127.0.0.1 (security
finding 1), and CSRF rests on a server-side secret, not on a cookie or Origin (finding 8)."""

from __future__ import annotations

import http.server
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from playwright.sync_api import Browser

from harness.browser_login import csrf_token, dashboard_url, localhost_client, logged_in
from harness.daemon import Daemon


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Any other local dev server: records the Cookie header of every request it gets."""

    seen: list[str] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Cookie") or "")
        body = b"<!doctype html><title>dev server</title><p>a dev server</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def dev_server() -> Iterator[tuple[int, list[str]]]:
    _Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], _Recorder.seen
    server.shutdown()


def cookie_pairs(header: str) -> list[str]:
    return [part.strip() for part in header.split(";") if "=" in part]


def opens_svc(daemon: Daemon, pair: str) -> bool:
    """The cookie replayed every way an attacker could: as a Cookie (on loopback and on the
    dashboard host) and its value as a Bearer token."""
    value = pair.split("=", 1)[1]
    attempts = [
        httpx.get(f"{daemon.url}/api/sessions", headers={"Cookie": pair}),
        httpx.get(f"{daemon.url}/api/sessions", headers={"Authorization": f"Bearer {value}"}),
    ]
    with localhost_client() as client:
        attempts.append(
            client.get(f"{dashboard_url(daemon)}/api/sessions", headers={"Cookie": pair})
        )
    return any(a.status_code == 200 for a in attempts)


def test_a_dev_server_on_another_loopback_port_receives_no_credential_for_svc(
    browser: Browser, daemon: Daemon, dev_server: tuple[int, list[str]]
) -> None:
    port, seen = dev_server
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")  # as the README says
    assert page.url == f"{dashboard_url(daemon)}/"
    assert page.locator("#sessions").count() == 1  # logged in: the dashboard renders
    browser_cookies = context.cookies()
    assert browser_cookies, "the login set no cookie at all"
    for cookie in browser_cookies:
        assert cookie["domain"] == daemon.auth()["browser_host"]
        assert daemon.owner_token not in cookie["value"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    for host in ("127.0.0.1", "localhost"):
        page.goto(f"http://{host}:{port}/")
        assert "a dev server" in page.content()
    assert len(seen) >= 2
    for header in seen:
        for pair in cookie_pairs(header):
            assert not opens_svc(daemon, pair), f"the dev server got a credential: {pair[:20]}…"
    context.close()


def test_logout_ends_the_browser_session(browser: Browser, daemon: Daemon) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
    session = next(c for c in context.cookies() if c["name"] == "svc_session")
    page.get_by_role("button", name="Log out").click()
    page.wait_for_load_state()
    assert "Logged out" in page.content()
    page.goto(f"{dashboard_url(daemon)}/")
    assert "Log in to svc" in page.content() or page.url.endswith("/login")
    with localhost_client() as client:
        replayed = client.get(
            f"{dashboard_url(daemon)}/api/sessions",
            headers={"Cookie": f"svc_session={session['value']}"},
        )
    assert replayed.status_code == 401
    context.close()


def test_rotate_tokens_ends_the_browser_session(browser: Browser, fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{fresh_daemon.url}/login?token={fresh_daemon.owner_token}")
    assert page.locator("#sessions").count() == 1
    dashboard = page.url
    fresh_daemon.manage("rotate_tokens")
    answer = page.goto(dashboard)
    assert answer is not None and answer.status == 401  # the old browser host opens nothing
    assert page.locator("#sessions").count() == 0
    context.close()


def session_expiry(daemon: Daemon, key: str) -> datetime:
    with sqlite3.connect(daemon.home / "db.sqlite3") as db:
        (text,) = db.execute(
            "SELECT expire_date FROM django_session WHERE session_key = ?", (key,)
        ).fetchone()
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def move_expiry(daemon: Daemon, key: str, when: datetime) -> None:
    """What the daemon's clock would find after a while without a request: the row's expiry
    moved, rather than the test sleeping through the idle time."""
    stamp = when.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")
    with sqlite3.connect(daemon.home / "db.sqlite3") as db:
        db.execute("UPDATE django_session SET expire_date = ? WHERE session_key = ?", (stamp, key))


def stored_key(daemon: Daemon, cookie: str) -> str:
    """The row a browser's session is kept under: an HMAC of its id (core/session_store.py)."""
    code = f"from core.session_store import stored_key; print(stored_key({cookie!r}))"
    return daemon.manage("shell", "-c", code).stdout.strip().splitlines()[-1]


def test_an_idle_browser_session_ends(fresh_daemon: Daemon) -> None:
    fresh_daemon.env = {"SVC_BROWSER_IDLE_SECONDS": "600"}
    fresh_daemon.start()
    with logged_in(fresh_daemon) as client:
        key = stored_key(fresh_daemon, client.cookies["svc_session"])
        # Nearly idle for the whole 600 s: a request renews the session for another 600 s.
        move_expiry(fresh_daemon, key, datetime.now(UTC) + timedelta(seconds=2))
        assert client.get("/api/sessions").status_code == 200
        left = (session_expiry(fresh_daemon, key) - datetime.now(UTC)).total_seconds()
        assert 590 <= left <= 600, left
        # Past the 600 s without a request: the session is over.
        move_expiry(fresh_daemon, key, datetime.now(UTC) - timedelta(seconds=1))
        assert client.get("/api/sessions").status_code == 401


def test_a_planted_csrf_cookie_without_origin_cannot_write(daemon: Daemon, tmp_path) -> None:
    with logged_in(daemon) as client:
        planted = {
            "Cookie": f"svc_session={client.cookies['svc_session']}; svc_csrftoken={'a' * 32}"
        }
        forged = client.post(
            "/api/workspaces",
            json={"path": str(tmp_path)},
            headers={**planted, "X-CSRFToken": "a" * 32},
        )
        assert forged.status_code == 403 and "CSRF" in forged.json()["error"]["message"]
        token = csrf_token(client)
        # Even with the right token, a form body (what another site can post) is refused.
        form = client.post(
            "/api/workspaces", data={"path": str(tmp_path)}, headers={"X-CSRFToken": token}
        )
        assert form.status_code == 415
        good = client.post(
            "/api/workspaces", json={"path": str(tmp_path)}, headers={"X-CSRFToken": token}
        )
        assert good.status_code == 201, good.text

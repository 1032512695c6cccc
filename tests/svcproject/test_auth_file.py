"""auth.json: 0600, CSPRNG hex tokens, stable across restarts, replaced by rotate_tokens."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx

from harness.browser_login import logged_in
from harness.daemon import Daemon, manage, migrated_home


def read_auth(home: Path) -> dict:
    return json.loads((home / "auth.json").read_text())


def test_auth_json_is_private_and_holds_two_distinct_64_hex_tokens(tmp_path: Path) -> None:
    home = migrated_home(tmp_path / "home")
    manage(home, "check")
    auth = read_auth(home)
    assert stat.S_IMODE((home / "auth.json").stat().st_mode) == 0o600
    for name in ("owner_token", "mcp_token"):
        assert len(auth[name]) == 64 and int(auth[name], 16) >= 0
    assert auth["owner_token"] != auth["mcp_token"]


def test_tokens_are_stable_across_restarts(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    before = read_auth(fresh_daemon.home)
    fresh_daemon.restart()
    assert read_auth(fresh_daemon.home) == before
    response = httpx.get(f"{fresh_daemon.url}/api/sessions", headers=fresh_daemon.owner_headers())
    assert response.status_code == 200


def test_rotate_tokens_changes_both_and_the_old_ones_stop_working(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    old = read_auth(fresh_daemon.home)
    result = fresh_daemon.manage("rotate_tokens")
    assert old["owner_token"] not in result.stdout
    new = read_auth(fresh_daemon.home)
    assert new["owner_token"] != old["owner_token"] and new["mcp_token"] != old["mcp_token"]
    assert stat.S_IMODE((fresh_daemon.home / "auth.json").stat().st_mode) == 0o600

    def api(token: str) -> int:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.get(f"{fresh_daemon.url}/api/sessions", headers=headers).status_code

    def mcp(token: str) -> int:
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        return httpx.post(f"{fresh_daemon.url}/mcp", json=body, headers=headers).status_code

    # The running daemon notices the rotation without a restart.
    assert api(old["owner_token"]) == 401
    assert api(new["owner_token"]) == 200
    assert mcp(old["mcp_token"]) == 401
    assert mcp(new["mcp_token"]) == 200


def test_rotation_also_ends_browser_logins_and_preview_cookies(fresh_daemon: Daemon) -> None:
    from urllib.parse import urlsplit

    from harness.daemon import free_port

    fresh_daemon.start()
    url = fresh_daemon.url
    made = httpx.post(
        f"{url}/api/previews", json={"port": free_port()}, headers=fresh_daemon.owner_headers()
    ).json()
    origin = {"Host": f"{made['slug']}.localhost:{fresh_daemon.port}"}
    with logged_in(fresh_daemon) as browser:
        entry = browser.get(f"/preview/u/{made['slug']}/", headers={"Accept": "text/html"})
        grant = urlsplit(entry.headers["location"])
        redeemed = httpx.get(f"{url}{grant.path}?{grant.query}", headers=origin)
        preview_cookie = {"Cookie": f"svc_preview={redeemed.cookies['svc_preview']}"}
        # Before: admin opens, and the preview cookie gets through to the (absent) dev server.
        assert browser.get("/admin/").status_code == 200
        assert httpx.get(f"{url}/", headers={**origin, **preview_cookie}).status_code == 502
        fresh_daemon.manage("rotate_tokens")
        # The old dashboard host and its session are gone: neither opens anything any more.
        assert browser.get("/admin/").status_code == 401
        assert browser.get("/api/sessions").status_code == 401
        refused = httpx.get(f"{url}/", headers={**origin, **preview_cookie})
        assert refused.status_code in (401, 403)

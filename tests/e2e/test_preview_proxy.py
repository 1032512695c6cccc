"""Live previews through a real svc: the owner's entry and origin, the share, the proxy's rules.

Requests for a preview origin are sent to 127.0.0.1 with `Host: {slug}.localhost:{port}`, which is
exactly what a browser resolving *.localhost to loopback sends.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import websockets

from harness.browser_login import logged_in
from harness.daemon import Daemon, free_port
from harness.upstream import Upstream


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


@pytest.fixture(scope="module")
def preview(daemon: Daemon, upstream: Upstream) -> dict:
    body = {"port": upstream.port, "title": "Fixture site"}
    response = httpx.post(f"{daemon.url}/api/previews", json=body, headers=daemon.owner_headers())
    assert response.status_code in (200, 201), response.text
    return response.json()


def origin_host(daemon: Daemon, slug: str) -> str:
    return f"{slug}.localhost:{daemon.port}"


def origin_client(daemon: Daemon, slug: str, cookie: str | None = None) -> httpx.Client:
    cookies = {"Cookie": f"svc_preview={cookie}"} if cookie else {}
    return httpx.Client(base_url=daemon.url, headers={"Host": origin_host(daemon, slug), **cookies})


def grant_cookie(daemon: Daemon, slug: str, path: str = "/") -> str:
    """Walk the browser flow: /login session → /preview/u/ → grant → svc_preview cookie."""
    with logged_in(daemon) as browser:
        entry = browser.get(f"/preview/u/{slug}{path}", headers={"Accept": "text/html"})
    assert entry.status_code == 303
    location = urlsplit(entry.headers["location"])
    assert location.netloc == origin_host(daemon, slug)
    with origin_client(daemon, slug) as client:
        redeemed = client.get(f"{location.path}?{location.query}")
    assert redeemed.status_code == 303
    return redeemed.cookies["svc_preview"]


def test_publishing_the_same_port_reuses_the_preview_with_a_fresh_share(
    daemon: Daemon, upstream: Upstream, preview: dict
) -> None:
    again = httpx.post(
        f"{daemon.url}/api/previews", json={"port": upstream.port}, headers=daemon.owner_headers()
    )
    assert again.status_code == 200
    body = again.json()
    assert body["slug"] == preview["slug"]
    assert body["owner_url"].endswith(f"/preview/u/{preview['slug']}/")
    share_slug = body["share_url"].rstrip("/").rsplit("/", 1)[1]
    assert len(share_slug) == 32 and preview["slug"] not in share_slug
    assert body["share_expires_at"]
    listed = httpx.get(f"{daemon.url}/api/previews", headers=daemon.owner_headers()).json()
    assert preview["slug"] in [p["slug"] for p in listed]


@pytest.mark.parametrize("port", [22, 5432, 6379, 27017, "own"])
def test_deny_listed_ports_and_svcs_own_port_are_refused(daemon: Daemon, port) -> None:
    port = daemon.port if port == "own" else port
    response = httpx.post(
        f"{daemon.url}/api/previews", json={"port": port}, headers=daemon.owner_headers()
    )
    assert response.status_code == 400
    assert "port" in response.json()["error"]["message"]


def test_the_owner_entry_needs_the_owner_token(daemon: Daemon, preview: dict) -> None:
    path = f"{daemon.url}/preview/u/{preview['slug']}/"
    as_browser = httpx.get(path, headers={"Accept": "text/html"})
    assert as_browser.status_code == 401
    assert "Log in to svc" in as_browser.text
    mcp = httpx.get(path, headers={"Authorization": f"Bearer {daemon.mcp_token}"})
    assert mcp.status_code == 401 and mcp.json()["error"]["code"] == "login"


def test_a_browser_is_sent_to_the_preview_origin_through_a_one_time_grant(
    daemon: Daemon, preview: dict
) -> None:
    slug = preview["slug"]
    entry = httpx.get(f"{daemon.url}/preview/u/{slug}/index.html?x=1&token={daemon.owner_token}")
    location = urlsplit(entry.headers["location"])
    assert location.netloc == origin_host(daemon, slug)
    assert parse_qs(location.query)["next"] == ["/index.html?x=1"]
    with origin_client(daemon, slug) as client:
        first = client.get(f"{location.path}?{location.query}")
        assert first.status_code == 303 and first.headers["location"] == "/index.html?x=1"
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Domain" not in cookie
        replay = client.get(f"{location.path}?{location.query}")
        assert replay.status_code == 403
    with origin_client(daemon, slug, first.cookies["svc_preview"]) as client:
        page = client.get("/index.html")
        assert page.status_code == 200 and "Fixture site" in page.text


def test_the_preview_origin_refuses_anyone_without_a_grant(daemon: Daemon, preview: dict) -> None:
    with origin_client(daemon, preview["slug"], cookie="forged") as client:
        assert client.get("/index.html").status_code == 401
    other = grant_cookie(daemon, preview["slug"])
    with origin_client(daemon, "someone-else-abc", cookie=other) as client:
        assert client.get("/").status_code in (401, 404)


def test_every_method_and_body_is_forwarded_without_the_owners_credentials(
    daemon: Daemon, upstream: Upstream, preview: dict
) -> None:
    cookie = grant_cookie(daemon, preview["slug"])
    body = b"x" * (3 * 1024 * 1024)
    with origin_client(daemon, preview["slug"]) as client:
        client.headers["Cookie"] = f"svc_preview={cookie}; app_session=kept; svc_token=owner"
        client.headers["Authorization"] = f"Bearer {daemon.owner_token}"
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            seen = client.request(method, "/echo?q=1", content=body).json()
            assert seen["method"] == method and seen["path"] == "/echo?q=1"
            assert seen["body_size"] == len(body)
            assert "authorization" not in seen["headers"]
            assert seen["headers"]["cookie"] == "app_session=kept"
            assert daemon.owner_token not in str(seen)


def test_the_path_entry_with_a_bearer_header_proxies_in_place_sandboxed(
    daemon: Daemon, preview: dict
) -> None:
    headers = {**daemon.owner_headers(), "Cookie": f"svc_token={daemon.owner_token}; other=1"}
    response = httpx.get(f"{daemon.url}/preview/u/{preview['slug']}/echo", headers=headers)
    assert response.status_code == 200
    seen = response.json()
    assert "authorization" not in seen["headers"] and "cookie" not in seen["headers"]
    assert "sandbox" in response.headers["content-security-policy"]
    assert "set-cookie" not in response.headers  # an upstream never sets cookies on svc's origin


def test_redirects_are_handed_to_the_browser_never_followed(
    daemon: Daemon, upstream: Upstream, preview: dict
) -> None:
    with origin_client(daemon, preview["slug"], grant_cookie(daemon, preview["slug"])) as client:
        before = len(upstream.requests)
        away = client.get("/redirect-away")
        assert away.status_code == 302
        assert away.headers["location"] == "http://example.invalid/elsewhere"
        assert len(upstream.requests) == before + 1
        own = client.get("/redirect-self")
        expected = f"http://{origin_host(daemon, preview['slug'])}/echo?from=redirect"
        assert own.headers["location"] == expected


def test_response_bodies_stream_through(daemon: Daemon, upstream: Upstream, preview: dict) -> None:
    upstream.release.clear()
    with (
        origin_client(daemon, preview["slug"], grant_cookie(daemon, preview["slug"])) as client,
        client.stream("GET", "/stream") as response,
    ):
        chunks = response.iter_raw()
        assert next(chunks).startswith(b"first")  # arrives while the upstream still holds back
        upstream.release.set()
        assert b"second" in b"".join(chunks)


def test_nothing_listening_gives_a_clear_502_that_does_not_name_the_target(
    daemon: Daemon,
) -> None:
    port = free_port()
    made = httpx.post(
        f"{daemon.url}/api/previews", json={"port": port}, headers=daemon.owner_headers()
    ).json()
    cookie = grant_cookie(daemon, made["slug"])
    with origin_client(daemon, made["slug"], cookie) as client:
        page = client.get("/", headers={"Accept": "text/html"})
    assert page.status_code == 502
    assert "Nothing is listening" in page.text
    assert str(port) not in page.text and "127.0.0.1" not in page.text


def test_the_share_serves_reads_to_anyone_and_nothing_else(daemon: Daemon, preview: dict) -> None:
    share = httpx.post(
        f"{daemon.url}/api/previews",
        json={"port": preview["port"]},
        headers=daemon.owner_headers(),
    ).json()["share_url"]
    page = httpx.get(share + "index.html")
    assert page.status_code == 200 and "Fixture site" in page.text
    assert page.headers["referrer-policy"] == "same-origin"  # never leaves svc's origin
    assert httpx.head(share + "index.html").status_code == 200
    echoed = httpx.get(share + "echo")
    assert "set-cookie" not in echoed.headers
    assert httpx.post(share + "echo", content=b"x").status_code == 405
    assert httpx.delete(share + "echo").status_code == 405


def test_the_share_refuses_websocket_upgrades(daemon: Daemon, preview: dict) -> None:
    share = httpx.post(
        f"{daemon.url}/api/previews", json={"port": preview["port"]}, headers=daemon.owner_headers()
    ).json()["share_url"]

    async def attempt() -> None:
        async with websockets.connect(share.replace("http://", "ws://")):
            pass

    with pytest.raises(websockets.InvalidStatus) as refused:
        asyncio.run(attempt())
    assert refused.value.response.status_code == 403


def test_the_owner_slug_never_opens_a_share(daemon: Daemon, preview: dict) -> None:
    assert httpx.get(f"{daemon.url}/preview/s/{preview['slug']}/").status_code == 404


def test_deleting_a_preview_closes_both_doors(daemon: Daemon, upstream: Upstream) -> None:
    made = httpx.post(
        f"{daemon.url}/api/previews",
        json={"port": upstream.port, "workspace": "/tmp"},
        headers=daemon.owner_headers(),
    ).json()
    cookie = grant_cookie(daemon, made["slug"])
    deleted = httpx.delete(
        f"{daemon.url}/api/previews/{made['slug']}", headers=daemon.owner_headers()
    )
    assert deleted.status_code == 204
    with origin_client(daemon, made["slug"], cookie) as client:
        assert client.get("/").status_code == 404
    assert httpx.get(made["share_url"]).status_code == 404


def test_the_proxy_connects_to_loopback_only(daemon: Daemon, preview: dict) -> None:
    """A Host naming another machine is never a preview origin (it reaches shares only), and the
    upstream address is always the loopback one."""
    path = f"/preview/u/{preview['slug']}/echo"
    with httpx.Client(base_url=daemon.url, headers={"Host": "evil.example:80"}) as client:
        assert client.get(path, headers=daemon.owner_headers()).status_code == 403
    seen = httpx.get(daemon.url + path, headers=daemon.owner_headers()).json()
    assert seen["headers"]["host"] == f"localhost:{preview['port']}"


@pytest.fixture(scope="module")
def ws_upstream() -> Iterator[int]:
    """An echo WebSocket server speaking subprotocol `echo-v1`."""
    from websockets.sync.server import serve

    def echo(conn) -> None:
        for message in conn:
            conn.send(message)

    with serve(echo, "127.0.0.1", 0, subprotocols=["echo-v1"]) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server.socket.getsockname()[1]
        server.shutdown()


def ws_connect(daemon: Daemon, slug: str, cookie: str, origin: str | None = None):
    host = origin_host(daemon, slug)
    return websockets.connect(
        f"ws://{host}/socket?x=1",
        host="127.0.0.1",
        port=daemon.port,
        origin=origin or f"http://{host}",
        additional_headers={"Cookie": f"svc_preview={cookie}"},
        subprotocols=["echo-v1"],
        proxy=None,
    )


def test_websockets_are_proxied_on_the_preview_origin(daemon: Daemon, ws_upstream: int) -> None:
    made = httpx.post(
        f"{daemon.url}/api/previews", json={"port": ws_upstream}, headers=daemon.owner_headers()
    ).json()
    cookie = grant_cookie(daemon, made["slug"])

    async def roundtrip() -> tuple[str | None, object, object]:
        async with ws_connect(daemon, made["slug"], cookie) as ws:
            await ws.send("hello")
            text = await ws.recv()
            await ws.send(b"\x00\x01binary")
            return ws.subprotocol, text, await ws.recv()

    assert asyncio.run(roundtrip()) == ("echo-v1", "hello", b"\x00\x01binary")

    async def refused(**kwargs) -> int:
        try:
            async with ws_connect(daemon, made["slug"], **kwargs):
                return 101
        except websockets.InvalidStatus as exc:
            return exc.response.status_code

    assert asyncio.run(refused(cookie="forged")) == 403
    assert asyncio.run(refused(cookie=cookie, origin="http://evil.example")) == 403


def test_other_sites_cannot_open_the_owner_entry(daemon: Daemon, preview: dict) -> None:
    """Only the owner's own navigation mints grants: Sec-Fetch-Site tells a request made by
    another page (a preview's script, another site) apart from it."""
    path = f"/preview/u/{preview['slug']}/"
    with logged_in(daemon) as browser:
        for site in ("same-site", "cross-site"):
            refused = browser.get(path, headers={"Sec-Fetch-Site": site})
            assert refused.status_code == 403
        for site in ("same-origin", "none"):
            assert browser.get(path, headers={"Sec-Fetch-Site": site}).status_code == 303


def test_a_browser_that_goes_away_cancels_the_upstream_request(
    daemon: Daemon, upstream: Upstream, preview: dict
) -> None:
    upstream.hold_closed.clear()
    with (
        origin_client(daemon, preview["slug"], grant_cookie(daemon, preview["slug"])) as client,
        client.stream("GET", "/hold") as response,
    ):
        assert next(response.iter_raw()).startswith(b"hello")
    assert upstream.hold_closed.wait(5)


def test_a_dev_server_listening_on_ipv6_loopback_only_is_reached(daemon: Daemon) -> None:
    with Upstream(host="::1") as v6:
        made = httpx.post(
            f"{daemon.url}/api/previews", json={"port": v6.port}, headers=daemon.owner_headers()
        ).json()
        with origin_client(daemon, made["slug"], grant_cookie(daemon, made["slug"])) as client:
            assert client.get("/echo").json()["method"] == "GET"


def test_bearer_clients_reach_preview_websockets_on_the_owner_path(
    daemon: Daemon, ws_upstream: int
) -> None:
    made = httpx.post(
        f"{daemon.url}/api/previews", json={"port": ws_upstream}, headers=daemon.owner_headers()
    ).json()
    url = f"{daemon.ws_url}/preview/u/{made['slug']}/socket"

    async def echo(headers: dict[str, str], origin: str | None = None) -> object:
        try:
            async with websockets.connect(
                url,
                additional_headers=headers,
                origin=origin,
                proxy=None,
                subprotocols=["echo-v1"],
            ) as ws:
                await ws.send("ping")
                return await ws.recv()
        except websockets.InvalidStatus as exc:
            return exc.response.status_code

    assert asyncio.run(echo(daemon.owner_headers())) == "ping"
    assert asyncio.run(echo(daemon.owner_headers(), origin="http://x.localhost:1")) == 403
    assert asyncio.run(echo({})) == 403


def test_an_encoded_slash_after_the_slug_cannot_name_another_authority(
    daemon: Daemon, preview: dict, ws_upstream: int
) -> None:
    """`slug%2F@127.0.0.1:OTHER/x` decodes like a path under the preview but, spliced into the
    upstream URL, would make `127.0.0.1:OTHER` its authority."""
    sneaky = f"/preview/u/{preview['slug']}%2F@127.0.0.1:{ws_upstream}/x"

    async def attempt() -> object:
        try:
            async with websockets.connect(
                daemon.ws_url + sneaky, additional_headers=daemon.owner_headers(), proxy=None
            ) as ws:
                await ws.send("who are you")
                return await asyncio.wait_for(ws.recv(), 5)
        except websockets.InvalidStatus as exc:
            return exc.response.status_code
        except websockets.ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd else None

    assert asyncio.run(attempt()) in (403, 404, 4403, 4404)
    owner = httpx.get(daemon.url + sneaky, headers=daemon.owner_headers())
    fresh = httpx.post(
        f"{daemon.url}/api/previews",
        json={"port": preview["port"], "title": "Fixture site"},
        headers=daemon.owner_headers(),
    ).json()
    share = fresh["share_url"].rstrip("/").rsplit("/", 1)[1]
    assert httpx.get(f"{daemon.url}/preview/s/{share}/").status_code == 200
    sneaky_share = httpx.get(f"{daemon.url}/preview/s/{share}%2Fx")
    assert (owner.status_code, sneaky_share.status_code) == (404, 404)

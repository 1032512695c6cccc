"""The LAN listener's refusals (docs/remote.md "A phone on the same network"): it is the remote
listener on another socket, never the main port — what the remote listener never serves is 404
there and no token opens anything; a paired device cannot turn it on or off; plain HTTP to its
TLS port gets no answer; turned off it closes at once, with the connections it had; and it is
bound only while turned on (from the API or settings.json by hand, without a restart).

Requests go to this machine's own network address (the default route's interface, found with
`ip`) and verify TLS against the certificate svc made, pinned: it must name that address."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets

from harness.daemon import Daemon, free_port, migrated_home
from tests.e2e.test_remote_lan import default_route_address
from tests.e2e.test_remote_tunnel import Remote

HEADER_TIMEOUT_S = 3
LAN_PORT = free_port()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # A LAN port of its own (not the remote listener's number, the default): its requests are
    # the remote listener's because of the socket, not because the numbers match.
    lan = {"port": LAN_PORT}
    settings = {"remote": {"header_timeout_s": HEADER_TIMEOUT_S, "lan": lan}}
    home = migrated_home(tmp_path_factory.mktemp("svc-lan-limits") / "home", settings)
    server = Daemon(home).start()
    yield server
    server.stop()


def turn(daemon: Daemon, enabled: bool) -> dict:
    answer = httpx.put(
        f"{daemon.url}/api/remote/lan",
        json={"enabled": enabled},
        headers=daemon.owner_headers(),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["lan"]


def pinned(daemon: Daemon) -> ssl.SSLContext:
    """Trusts svc's LAN certificate and nothing else; checks that it names the address."""
    return ssl.create_default_context(cadata=(daemon.home / "lan-tls" / "cert.pem").read_text())


@pytest.fixture
def lan(daemon: Daemon) -> Iterator[dict]:
    state = turn(daemon, True)
    assert state["status"] == "on" and state["address"] == default_route_address(), state
    assert state["port"] == LAN_PORT != daemon.auth()["remote_port"], state
    yield state
    turn(daemon, False)


def lan_client(daemon: Daemon, lan: dict) -> httpx.Client:
    return httpx.Client(base_url=lan["url"].rstrip("/"), verify=pinned(daemon), timeout=10)


REFUSED = [
    ("POST", "/svc/local-api/chat/v1/chat/completions"),
    ("POST", "/svc/bridge/chat/v1/chat/completions"),
    ("GET", "/svc/local-api/chat/v1/models"),
    ("POST", "/mcp"),
    ("GET", "/admin/"),
    ("GET", "/login"),
    ("GET", "/logout"),
]


def test_it_serves_nothing_the_remote_listener_would_not_and_takes_no_token(
    daemon: Daemon, lan: dict
) -> None:
    token = {"Authorization": f"Bearer {daemon.owner_token}"}
    body = {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
    with lan_client(daemon, lan) as client:
        for method, path in REFUSED:
            for host in (None, f"127.0.0.1:{daemon.port}", "localhost"):
                headers = {**token, **({"Host": host} if host else {})}
                said = client.request(
                    method,
                    path,
                    headers=headers,
                    params={"token": daemon.owner_token},
                    json=body if method == "POST" else None,
                )
                assert said.status_code == 404, (method, path, host, said.text)
        page = client.get("/", headers=token)
        assert page.status_code == 200 and "Pair this browser" in page.text
        assert client.get("/api/sessions", headers=token).status_code == 401
        assert client.get("/api/sessions", params={"token": daemon.owner_token}).status_code == 401
        put = client.put("/api/remote/lan", json={"enabled": False}, headers=token)
        assert put.status_code == 401, put.text  # refused on its headers: not paired
    # The same token opens the main port: the refusals above are the LAN socket's.
    assert httpx.get(f"{daemon.url}/api/sessions", headers=token).status_code == 200

    async def closes() -> int | None:
        url = f"wss://{lan['address']}:{lan['port']}/ws/sessions?token={daemon.owner_token}"
        async with websockets.connect(url, ssl=pinned(daemon), additional_headers=token) as ws:
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 5)
            return ws.close_code

    assert asyncio.run(closes()) == 4401


def test_a_paired_device_cannot_turn_it_on_or_off(daemon: Daemon, lan: dict) -> None:
    with lan_client(daemon, lan) as client:
        paired = Remote(daemon, lan["port"]).pair(client)
        cookie = next(c for c in client.cookies.jar if c.name == "svc_remote")
        assert cookie.secure, "the device cookie is Secure over the LAN listener's TLS"
        key = {"X-Svc-Page-Key": paired["page_key"], "Origin": lan["url"].rstrip("/")}
        for enabled in (False, True):
            said = client.put("/api/remote/lan", json={"enabled": enabled}, headers=key)
            assert said.status_code == 403, said.text
            assert said.json()["error"]["code"] == "main_port_only"
        lan_off = {"remote": {"lan": {"enabled": False}}}
        assert client.patch("/api/settings", json=lan_off, headers=key).status_code == 403
        seen = client.get("/api/remote", headers=key)  # reading where svc listens is harmless
        assert seen.status_code == 200 and seen.json()["lan"]["status"] == "on", seen.text
    assert httpx.get(lan["url"], verify=pinned(daemon)).status_code == 200  # still on


def test_without_a_tunnel_an_invite_points_at_the_lan_listener(daemon: Daemon, lan: dict) -> None:
    made = httpx.post(f"{daemon.url}/api/pairings/invites", headers=daemon.owner_headers())
    assert made.status_code == 201, made.text
    invite = made.json()["invite"]
    assert made.json()["url"] == f"{lan['url']}pair#invite={invite}&cert={lan['fingerprint']}"
    with lan_client(daemon, lan) as client:
        started = client.post("/pair/start", headers={"X-Svc-Pair-Invite": invite})
        assert started.status_code == 200, started.text
        status = client.get("/pair/status", params={"pair_id": started.json()["pair_id"]})
        assert status.json() == {"status": "approved"} and client.cookies.get("svc_remote")


def test_plain_http_to_the_tls_port_gets_no_http_answer(daemon: Daemon, lan: dict) -> None:
    with socket.create_connection((lan["address"], lan["port"]), timeout=10) as raw:
        raw.sendall(f"GET / HTTP/1.1\r\nHost: {lan['address']}\r\n\r\n".encode())
        answer = b""
        while chunk := raw.recv(4096):
            answer += chunk
    assert not answer.startswith(b"HTTP/"), answer[:80]
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://{lan['address']}:{lan['port']}/", timeout=10)


def test_the_remote_listeners_header_deadline_holds_through_tls(daemon: Daemon, lan: dict) -> None:
    """A stranger's connection that never handshakes, and one that handshakes and never sends
    a request, are both cut off at `remote.header_timeout_s` (the remote listener's budget)."""
    silent = socket.create_connection((lan["address"], lan["port"]), timeout=15)
    idle = pinned(daemon).wrap_socket(
        socket.create_connection((lan["address"], lan["port"]), timeout=15),
        server_hostname=lan["address"],
    )
    started = time.monotonic()
    with silent, idle:
        for held in (silent, idle):
            with contextlib.suppress(ConnectionResetError):  # cut off with a reset: as closed
                assert held.recv(1) == b""
    took = time.monotonic() - started
    # Cut off (recv answered rather than timing out), and not before the deadline.
    assert took > HEADER_TIMEOUT_S - 1, took


def test_off_closes_it_and_its_connections_at_once_and_on_is_the_same_again(
    daemon: Daemon, lan: dict
) -> None:
    """A paired phone's open WebSocket (no header deadline applies to it) ends with the
    listener: no connection it accepted outlives it."""
    with lan_client(daemon, lan) as client:
        key = Remote(daemon, lan["port"]).pair(client)["page_key"]
        cookie = client.cookies["svc_remote"]

    async def held_open_until_off() -> float:
        async with websockets.connect(
            f"wss://{lan['address']}:{lan['port']}/ws/sessions",
            ssl=pinned(daemon),
            subprotocols=[websockets.Subprotocol(f"svc.page.{key}")],
            additional_headers={"Cookie": f"svc_remote={cookie}"},
            origin=websockets.Origin(lan["url"].rstrip("/")),
            open_timeout=10,
        ) as ws:
            assert isinstance(json.loads(await asyncio.wait_for(ws.recv(), 10)), list)
            await asyncio.to_thread(turn, daemon, False)
            started = time.monotonic()
            with pytest.raises(websockets.ConnectionClosed):
                while True:
                    await asyncio.wait_for(ws.recv(), 10)
            return time.monotonic() - started

    assert asyncio.run(held_open_until_off()) < 2
    with pytest.raises(httpx.ConnectError):
        httpx.get(lan["url"], verify=pinned(daemon), timeout=5)
    written = json.loads((daemon.home / "settings.json").read_text())
    assert written["remote"]["lan"]["enabled"] is False
    again = turn(daemon, True)
    assert (again["port"], again["fingerprint"]) == (lan["port"], lan["fingerprint"])
    folder = daemon.home / "lan-tls"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "key.pem").stat().st_mode & 0o777 == 0o600


def test_it_follows_settings_json_edited_by_hand(daemon: Daemon) -> None:
    path: Path = daemon.home / "settings.json"

    def edit(enabled: bool, port: int = LAN_PORT) -> None:
        raw = json.loads(path.read_text())
        raw.setdefault("remote", {})["lan"] = {"enabled": enabled, "port": port}
        path.write_text(json.dumps(raw))

    def state_becomes(status: str) -> dict:
        deadline = time.monotonic() + 15
        while True:
            got = httpx.get(f"{daemon.url}/api/remote", headers=daemon.owner_headers()).json()
            if got["lan"]["status"] == status or time.monotonic() > deadline:
                return got["lan"]
            time.sleep(0.2)

    edit(True)
    on = state_becomes("on")
    assert on["status"] == "on", on
    assert httpx.get(on["url"], verify=pinned(daemon)).status_code == 200
    edit(False)
    assert state_becomes("off")["status"] == "off"
    with pytest.raises(httpx.ConnectError):
        httpx.get(on["url"], verify=pinned(daemon), timeout=5)
    # The main port's number is never the LAN socket's: requests there would be the remote
    # listener's.
    edit(True, daemon.port)
    refused = state_becomes("error")
    assert refused["status"] == "error" and "main port" in refused["detail"], refused
    edit(False)
    assert state_becomes("off")["status"] == "off"

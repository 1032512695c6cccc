"""Remote access through a real SSH reverse tunnel (contract §13): svc forwards its remote
listener to a test-run SSH server, and these tests reach svc only through the port that server
opened — as a phone would through a VPS. What must never answer there, what needs pairing, and
how pairing, revoke and token rotation behave."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import httpx
import pytest
import websockets

from harness.daemon import Daemon, free_port, migrated_home
from harness.fakes.bridge_setup import bridge_settings
from harness.fakes.fake_provider import FakeProvider
from harness.ssh import SSHServer
from harness.termclient import hosting_settings, shell_env

PUBLIC_HOST = "tunnel.example.test"


class Remote:
    """The tunnel's far end: requests go to the SSH server's forwarded port only."""

    def __init__(self, daemon: Daemon, port: int) -> None:
        self.daemon, self.port = daemon, port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10, **kwargs)  # type: ignore[arg-type]

    def pair(self, client: httpx.Client) -> dict:
        """The whole pairing, approved through the owner's API on the main port; the client keeps
        the cookie. Returns the device and the dashboard's page key."""
        started = client.post("/pair/start").json()
        approved = httpx.post(
            f"{self.daemon.url}/api/pairings/approve",
            json={"code": started["code"]},
            headers=self.daemon.owner_headers(),
        )
        assert approved.status_code == 200, approved.text
        status = client.get("/pair/status", params={"pair_id": started["pair_id"]})
        assert status.json() == {"status": "approved"} and client.cookies.get("svc_remote")
        page = client.get("/", headers={"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"})
        key = page.text.split('name="svc-page-key" content="', 1)[1].split('"', 1)[0]
        devices = httpx.get(f"{self.daemon.url}/api/pairings", headers=self.daemon.owner_headers())
        return {"page_key": key, "device": devices.json()[-1]}


def wait_online(daemon: Daemon, name: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    row: dict = {}
    while time.monotonic() < deadline:
        rows = httpx.get(f"{daemon.url}/api/tunnels", headers=daemon.owner_headers()).json()
        row = next(r for r in rows if r["name"] == name)
        if row["status"] == "online":
            return row
        time.sleep(0.1)
    raise AssertionError(f"tunnel {name} not online: {row}")


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    provider = FakeProvider().start()
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def ssh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    server = SSHServer(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def remote(
    tmp_path_factory: pytest.TempPathFactory, ssh: SSHServer, fake: FakeProvider
) -> Iterator[Remote]:
    tmp = tmp_path_factory.mktemp("svc-remote")
    forwarded = free_port()
    settings = {
        **hosting_settings(),
        "profiles": {**hosting_settings()["profiles"], **bridge_settings(fake)["profiles"]},
        "local_agent_api": {"enabled": True, "agents": ["fake"]},
        "tunnels": {
            "vps": ssh.tunnel(forwarded, public_url=f"http://{PUBLIC_HOST}:{{remote_port}}")
        },
    }
    daemon = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    row = wait_online(daemon, "vps")
    assert row["public_url"] == f"http://{PUBLIC_HOST}:{forwarded}", row
    yield Remote(daemon, forwarded)
    daemon.stop()


# --- what never answers through a tunnel --------------------------------------------------------

REFUSED = [
    ("POST", "/svc/local-api/chat/v1/chat/completions"),
    ("POST", "/svc/local-agent/fake/chat/v1/chat/completions"),
    ("POST", "/svc/bridge/chat/v1/chat/completions"),
    ("GET", "/svc/local-api/chat/v1/models"),
    ("POST", "/mcp"),
    ("GET", "/admin/"),
    ("GET", "/login"),
]


def test_bridge_agent_api_mcp_admin_and_login_are_404_whatever_the_request_says(
    remote: Remote, fake: FakeProvider
) -> None:
    daemon = remote.daemon
    before = len(fake.requests)
    hosts = [None, "localhost", "127.0.0.1", PUBLIC_HOST, f"127.0.0.1:{daemon.port}"]
    forwarded = [{}, {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}]
    credentials = [
        {"Authorization": f"Bearer {daemon.owner_token}"},
        {"Authorization": f"Bearer {daemon.mcp_token}"},
    ]
    body = {"model": "client-model", "messages": [{"role": "user", "content": "hi"}]}
    answered = []
    with remote.client() as client:
        for method, path in REFUSED:
            for host in hosts:
                for extra in forwarded:
                    for credential in credentials:
                        headers = {**extra, **credential, **({"Host": host} if host else {})}
                        query = {"token": daemon.owner_token} if path == "/login" else {}
                        response = client.request(
                            method,
                            path,
                            headers=headers,
                            params=query,
                            json=body if method == "POST" else None,
                        )
                        answered.append((path, host, bool(extra), response.status_code))
    assert {status for *_, status in answered} == {404}, [a for a in answered if a[-1] != 404]
    assert len(answered) == len(REFUSED) * len(hosts) * 4
    assert len(fake.requests) == before, "a request reached the model provider"
    sessions = httpx.get(f"{daemon.url}/api/sessions", headers=daemon.owner_headers()).json()
    assert sessions == [], "an agent session was started"


def test_unpaired_browsers_get_the_pairing_page_and_nothing_else(remote: Remote) -> None:
    daemon = remote.daemon
    token = {"Authorization": f"Bearer {daemon.owner_token}"}
    with remote.client() as client:
        page = client.get("/", headers=token)
        assert page.status_code == 200 and "Pair this browser" in page.text
        assert client.get("/api/sessions", headers=token).status_code == 401
        assert client.get("/api/sessions", params={"token": daemon.owner_token}).status_code == 401
        assert client.post("/api/sessions", json={}, headers=token).status_code == 401
        assert client.get("/md-preview/x").status_code == 401
        assert client.get("/preview/u/x/").status_code == 401

    async def closes() -> list[int | None]:
        codes = []
        for path in ("/ws/sessions", "/ws/tunnels", "/ws/chat", f"/ws?token={daemon.owner_token}"):
            async with websockets.connect(f"ws://127.0.0.1:{remote.port}{path}") as ws:
                with pytest.raises(websockets.ConnectionClosed):
                    await asyncio.wait_for(ws.recv(), 5)
                codes.append(ws.close_code)
        return codes

    assert asyncio.run(closes()) == [4401] * 4


def test_a_paired_browser_uses_the_api_only_with_the_dashboard_pages_key(remote: Remote) -> None:
    with remote.client() as client:
        paired = remote.pair(client)
        key = {"X-Svc-Page-Key": paired["page_key"]}
        assert client.get("/api/sessions").status_code == 403  # the cookie alone is not enough
        assert client.get("/api/sessions", headers=key).status_code == 200
        # A page that is not the dashboard's own top-level load never gets the key.
        fetched = client.get("/", headers={"Sec-Fetch-Dest": "empty", "Sec-Fetch-Mode": "cors"})
        assert fetched.status_code == 403 and paired["page_key"] not in fetched.text
        framed = client.get("/", headers={"Sec-Fetch-Dest": "iframe", "Sec-Fetch-Mode": "navigate"})
        assert framed.status_code == 403
        page = client.get("/", headers={"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"})
        assert page.headers["cross-origin-opener-policy"] == "same-origin"
        assert page.headers["x-frame-options"] == "DENY"
        # Another site's page (or a previewed one) cannot write with it either.
        evil = {**key, "Origin": "https://evil.example"}
        assert (
            client.post("/api/workspaces", json={"path": "/tmp"}, headers=evil).status_code == 403
        )
        # The status call that delivered the cookie does it once: a replay gets none.
    with remote.client() as other:
        assert other.get("/api/sessions", headers=key).status_code == 401


def test_wrong_codes_are_limited_across_surfaces(remote: Remote) -> None:
    daemon = remote.daemon
    with remote.client() as client:
        started = client.post("/pair/start").json()
        wrong = f"{(int(started['code']) + 1) % 10**6:06d}"
        statuses = []
        for _ in range(10):
            answer = httpx.post(
                f"{daemon.url}/api/pairings/approve",
                json={"code": wrong},
                headers=daemon.owner_headers(),
            )
            statuses.append(answer.status_code)
        assert statuses == [403] * 10
        right = httpx.post(
            f"{daemon.url}/api/pairings/approve",
            json={"code": started["code"]},
            headers=daemon.owner_headers(),
        )
        assert right.status_code == 429, right.text  # the 11th within the minute, right or not
        cli = daemon.manage("pair", started["code"], check=False)
        assert cli.returncode != 0 and "429" in cli.stderr + cli.stdout
        assert client.get("/pair/status", params={"pair_id": started["pair_id"]}).json() == {
            "status": "pending"
        }
    # The minute has to pass before anyone may try again: clear it for the other tests.
    daemon.manage(
        "shell",
        "-c",
        "from remote_app.models import WrongPairingCode as W; W.objects.all().delete()",
    )


def _open_socket(remote: Remote, client: httpx.Client, key: str):  # type: ignore[no-untyped-def]
    return websockets.connect(
        f"ws://127.0.0.1:{remote.port}/ws/sessions",
        subprotocols=[websockets.Subprotocol(f"svc.page.{key}")],
        additional_headers={"Cookie": f"svc_remote={client.cookies['svc_remote']}"},
        origin=websockets.Origin(remote.url),
        open_timeout=10,
    )


def test_revoke_and_rotate_tokens_end_the_remote_session_and_its_open_socket(
    remote: Remote,
) -> None:
    daemon = remote.daemon

    async def held_open_until(client: httpx.Client, key: str, end) -> int | None:  # type: ignore[no-untyped-def]
        async with _open_socket(remote, client, key) as ws:
            assert isinstance(json.loads(await asyncio.wait_for(ws.recv(), 10)), list)
            await asyncio.to_thread(end)
            with pytest.raises(websockets.ConnectionClosed):
                while True:
                    await asyncio.wait_for(ws.recv(), 10)
            return ws.close_code

    with remote.client() as client:
        paired = remote.pair(client)
        device = paired["device"]["id"]

        def revoke() -> None:
            gone = httpx.delete(
                f"{daemon.url}/api/pairings/{device}", headers=daemon.owner_headers()
            )
            assert gone.status_code == 204

        assert asyncio.run(held_open_until(client, paired["page_key"], revoke)) == 4401
        key = {"X-Svc-Page-Key": paired["page_key"]}
        assert client.get("/api/sessions", headers=key).status_code == 401
        assert "Pair this browser" in client.get("/").text

    with remote.client() as client:
        paired = remote.pair(client)
        rotate = lambda: daemon.manage("rotate_tokens")  # noqa: E731
        assert asyncio.run(held_open_until(client, paired["page_key"], rotate)) == 4401
        assert (
            client.get("/api/sessions", headers={"X-Svc-Page-Key": paired["page_key"]}).status_code
            == 401
        )


def test_two_browsers_pairing_at_once_get_their_own_codes_and_a_reload_resumes(
    remote: Remote,
) -> None:
    with remote.client() as one, remote.client() as two:
        first, second = one.post("/pair/start").json(), two.post("/pair/start").json()
        assert first["code"] != second["code"] and first["pair_id"] != second["pair_id"]
        assert first["expires_in"] == 60 and len(first["code"]) == 6 and first["code"].isdigit()
        # Status by pair_id is all a reloaded page needs (the page keeps it in sessionStorage).
        assert (
            one.get("/pair/status", params={"pair_id": first["pair_id"]}).json()["status"]
            == "pending"
        )
        assert one.get("/pair/status", params={"pair_id": "nonsense"}).json()["status"] == "expired"


def test_without_fetch_metadata_previews_through_the_tunnel_are_sandboxed(remote: Remote) -> None:
    """A plain-http tunnel: the browser sends no Fetch Metadata, so svc cannot tell a previewed
    page's reads of `/` from the dashboard's own load; previews are then served in an opaque
    origin (no cookie of svc's goes with their requests) — with it, whole."""
    from harness.upstream import Upstream

    daemon = remote.daemon
    with Upstream() as upstream, remote.client() as client:
        made = httpx.post(
            f"{daemon.url}/api/previews",
            json={"port": upstream.port},
            headers=daemon.owner_headers(),
        ).json()
        remote.pair(client)
        share = made["share_url"].split(str(remote.port), 1)[1]
        owner = f"/preview/u/{made['slug']}/"
        secure = {
            "Sec-Fetch-Mode": "navigate",
            "Sec-Fetch-Dest": "document",
            "Sec-Fetch-Site": "none",
        }
        for path in (share, owner):
            plain = client.get(path)
            assert plain.status_code == 200, (path, plain.text[:200])
            assert plain.headers["content-security-policy"].startswith("sandbox "), path
            whole = client.get(path, headers=secure)
            assert "sandbox" not in whole.headers.get("content-security-policy", ""), path

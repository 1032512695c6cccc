"""Every surface × {no token, owner, MCP, wrong} over a live daphne, plus WebSocket Origins."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from harness.browser_login import csrf_token, dashboard_url, localhost_client, logged_in
from harness.daemon import Daemon

TOKENS = ("none", "owner", "mcp", "wrong")
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_ACCEPT = "application/json, text/event-stream"


def token_value(daemon: Daemon, which: str) -> str | None:
    return {
        "none": None,
        "owner": daemon.owner_token,
        "mcp": daemon.mcp_token,
        "wrong": "0" * 64,
    }[which]


def bearer(daemon: Daemon, which: str) -> dict[str, str]:
    token = token_value(daemon, which)
    return {"Authorization": f"Bearer {token}"} if token else {}


@pytest.mark.parametrize("which", TOKENS)
@pytest.mark.parametrize(
    "path", ["/", "/api/sessions", "/api/schema/", "/api/profiles", "/docs/channels.md"]
)
def test_owner_surfaces_open_only_to_the_owner_token(daemon: Daemon, path: str, which: str) -> None:
    response = httpx.get(daemon.url + path, headers=bearer(daemon, which))
    if which == "owner":
        assert response.status_code == 200
    else:
        assert response.status_code == 401
        if path.startswith(("/api/", "/docs/")):
            assert response.json()["error"]["code"] == "not_authenticated"


@pytest.mark.parametrize("which", TOKENS)
def test_the_owner_token_also_works_as_a_query_parameter(daemon: Daemon, which: str) -> None:
    token = token_value(daemon, which) or ""
    response = httpx.get(f"{daemon.url}/api/sessions", params={"token": token})
    assert response.status_code == (200 if which == "owner" else 401)


@pytest.mark.parametrize("which", TOKENS)
def test_admin_needs_the_owner(daemon: Daemon, which: str) -> None:
    response = httpx.get(f"{daemon.url}/admin/", headers=bearer(daemon, which))
    if which == "owner":
        assert response.status_code == 200
        assert "Site administration" in response.text
    else:
        assert response.status_code == 302
        assert response.headers["location"].startswith("/admin/login/")


@pytest.mark.parametrize("which", TOKENS)
def test_mcp_opens_only_to_the_mcp_token(daemon: Daemon, which: str) -> None:
    headers = {**bearer(daemon, which), "Accept": MCP_ACCEPT}
    response = httpx.post(f"{daemon.url}/mcp", json=MCP_LIST, headers=headers)
    if which == "mcp":
        assert response.status_code == 200
        assert "get_session_id" in response.text
    else:
        assert response.status_code == 401
        error = response.json()["error"]
        assert error["code"] == -32001
        assert "auth.json" in error["message"]


@pytest.mark.parametrize("which", TOKENS)
@pytest.mark.parametrize("path", ["/preview/u/nope-1234/", "/md-preview/nope-1234"])
def test_owner_previews_need_the_owner_token(daemon: Daemon, path: str, which: str) -> None:
    response = httpx.get(daemon.url + path, headers=bearer(daemon, which))
    if which == "owner":
        assert response.status_code == 404
    else:
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "login"


def test_login_hands_over_to_the_dashboard_host_with_a_session_id_never_the_token(
    daemon: Daemon,
) -> None:
    with localhost_client(base_url=dashboard_url(daemon)) as client:
        first = client.get(f"{daemon.url}/login", params={"token": daemon.owner_token})
        assert first.status_code == 302 and "set-cookie" not in first.headers
        assert daemon.owner_token not in first.headers["location"]
        second = client.get(first.headers["location"])
        assert second.status_code == 302 and second.headers["location"] == "/"
        cookie = second.headers["set-cookie"]
        assert cookie.startswith("svc_session=") and daemon.owner_token not in cookie
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Domain" not in cookie
        assert client.get("/").status_code == 200
        assert client.get("/admin/").status_code == 200
        assert client.get("/api/sessions").status_code == 200
        # The same session id is no credential anywhere but on the dashboard host.
        replayed = {"Cookie": f"svc_session={client.cookies['svc_session']}"}
        assert httpx.get(f"{daemon.url}/api/sessions", headers=replayed).status_code == 401
        # A grant works once.
        assert client.get(first.headers["location"]).status_code == 401


@pytest.mark.parametrize("which", ["none", "mcp", "wrong"])
def test_login_refuses_anything_but_the_owner_token(daemon: Daemon, which: str) -> None:
    response = httpx.get(f"{daemon.url}/login", params={"token": token_value(daemon, which) or ""})
    assert response.status_code == 401
    assert "set-cookie" not in response.headers


def test_session_auth_needs_csrf_for_writes_but_bearer_does_not(daemon: Daemon, tmp_path) -> None:
    with logged_in(daemon) as client:
        refused = client.post("/api/workspaces", json={"path": str(tmp_path)})
        assert refused.status_code == 403
        assert "CSRF" in refused.json()["error"]["message"]
        token = csrf_token(client)
        origin = {"X-CSRFToken": token, "Origin": dashboard_url(daemon)}
        allowed = client.post("/api/workspaces", json={"path": str(tmp_path)}, headers=origin)
        assert allowed.status_code in (200, 201), allowed.text
    accepted = httpx.post(
        f"{daemon.url}/api/workspaces", json={"path": str(tmp_path)}, headers=daemon.owner_headers()
    )
    assert accepted.status_code == 200  # already registered by the session above


LIST_SOCKETS = ["/ws/sessions", "/ws/channels", "/ws/tunnels", "/ws/agents/runtime"]


async def first_frame_or_close(url: str, **kwargs) -> object:
    async with websockets.connect(url, open_timeout=5, **kwargs) as ws:
        try:
            return json.loads(await asyncio.wait_for(ws.recv(), 5))
        except ConnectionClosed as closed:
            return ("closed", closed.rcvd.code if closed.rcvd else None)


@pytest.mark.parametrize("which", TOKENS)
@pytest.mark.parametrize("path", LIST_SOCKETS)
async def test_websockets_open_only_to_the_owner_token(daemon: Daemon, path: str, which: str):
    token = token_value(daemon, which)
    query = f"?token={token}" if token else ""
    result = await first_frame_or_close(
        daemon.ws_url + path + query, origin=websockets.Origin(daemon.origin)
    )
    if which == "owner":
        assert isinstance(result, list)
    else:
        assert result == ("closed", 4401)


async def test_websocket_token_in_header_or_a_dashboard_session(daemon: Daemon) -> None:
    by_header = await first_frame_or_close(
        f"{daemon.ws_url}/ws/channels",
        additional_headers={"Authorization": f"Bearer {daemon.owner_token}"},
    )
    with logged_in(daemon) as client:
        session = {"Cookie": f"svc_session={client.cookies['svc_session']}"}
    host = f"{daemon.auth()['browser_host']}:{daemon.port}"
    by_session = await first_frame_or_close(
        f"ws://{host}/ws/channels",  # the name as the browser uses it; the socket to loopback
        additional_headers=session,
        origin=websockets.Origin(f"http://{host}"),
        host="127.0.0.1",
        port=daemon.port,
    )
    # The old token cookie and the session id on another host open nothing.
    by_token_cookie = await first_frame_or_close(
        f"{daemon.ws_url}/ws/channels",
        additional_headers={"Cookie": f"svc_token={daemon.owner_token}"},
    )
    elsewhere = await first_frame_or_close(
        f"{daemon.ws_url}/ws/channels", additional_headers=session
    )
    assert isinstance(by_header, list) and isinstance(by_session, list)
    assert by_token_cookie == ("closed", 4401) and elsewhere == ("closed", 4401)


@pytest.mark.parametrize(
    "origin", ["http://localhost:5173", "null", "http://evil.test", "http://127.0.0.1"]
)
async def test_foreign_websocket_origins_are_refused_before_the_handshake(
    daemon: Daemon, origin: str
) -> None:
    url = f"{daemon.ws_url}/ws/sessions?token={daemon.owner_token}"
    with pytest.raises(InvalidStatus) as refused:
        async with websockets.connect(url, origin=websockets.Origin(origin), open_timeout=5):
            pass
    assert refused.value.response.status_code == 403


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_the_daemons_own_origin_is_accepted(daemon: Daemon, host: str) -> None:
    url = f"{daemon.ws_url}/ws/sessions?token={daemon.owner_token}"
    origin = websockets.Origin(f"http://{host}:{daemon.port}")
    assert isinstance(await first_frame_or_close(url, origin=origin), list)


def test_tokens_never_reach_the_logs(daemon: Daemon) -> None:
    httpx.get(f"{daemon.url}/login", params={"token": daemon.owner_token})
    httpx.get(f"{daemon.url}/api/sessions", params={"token": daemon.owner_token})
    httpx.post(
        f"{daemon.url}/mcp",
        json=MCP_LIST,
        headers={"Authorization": f"Bearer {daemon.mcp_token}", "Accept": MCP_ACCEPT},
    )
    # A percent-encoded name is decoded by the server, so it logs in: it must not log the token.
    encoded = httpx.get(f"{daemon.url}/api/sessions?tok%65n={daemon.owner_token}")
    assert encoded.status_code == 200
    # Gemini clients may send their API key in the query string.
    httpx.get(f"{daemon.url}/svc/local-api/none/s/gemini/v1beta/models", params={"key": "gk-42"})
    logs = daemon.log() + (daemon.home / "logs" / "svc.log").read_text()
    assert "gk-42" not in logs
    assert "GET /api/sessions" in logs  # the access log is there, only the tokens are not
    assert daemon.owner_token not in logs
    assert daemon.mcp_token not in logs
    for private in (daemon.home, daemon.home / "logs"):
        assert private.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("which", TOKENS)
async def test_the_terminal_socket_opens_only_to_the_owner(daemon: Daemon, which: str) -> None:
    token = token_value(daemon, which)
    query = f"&token={token}" if token else ""
    url = f"{daemon.ws_url}/ws?session_id=00000000-0000-4000-8000-000000000000{query}"
    result = await first_frame_or_close(url, origin=websockets.Origin(daemon.origin))
    # The owner passes the token check and learns the session does not exist.
    assert result == ("closed", 4404 if which == "owner" else 4401)


@pytest.mark.parametrize("which", TOKENS)
async def test_the_chat_socket_opens_only_to_the_owner(daemon: Daemon, which: str) -> None:
    token = token_value(daemon, which)
    query = f"?token={token}" if token else ""
    url = f"{daemon.ws_url}/ws/chat{query}"
    nobody = "00000000-0000-4000-8000-000000000000"
    async with websockets.connect(url, origin=websockets.Origin(daemon.origin)) as ws:
        if which == "owner":
            await ws.send(json.dumps({"type": "prompt", "session_id": nobody, "text": "x"}))
            answer = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert answer["kind"] == "error" and "no live chat session" in answer["message"]
        else:
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401


@pytest.mark.parametrize("which", TOKENS)
def test_bridge_routes_ignore_tokens_entirely(daemon: Daemon, which: str) -> None:
    # No token is needed or looked at (the loopback gate decides); the answer is the same for all.
    response = httpx.get(
        f"{daemon.url}/svc/local-api/nope/s/openai-chat/v1/models", headers=bearer(daemon, which)
    )
    assert response.status_code == 404
    assert "nope" in response.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/ws/nonexistent", "/md-preview/nope-1234"])
async def test_an_unknown_websocket_path_is_refused_cleanly(daemon: Daemon, path: str) -> None:
    url = f"{daemon.ws_url}{path}?token={daemon.owner_token}"
    with pytest.raises(InvalidStatus) as refused:
        async with websockets.connect(url, origin=websockets.Origin(daemon.origin)):
            pass
    assert refused.value.response.status_code == 403


@pytest.mark.parametrize("bad_type", [[], {"x": 1}, 7, None])
async def test_a_malformed_chat_event_gets_an_error_and_the_socket_stays(
    daemon: Daemon, bad_type: object
) -> None:
    url = f"{daemon.ws_url}/ws/chat?token={daemon.owner_token}"
    async with websockets.connect(url, origin=websockets.Origin(daemon.origin)) as ws:
        await ws.send(json.dumps({"type": bad_type}))
        first = json.loads(await asyncio.wait_for(ws.recv(), 5))
        await ws.send(json.dumps({"type": "prompt", "session_id": ["not", "a", "str"], "text": 1}))
        second = json.loads(await asyncio.wait_for(ws.recv(), 5))
    assert first["kind"] == "error" and "type must be" in first["message"]
    assert second["kind"] == "error"

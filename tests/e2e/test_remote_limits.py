"""What the remote listener lets a paired device and a stranger do (issue 31, findings 2, 4, 5
and 8; contract §13), against a live daemon, reaching the remote socket directly on loopback
(the socket, not a header, makes a request remote: a tunnel only carries bytes to it).

- A paired device uses sessions but cannot change what svc runs or who may reach it.
- A stranger's pairing flood is bounded, and an invite made on the machine always pairs.
- /pair/* and cookies svc did not sign never get a body read.
- /pair/session knows a paired browser.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.daemon import Daemon, migrated_home
from harness.termclient import hosting_settings, shell_env
from tests.e2e.test_remote_tunnel import Remote

DOCUMENT = {"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-remote-limits")
    settings = {**hosting_settings(), "workspaces": [str(tmp)]}
    server = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def remote(daemon: Daemon) -> Remote:
    return Remote(daemon, daemon.auth()["remote_port"])


def raw_exchange(port: int, head: bytes, timeout: float = 10) -> bytes:
    """Send a request's line and headers only (the body is never sent) and read the answer: an
    answer arrives only if svc decided on the headers."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            pass
        return received


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def test_a_paired_device_cannot_change_what_svc_runs_or_who_may_reach_it(
    daemon: Daemon, remote: Remote, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    with remote.client() as client:
        paired = remote.pair(client)
        headers = {"X-Svc-Page-Key": paired["page_key"], "Content-Type": "application/json"}
        command_tunnel = {
            "tunnels": {
                "evil": {
                    "provider": "command",
                    "command": ["sh", "-c", f"id > {marker}"],
                    "url_pattern": "x",
                }
            },
        }
        refused = [
            client.patch("/api/settings", headers=headers, json=command_tunnel),
            client.put("/api/settings", headers=headers, json=command_tunnel),
            client.put(
                "/api/agents/evil",
                headers=headers,
                json={"command": ["sh", "-c", f"id > {marker}"]},
            ),
            client.delete("/api/agents/shell", headers=headers),
            client.post("/api/tunnels/evil/start", headers=headers),
            client.post("/api/pairings/approve", headers=headers, json={"code": "123456"}),
            client.post("/api/pairings/invites", headers=headers),
            client.post("/api/integrations", headers=headers),
        ]
        for answer in refused:
            assert answer.status_code == 403, (answer.request.url, answer.text)
            assert answer.json()["error"]["code"] in ("main_port_only", "forbidden"), answer.text
        settings = json.loads((daemon.home / "settings.json").read_text())
        assert "evil" not in settings.get("tunnels", {}) and "evil" not in settings.get(
            "agents", {}
        )
        assert not marker.exists()

        # Refused on the headers, before a body is read: the body is never sent here.
        head = (
            "PATCH /api/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Cookie: svc_remote={client.cookies['svc_remote']}\r\n"
            f"X-Svc-Page-Key: {paired['page_key']}\r\nContent-Length: 1000000\r\n\r\n"
        ).encode()
        assert _status(raw_exchange(remote.port, head)) == 403

        # What a paired device is for still works: it starts a session and may revoke itself.
        started = client.post(
            "/api/sessions",
            headers=headers,
            json={"agent": "shell", "workspace": str(daemon.home.parent)},
        )
        assert started.status_code == 201, started.text
        code = client.post(f"/api/sessions/{started.json()['id']}/handover", headers=headers)
        assert code.status_code == 201 and len(code.json()["code"]) == 4, code.text
        client.delete(f"/api/sessions/{started.json()['id']}", headers=headers)
        assert client.get("/pair/session").json() == {"paired": True}  # finding 8
        gone = client.delete(f"/api/pairings/{paired['device']['id']}", headers=headers)
        assert gone.status_code == 204
        assert client.get("/pair/session").json() == {"paired": False}

    # The machine itself still may.
    own = httpx.patch(
        f"{daemon.url}/api/settings",
        headers=daemon.owner_headers(),
        json={"skill_auto_install": False},
    )
    assert own.status_code == 200, own.text


@pytest.fixture
def flooded(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon of its own: the flood uses up this minute's pairing starts."""
    server = Daemon(migrated_home(tmp_path / "home")).start()
    yield server
    server.stop()


def test_a_pairing_flood_is_bounded_and_an_invite_always_pairs(flooded: Daemon) -> None:
    daemon, remote = flooded, Remote(flooded, flooded.auth()["remote_port"])
    owner = daemon.owner_headers()
    with remote.client() as stranger:
        answers = [
            stranger.post("/pair/start", headers={"User-Agent": f"flood {i}"}) for i in range(34)
        ]
    started = [a for a in answers if a.status_code == 200]
    limited = [a for a in answers if a.status_code == 429]
    assert len(started) == 30 and len(limited) == 4, [a.status_code for a in answers]
    assert "invite" in limited[0].json()["error"]["message"]
    pending = httpx.get(f"{daemon.url}/api/pairings/pending", headers=owner).json()
    assert len(pending) == 8  # the newest wait; the oldest were dropped
    with remote.client() as first:
        dropped = first.get("/pair/status", params={"pair_id": started[0].json()["pair_id"]})
    assert dropped.json() == {"status": "expired"}

    # The flood goes on (429), yet the owner's phone pairs with an invite made on the machine.
    made = httpx.post(f"{daemon.url}/api/pairings/invites", headers=owner)
    assert made.status_code == 201, made.text
    with remote.client() as phone:
        assert phone.post("/pair/start").status_code == 429
        invited = phone.post("/pair/start", headers={"X-Svc-Pair-Invite": made.json()["invite"]})
        assert invited.status_code == 200, invited.text
        status = phone.get("/pair/status", params={"pair_id": invited.json()["pair_id"]})
        assert status.json() == {"status": "approved"} and phone.cookies.get("svc_remote")
        assert phone.get("/pair/session").json() == {"paired": True}
        dashboard = phone.get("/", headers=DOCUMENT)
        assert 'name="svc-page-key"' in dashboard.text
    with remote.client() as again:  # one use
        reused = again.post("/pair/start", headers={"X-Svc-Pair-Invite": made.json()["invite"]})
        assert reused.status_code == 403 and reused.json()["error"]["code"] == "bad_invite"


def test_pairing_and_unsigned_cookies_never_get_a_body_read(remote: Remote) -> None:
    for head in (
        "POST /pair/start HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4194304\r\n\r\n",
        "POST /pair/start HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: svc_remote=made-up\r\n"
        "X-Svc-Page-Key: x\r\nContent-Type: application/json\r\nContent-Length: 4194304\r\n\r\n",
        "POST /preview/u/anything/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Cookie: svc_remote=made-up.000\r\nContent-Length: 60000000\r\n\r\n",
    ):
        answer = raw_exchange(remote.port, head.encode())
        assert _status(answer) in (401, 413), (head, answer[:200])


def test_pair_session_says_whether_this_browser_is_paired(daemon: Daemon, remote: Remote) -> None:
    """The pairing page, opened from another site's link (no SameSite=Strict cookie on that load),
    asks /pair/session and reloads into the dashboard when the browser is paired."""
    with remote.client() as browser:
        assert browser.get("/pair/session").json() == {"paired": False}
        paired = remote.pair(browser)
        assert browser.get("/pair/session").json() == {"paired": True}
        httpx.delete(
            f"{daemon.url}/api/pairings/{paired['device']['id']}", headers=daemon.owner_headers()
        )
        assert browser.get("/pair/session").json() == {"paired": False}

"""Every permission decision is recorded (contract §17, issue 33 item 4), against a live daemon
with the scripted ACP agent: answered on `/ws/chat` (the dashboard's surface), through
`POST /api/sessions/{id}/permissions`, by nobody in time, by a cancelled turn, and by policy
(nobody to ask); then `GET /api/approvals` and its filters, the refusals, the session's history,
and a paired device deciding through the remote listener."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from harness.daemon import Daemon
from harness.termclient import Chat, start_hosting_daemon, stop_session
from tests.e2e.test_remote_tunnel import Remote

TIMEOUT_S = 6  # SVC_PERMISSION_TIMEOUT: an unanswered request is refused after this long
# (long enough for step 2's six HTTP calls on a loaded machine: at 2 s CI saw it time out)
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(
        tmp_path_factory.mktemp("svc-approvals"), {"SVC_PERMISSION_TIMEOUT": str(TIMEOUT_S)}
    )
    yield server
    server.stop()


def approvals(host: Daemon, **params: str) -> httpx.Response:
    return httpx.get(
        f"{host.url}/api/approvals", params=params, headers=host.owner_headers(), timeout=10
    )


def at(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


async def asked(chat: Chat, sid: str, prompt: str = "permission") -> dict[str, Any]:
    await chat.send(type="prompt", session_id=sid, text=prompt)
    return await chat.next("permission_request", session_id=sid)


async def test_every_decision_is_recorded_with_who_decided_from_where_and_when(
    host: Daemon, tmp_path: Path
) -> None:
    before = approvals(host).json()
    chat = await Chat.connect(host)
    ready = await chat.open(agent="fake", workspace=str(tmp_path))
    sid = ready["session_id"]

    # 1. The dashboard's surface: a /ws/chat client on the main port (the owner).
    request = await asked(chat, sid)
    await chat.send(type="permission", request_id=request["request_id"], option_id="allow")
    by_chat = await chat.next("permission_resolved", session_id=sid)
    await chat.next("turn_end", session_id=sid)
    assert chat.texts().endswith("permission: allow")

    # 2. The API: the waiting request is listed, a wrong answer is refused, the right one taken.
    request = await asked(chat, sid)
    url = f"{host.url}/api/sessions/{sid}/permissions"
    waiting = httpx.get(url, headers=host.owner_headers()).json()
    assert [w["request_id"] for w in waiting] == [request["request_id"]]
    wrong = httpx.post(
        url,
        json={"request_id": request["request_id"], "option_id": "maybe"},
        headers=host.owner_headers(),
    )
    assert wrong.status_code == 400
    assert "option_id must be one of ['allow', 'reject']" in wrong.json()["error"]["message"]
    unknown = httpx.post(
        url, json={"request_id": "feed", "option_id": "allow"}, headers=host.owner_headers()
    )
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    missing = httpx.post(url, json={"option_id": "allow"}, headers=host.owner_headers())
    assert missing.status_code == 400 and "request_id" in missing.json()["error"]["fields"]
    stranger = httpx.post(url, json={"request_id": request["request_id"], "option_id": "allow"})
    assert stranger.status_code == 401  # no credential: refused, and the request still waits
    answered = httpx.post(
        url,
        json={"request_id": request["request_id"], "option_id": "reject"},
        headers=host.owner_headers(),
    )
    assert answered.status_code == 204, answered.text
    by_api = await chat.next("permission_resolved", session_id=sid)
    await chat.next("turn_end", session_id=sid)
    assert chat.texts().endswith("permission: reject")
    assert httpx.get(url, headers=host.owner_headers()).json() == []

    # 3. Nobody answers in time.
    request = await asked(chat, sid)
    by_timeout = await chat.next("permission_resolved", session_id=sid, timeout=TIMEOUT_S + 10)
    await chat.next("turn_end", session_id=sid)

    # 4. The turn is cancelled while the request waits.
    request = await asked(chat, sid)
    await chat.send(type="cancel", session_id=sid)
    by_cancel = await chat.next("permission_resolved", session_id=sid)
    await chat.next("turn_end", session_id=sid)

    # 5. Nobody to ask: the only client leaves before the agent asks, so svc's policy answers.
    other = await Chat.connect(host)
    alone = (await other.open(agent="fake", workspace=str(tmp_path)))["session_id"]
    await other.send(type="prompt", session_id=alone, text="wait 1 ; permission")
    await other.next("user_message_chunk", session_id=alone)
    await other.close()
    rows = await _until(host, lambda r: any(a["session_id"] == alone for a in r))
    by_policy = next(a for a in rows if a["session_id"] == alone)

    rows = [r for r in approvals(host).json() if r not in before]
    assert [r["decided_by"] for r in rows] == [
        {"surface": "policy", "who": "nobody to ask"},
        {"surface": "cancelled", "who": "the turn was cancelled"},
        {"surface": "cancelled", "who": f"nobody answered within {TIMEOUT_S} s"},
        {"surface": "api", "who": "owner"},
        {"surface": "dashboard", "who": "owner"},
    ], "newest first"
    # What the agent was answered with: the person's choice; else the agent's reject option.
    assert [r["chosen"] for r in rows] == ["reject", "reject", "reject", "reject", "allow"]
    for row in rows:
        assert row["agent"] == "fake" and row["title"] == "rm -rf build"
        # The request named only the tool call's id: its kind comes from the tool_call event.
        assert row["kind"] == "execute"
        assert [o["option_id"] for o in row["options"]] == ["allow", "reject"]
        assert at(row["requested_at"]) <= at(row["decided_at"])
    assert rows[4]["session_id"] == rows[1]["session_id"] == sid and rows[0]["session_id"] == alone
    assert [r["seq"] for r in rows[1:]] == [
        e["seq"] for e in (by_cancel, by_timeout, by_api, by_chat)
    ]
    waited = at(rows[2]["decided_at"]) - at(rows[2]["requested_at"])
    assert waited >= timedelta(seconds=TIMEOUT_S), waited  # not decided before the timeout
    assert rows[0]["requested_at"] == rows[0]["decided_at"] == by_policy["decided_at"]

    # The events the history holds say the same: who decided, from where, when.
    assert by_chat["decided_by"] == {"surface": "dashboard", "who": "owner"}
    assert by_chat["decided_at"] == rows[4]["decided_at"]
    assert by_timeout["decided_by"]["surface"] == "cancelled" and not by_timeout["answered"]

    # Filters: one session (by a prefix of its id, as elsewhere), and since a moment.
    only = approvals(host, session_id=alone[:8]).json()
    assert [r["id"] for r in only] == [rows[0]["id"]]
    since = approvals(host, session_id=sid, since=rows[2]["decided_at"]).json()
    assert [r["id"] for r in since] == [rows[1]["id"], rows[2]["id"]]
    assert (
        approvals(host, since=(datetime.now().astimezone() + timedelta(hours=1)).isoformat()).json()
        == []
    )
    assert len(approvals(host, since=rows[4]["decided_at"][:10]).json()) >= 5  # a date: its start
    assert [r["id"] for r in approvals(host, limit="2").json()] == [r["id"] for r in rows[:2]]

    # Bad input gets a clear 400 in the API's error shape; an unknown session a 404.
    bad = approvals(host, since="last tuesday")
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "invalid"
    assert "since must be an ISO date or datetime" in bad.json()["error"]["message"]
    assert approvals(host, limit="lots").status_code == 400
    assert approvals(host, limit="0").status_code == 400
    assert approvals(host, session_id="ffffffff-0000").status_code == 404

    # No credential, a wrong one, or the MCP token: refused.
    assert httpx.get(f"{host.url}/api/approvals").status_code == 401
    wrong_token = {"Authorization": "Bearer " + "0" * 64}
    assert httpx.get(f"{host.url}/api/approvals", headers=wrong_token).status_code == 401
    mcp = {"Authorization": f"Bearer {host.mcp_token}"}
    assert httpx.get(f"{host.url}/api/approvals", headers=mcp).status_code == 401

    # Reopened, the chat's history replays each decision with who made it.
    again = await Chat.connect(host)
    await again.open(session_id=sid)
    replayed = [e["decided_by"] for e in again.events if e["kind"] == "permission_resolved"]
    assert replayed == [r["decided_by"] for r in reversed(rows[1:])]
    for client in (chat, again):
        await client.close()

    # Admin lists the record (read-only).
    admin = httpx.get(
        f"{host.url}/admin/sessions_app/approval/", headers=host.owner_headers(), timeout=10
    )
    assert admin.status_code == 200 and "rm -rf build" in admin.text
    assert "/admin/sessions_app/approval/add/" not in admin.text

    # Removing an ended session forgets its decisions with its history.
    stop_session(host, sid)
    stop_session(host, alone)
    removed = httpx.delete(
        f"{host.url}/api/sessions/{alone}", params={"remove": "1"}, headers=host.owner_headers()
    )
    assert removed.status_code == 204, removed.text
    assert [r["id"] for r in approvals(host).json() if r not in before] == [
        r["id"] for r in rows[1:]
    ]


async def _until(host: Daemon, check: Any, timeout: float = 15) -> list[dict[str, Any]]:
    async with asyncio.timeout(timeout):
        while not check(rows := approvals(host).json()):
            await asyncio.sleep(0.05)
    return rows


async def test_a_paired_device_decides_as_itself_through_the_remote_listener(
    host: Daemon, tmp_path: Path
) -> None:
    remote = Remote(host, host.auth()["remote_port"])
    with remote.client(headers={"User-Agent": IPHONE}) as client:
        paired = remote.pair(client)
        device, key = paired["device"]["id"], paired["page_key"]
        ws = await websockets.connect(
            f"ws://127.0.0.1:{remote.port}/ws/chat",
            subprotocols=[websockets.Subprotocol(f"svc.page.{key}")],
            additional_headers={"Cookie": f"svc_remote={client.cookies['svc_remote']}"},
            origin=websockets.Origin(remote.url),
            open_timeout=10,
        )
        phone = Chat(ws)
        sid = (await phone.open(agent="fake", workspace=str(tmp_path)))["session_id"]
        who = f"paired device {device} (Safari on iPhone)"

        # On /ws/chat, the phone is the dashboard's surface, and says which device it is.
        request = await asked(phone, sid)
        await phone.send(type="permission", request_id=request["request_id"], option_id="allow")
        resolved = await phone.next("permission_resolved", session_id=sid)
        assert resolved["decided_by"] == {"surface": "dashboard", "who": who}
        await phone.next("turn_end", session_id=sid)

        # Through the API the phone may answer too (a paired device uses sessions) and read the
        # record: both with the dashboard page's key.
        request = await asked(phone, sid)
        page = {"X-Svc-Page-Key": key}
        answered = client.post(
            f"/api/sessions/{sid}/permissions",
            json={"request_id": request["request_id"], "option_id": "reject"},
            headers=page,
        )
        assert answered.status_code == 204, answered.text
        await phone.next("turn_end", session_id=sid)
        listed = client.get("/api/approvals", params={"session_id": sid}, headers=page)
        assert listed.status_code == 200, listed.text
        assert [(r["decided_by"], r["chosen"]) for r in listed.json()] == [
            ({"surface": "api", "who": who}, "reject"),
            ({"surface": "dashboard", "who": who}, "allow"),
        ]
        # Without the page key (a previewed page holding the cookie) neither works.
        assert client.get("/api/approvals").status_code == 403
        await phone.close()

    # An unpaired browser on the remote listener gets nothing.
    with remote.client() as stranger:
        assert stranger.get("/api/approvals").status_code == 401
        refused = stranger.post(
            f"/api/sessions/{sid}/permissions", json={"request_id": "x", "option_id": "allow"}
        )
        assert refused.status_code == 401
    stop_session(host, sid)

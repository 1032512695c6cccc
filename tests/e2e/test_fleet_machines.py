"""A fleet's machines (contract §18), three members on this machine sharing one real PostgreSQL
database and one Redis: each sees all three online (API, live list, CLI); a member killed with
SIGKILL reads `unreachable` on the others within 15 s and `online` again once restarted; a member
with another secret never appears anywhere; each member's own tables stay in its own schema; and
the list is the owner's, like /api/sessions."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from unittest.mock import ANY

import httpx
import pytest
import websockets

from harness.daemon import ROOT, Daemon
from harness.fleet import Fleet, running_fleet
from harness.ws import connect, recv_json, wait_for_frame

ALL_ONLINE = {"a": "online", "b": "online", "c": "online"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with running_fleet(tmp_path_factory.mktemp("fleet")) as running:
        for member in running.members.values():  # joined: each has seen the others' beats
            wait_for(lambda m=member: machines(m.daemon), lambda r: statuses(r) == ALL_ONLINE)
        yield running


def machines(daemon: Daemon) -> list[dict]:
    response = httpx.get(f"{daemon.url}/api/machines", headers=daemon.owner_headers())
    assert response.status_code == 200, response.text
    return response.json()


def statuses(rows: list[dict]) -> dict[str, str]:
    return {row["name"]: row["status"] for row in rows}


def wait_for(read: Callable[[], list[dict]], wanted: Callable[[list[dict]], bool]) -> list[dict]:
    deadline = time.monotonic() + 15
    while not wanted(rows := read()):
        assert time.monotonic() < deadline, f"never: {rows}"
        time.sleep(0.2)
    return rows


def test_every_member_sees_the_three_machines_online(fleet: Fleet) -> None:
    ids = {name: member.machine_id for name, member in fleet.members.items()}
    for name in "abc":
        daemon = fleet.daemon(name)
        rows = wait_for(lambda d=daemon: machines(d), lambda r: statuses(r) == ALL_ONLINE)
        assert {row["name"]: row["id"] for row in rows} == ids
        assert [row["name"] for row in rows if row["self"]] == [name]
        own = next(row for row in rows if row["self"])
        assert own["url"] == daemon.url
        assert "shell" in own["agents"] and own["version"]
        assert own["last_seen"] and own["started_at"]
        status = httpx.get(f"{daemon.url}/api/status", headers=daemon.owner_headers()).json()
        assert status["fleet"] == {"machine": ids[name], "status": "online", "detail": ANY}


async def test_the_live_list_shows_them_on_every_member(fleet: Fleet) -> None:
    for name in "abc":
        async with connect(fleet.daemon(name), "/ws/machines") as ws:
            frame = await recv_json(ws)
        assert statuses(frame) == ALL_ONLINE
        assert [row["name"] for row in frame if row["self"]] == [name]


def test_a_machine_is_named_by_id_or_name_and_an_unknown_one_is_404(fleet: Fleet) -> None:
    a, b_id = fleet.daemon("a"), fleet.members["b"].machine_id
    for given in (b_id, "b", "B"):
        got = httpx.get(f"{a.url}/api/machines/{given}", headers=a.owner_headers())
        assert got.status_code == 200 and got.json()["id"] == b_id
        assert got.json()["self"] is False
    missing = httpx.get(f"{a.url}/api/machines/nowhere", headers=a.owner_headers())
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    assert "nowhere" in missing.json()["error"]["message"]


def test_bin_svc_machines_prints_the_fleet(fleet: Fleet) -> None:
    env = {**os.environ, "SVC_HOME": str(fleet.members["c"].home)}
    printed = subprocess.run(
        [str(ROOT / "bin" / "svc"), "machines"], env=env, capture_output=True, text=True
    )
    assert printed.returncode == 0, printed.stderr
    header, *lines = printed.stdout.splitlines()
    assert header.split()[:3] == ["here", "name", "status"]
    rows = sorted(line.split()[:3] if line.startswith("*") else line.split()[:2] for line in lines)
    assert rows == [["*", "c", "online"], ["a", "online"], ["b", "online"]]


async def test_machines_are_the_owners_like_sessions(fleet: Fleet) -> None:
    a = fleet.daemon("a")
    for headers in ({}, {"Authorization": f"Bearer {a.mcp_token}"}):
        refused = httpx.get(f"{a.url}/api/machines", headers=headers)
        sessions = httpx.get(f"{a.url}/api/sessions", headers=headers)
        assert refused.status_code == sessions.status_code == 401
        assert refused.json()["error"]["code"] == "not_authenticated"
        one = httpx.get(f"{a.url}/api/machines/a", headers=headers)
        assert one.status_code == 401
    url = f"{a.ws_url}/ws/machines?token={a.mcp_token}"
    async with websockets.connect(url, origin=websockets.Origin(a.origin)) as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd.code == 4401


def test_each_member_keeps_its_own_tables(fleet: Fleet, tmp_path: Path) -> None:
    a, b = fleet.daemon("a"), fleet.daemon("b")
    work = tmp_path / "work"
    work.mkdir()
    made = httpx.post(
        f"{a.url}/api/workspaces", json={"path": str(work)}, headers=a.owner_headers()
    )
    assert made.status_code == 201, made.text
    session = httpx.post(
        f"{a.url}/api/sessions",
        json={"agent": "shell", "workspace": str(work)},
        headers=a.owner_headers(),
        timeout=30,
    )
    assert session.status_code == 201, session.text
    sid = session.json()["id"]
    try:
        count = "SELECT count(*) FROM {}.sessions_app_session WHERE id = %s"
        schemas = {name: m.schema for name, m in fleet.members.items()}
        found = {n: fleet.sql(count.format(s), sid)[0][0] for n, s in schemas.items()}
        assert found == {"a": 1, "b": 0, "c": 0}
        paths = [
            w["path"]
            for w in httpx.get(f"{b.url}/api/workspaces", headers=b.owner_headers()).json()
        ]
        assert str(work.resolve()) not in paths
        # What A says of itself reaches B through A's row: its running session and workspace.
        rows = wait_for(
            lambda: machines(b),
            lambda r: any(m["name"] == "a" and m["sessions_running"] == 1 for m in r),
        )
        assert str(work.resolve()) in next(m for m in rows if m["name"] == "a")["workspaces"]
    finally:
        httpx.delete(f"{a.url}/api/sessions/{sid}", params={"wait": "1"}, headers=a.owner_headers())


def test_a_member_with_another_secret_never_joins(fleet: Fleet) -> None:
    stranger = fleet.add("d", secret=secrets.token_hex(20))
    try:
        # It is up and renewing its row (the database has it), and sees only itself: the
        # others' rows do not verify with its secret, as its row does not with theirs.
        alone = wait_for(lambda: machines(stranger.daemon), lambda r: len(r) >= 1)
        assert [(r["name"], r["self"]) for r in alone] == [("d", True)]
        names = {row[0] for row in fleet.sql("SELECT name FROM svc_fleet.fleet_app_machine")}
        assert names == {"a", "b", "c", "d"}
        deadline = time.monotonic() + 7  # more than a beat and a re-evaluation
        while time.monotonic() < deadline:
            for name in "abc":
                assert statuses(machines(fleet.daemon(name))) == ALL_ONLINE
            time.sleep(0.5)
        got = httpx.get(
            f"{fleet.daemon('a').url}/api/machines/d", headers=fleet.daemon("a").owner_headers()
        )
        assert got.status_code == 404
    finally:
        fleet.remove("d")


def _row(rows: list[dict], name: str) -> dict:
    return next(row for row in rows if row["name"] == name)


def _age_s(row: dict) -> float:
    return time.time() - datetime.fromisoformat(row["last_seen"]).timestamp()


async def test_a_killed_member_is_unreachable_within_15_s_and_back_when_restarted(
    fleet: Fleet,
) -> None:
    a, c = fleet.daemon("a"), fleet.daemon("c")
    async with connect(a, "/ws/machines") as on_a, connect(c, "/ws/machines") as on_c:
        for ws in (on_a, on_c):
            assert statuses(await recv_json(ws)) == ALL_ONLINE
        # The 15 s count from B's last renewal, which its death always follows (rows are
        # renewed every 5 s): killed 2 s after one, "within 15 s" of the kill leaves the frame
        # time to travel on a busy machine. Both ends are checked from the renewal too.
        await asyncio.to_thread(wait_for, lambda: machines(a), lambda r: _age_s(_row(r, "b")) > 2)
        fleet.kill("b")
        killed = time.monotonic()
        for ws in (on_a, on_c):
            frame, seen = await wait_for_frame(
                ws, lambda f: statuses(f).get("b") == "unreachable", timeout=25
            )
            assert seen - killed < 15
            assert 14.9 <= _age_s(_row(frame, "b")) < 16.5  # when its 15 s were up, not before
            assert statuses(frame) == {**ALL_ONLINE, "b": "unreachable"}
        await asyncio.to_thread(fleet.start, "b")
        started = time.monotonic()
        for ws in (on_a, on_c):
            _, seen = await wait_for_frame(ws, lambda f: statuses(f) == ALL_ONLINE, timeout=15)
            assert seen - started < 10  # its first beat, then one re-evaluation (5 s)


async def test_a_member_stopped_in_order_is_unreachable_at_once(fleet: Fleet) -> None:
    a = fleet.daemon("a")
    async with connect(a, "/ws/machines") as on_a:
        assert statuses(await recv_json(on_a)) == ALL_ONLINE
        await asyncio.to_thread(fleet.daemon("c").stop, keep_sessions=True)
        stopped = time.monotonic()
        _, seen = await wait_for_frame(on_a, lambda f: statuses(f).get("c") == "unreachable", 10)
        assert seen - stopped < 5.5  # its row dated back as it stopped: A's next look sees it
        await asyncio.to_thread(fleet.start, "c")
        await wait_for_frame(on_a, lambda f: statuses(f) == ALL_ONLINE, timeout=15)


async def test_without_a_fleet_the_list_is_this_machine_alone(daemon: Daemon) -> None:
    rows = machines(daemon)
    ident = json.loads((daemon.home / "machine.json").read_text())["id"]
    assert [(r["id"], r["name"], r["status"], r["self"]) for r in rows] == [
        (ident, socket.gethostname(), "online", True)
    ]
    assert rows[0]["url"] == daemon.url and "shell" in rows[0]["agents"]
    by_name = httpx.get(f"{daemon.url}/api/machines/{ident}", headers=daemon.owner_headers())
    assert by_name.status_code == 200 and by_name.json()["id"] == ident
    async with connect(daemon, "/ws/machines") as ws:
        assert [r["id"] for r in await recv_json(ws)] == [ident]

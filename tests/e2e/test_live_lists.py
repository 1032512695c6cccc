"""Live lists: a full snapshot on connect and after every committed change (contract §7)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from harness.daemon import Daemon
from harness.ws import connect, recv_json, wait_for_frame


@pytest.mark.parametrize(
    ("path", "api"),
    [("/ws/sessions", "sessions"), ("/ws/channels", "channels"), ("/ws/tunnels", "tunnels")],
)
async def test_the_first_frame_is_the_complete_list(daemon: Daemon, path: str, api: str) -> None:
    headers = daemon.owner_headers()
    await asyncio.to_thread(
        httpx.post,
        f"{daemon.url}/api/sessions",
        json={"agent": "shell", "workspace": "/tmp", "kind": "terminal"},
        headers=headers,
    )
    async with connect(daemon, path) as ws:
        frame = await recv_json(ws)
    expected = httpx.get(f"{daemon.url}/api/{api}", headers=headers).json()
    assert frame == expected
    if path == "/ws/sessions":
        assert any(s["agent"] == "shell" for s in frame)
    if path == "/ws/channels":
        assert {"name": "web", "kind": "web", "builtin": True}.items() <= frame[0].items()


async def test_the_runtime_list_starts_empty(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    async with connect(fresh_daemon, "/ws/agents/runtime") as ws:
        assert await recv_json(ws) == []


def channel_names(frame: list[dict]) -> set[str]:
    return {c["name"] for c in frame}


def patch_settings(daemon: Daemon, changes: dict) -> httpx.Response:
    response = httpx.patch(
        f"{daemon.url}/api/settings", json=changes, headers=daemon.owner_headers(), timeout=10
    )
    assert response.status_code == 200, response.text
    return response


async def test_a_change_through_the_api_reaches_a_subscriber_within_a_second(
    fresh_daemon: Daemon,
) -> None:
    fresh_daemon.start()
    async with connect(fresh_daemon, "/ws/channels") as ws:
        assert channel_names(await recv_json(ws)) == {"web"}
        await asyncio.to_thread(patch_settings, fresh_daemon, {"channels": {"ops": {"kind": "x"}}})
        sent = time.monotonic()
        frame, arrived = await wait_for_frame(ws, lambda f: "ops" in channel_names(f))
    assert arrived - sent < 1.0
    assert channel_names(frame) == {"web", "ops"}


async def test_fifty_clients_converge_on_the_final_state_after_a_hundred_changes(
    fresh_daemon: Daemon,
) -> None:
    fresh_daemon.start()
    sockets = [await connect(fresh_daemon, "/ws/tunnels").__aenter__() for _ in range(50)]
    try:
        for ws in sockets:
            assert await recv_json(ws) == []

        def hundred_changes() -> None:
            with httpx.Client(headers=fresh_daemon.owner_headers(), timeout=10) as client:
                for i in range(100):
                    tunnels = {f"t{j}": {"kind": "test", "port": 3000 + j} for j in range(i + 1)}
                    response = client.patch(
                        f"{fresh_daemon.url}/api/settings", json={"tunnels": tunnels}
                    )
                    assert response.status_code == 200

        await asyncio.to_thread(hundred_changes)
        final = httpx.get(
            f"{fresh_daemon.url}/api/tunnels", headers=fresh_daemon.owner_headers()
        ).json()
        assert len(final) == 100

        async def last_frame(ws) -> list:
            frame, _ = await wait_for_frame(ws, lambda f: len(f) == 100, timeout=20)
            while True:  # drain: re-sends already queued may follow; the last one counts
                try:
                    frame = await recv_json(ws, timeout=0.5)
                except TimeoutError:
                    return frame

        frames = await asyncio.gather(*(last_frame(ws) for ws in sockets))
        for frame in frames:
            assert sorted(t["name"] for t in frame) == sorted(t["name"] for t in final)
    finally:
        for ws in sockets:
            await ws.close()

"""The scale-out path for real: Redis as channel layer, PostgreSQL as database (contract §0)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from harness.daemon import Daemon, manage
from harness.services import postgres_database, redis_env
from harness.ws import connect, recv_json, wait_for_frame

CREATE_SESSION = (
    "from sessions_app.models import Session; "
    "Session.objects.create(agent='shell', workspace='/tmp', status='exited', title='{title}')"
)


async def test_an_orm_change_in_another_process_reaches_a_subscriber_via_redis(
    fresh_daemon: Daemon,
) -> None:
    fresh_daemon.env.update(redis_env())
    fresh_daemon.start()
    async with connect(fresh_daemon, "/ws/sessions") as ws:
        assert await recv_json(ws) == []
        result = await asyncio.to_thread(
            fresh_daemon.manage, "shell", "-c", CREATE_SESSION.format(title="from-shell")
        )
        done = time.monotonic()
        assert result.returncode == 0, result.stderr
        _, arrived = await wait_for_frame(ws, lambda f: [s["title"] for s in f] == ["from-shell"])
    assert arrived - done < 1.0


async def test_fifty_clients_converge_after_a_hundred_changes_from_another_process(
    fresh_daemon: Daemon,
) -> None:
    fresh_daemon.env.update(redis_env())
    fresh_daemon.start()
    sockets = [await connect(fresh_daemon, "/ws/sessions").__aenter__() for _ in range(50)]
    try:
        for ws in sockets:
            assert await recv_json(ws) == []
        script = "; ".join([CREATE_SESSION.format(title="burst")] * 100)
        result = await asyncio.to_thread(fresh_daemon.manage, "shell", "-c", script)
        assert result.returncode == 0, result.stderr

        async def settled(ws) -> list:
            frame, _ = await wait_for_frame(ws, lambda f: len(f) == 100, timeout=20)
            while True:
                try:
                    frame = await recv_json(ws, timeout=0.5)
                except TimeoutError:
                    return frame

        final = httpx.get(
            f"{fresh_daemon.url}/api/sessions", headers=fresh_daemon.owner_headers()
        ).json()
        frames = await asyncio.gather(*(settled(ws) for ws in sockets))
        assert all(frame == final for frame in frames)
    finally:
        for ws in sockets:
            await ws.close()


def test_svc_runs_on_postgresql_with_redis_and_keeps_rows_across_restarts(
    tmp_path: Path,
) -> None:
    with postgres_database() as database_url:
        home = tmp_path / "home"
        home.mkdir()
        env = {"DATABASE_URL": database_url, **redis_env()}
        manage(home, "migrate", "--noinput", "-v", "0", env=env)
        server = Daemon(home, env=env).start()
        try:
            headers = server.owner_headers()
            created = httpx.post(
                f"{server.url}/api/workspaces", json={"path": str(tmp_path)}, headers=headers
            )
            assert created.status_code == 201, created.text
            server.manage("shell", "-c", CREATE_SESSION.format(title="on-postgres"))
            vendor = server.manage(
                "shell", "-c", "from django.db import connection; print(connection.vendor)"
            )
            assert vendor.stdout.strip().splitlines()[-1] == "postgresql"
            server.restart()
            sessions = httpx.get(f"{server.url}/api/sessions", headers=headers).json()
            workspaces = httpx.get(f"{server.url}/api/workspaces", headers=headers).json()
            assert [s["title"] for s in sessions] == ["on-postgres"]
            assert [w["path"] for w in workspaces] == [str(tmp_path.resolve())]
            assert not (home / "db.sqlite3").exists()
        finally:
            server.stop()

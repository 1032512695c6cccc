"""The remote listener's own budget (issue 31, finding 5; contract §13): what strangers hold open
through a tunnel never takes what the main port needs.

The daemon runs with few spare file descriptors (as under `ulimit -n 1024` with a busy svc), its
remote listener capped at 40 connections with a 1 s header deadline. Strangers try 200
connections and trickle header bytes. svc never holds more than the cap of them (at the cap it
stops accepting: the rest wait in the kernel's backlog or get no answer), the owner's requests
on the main port keep answering on fresh connections, and every stranger svc accepted is cut off
at the deadline — Twisted's own idle timeout, reset by every byte, would hold them for hours.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
from collections.abc import Iterator

import httpx
import pytest

from harness.daemon import Daemon, migrated_home
from harness.termclient import hosting_settings, shell_env

CAP = 40
STRANGERS = 200
SPARE_FDS = 70  # fewer than the strangers: without the cap they would take them all


@pytest.fixture
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-remote-budget")
    settings = {
        **hosting_settings(),
        "workspaces": [str(tmp)],
        "remote": {"max_connections": CAP, "header_timeout_s": 1},
    }
    server = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    yield server
    server.stop()


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def _stranger(port: int, connected: asyncio.Event, ended: list[str]) -> None:
    """Connect, start a request and never finish its headers: a byte every 0.2 s until svc
    hangs up. Records how it ended."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 3)
    except (OSError, TimeoutError):
        ended.append("never connected")  # no room even in the backlog: svc spent nothing
        return
    connected.set()
    try:
        writer.write(b"GET / HTTP/1.1\r\nHost: tunnel.example.test\r\n")
        for _ in range(150):  # 30 s at most: far past any deadline svc may keep
            with contextlib.suppress(TimeoutError):
                if await asyncio.wait_for(reader.read(1024), 0.2) == b"":
                    ended.append("closed by svc")
                    return
            writer.write(b"X")
            await writer.drain()
        ended.append("still open")
    except OSError:
        ended.append("closed by svc")
    finally:
        writer.close()


def _owner_requests(daemon: Daemon) -> list[int]:
    fresh = httpx.Limits(max_keepalive_connections=0)  # a new connection each, as the CLI makes
    with httpx.Client(
        base_url=daemon.url, headers=daemon.owner_headers(), timeout=10, limits=fresh
    ) as client:
        return [client.get("/api/sessions").status_code for _ in range(20)]


async def _attack(daemon: Daemon, pid: int, port: int) -> tuple[list[str], int, list[int]]:
    ended: list[str] = []
    connected = asyncio.Event()
    tasks = [asyncio.ensure_future(_stranger(port, connected, ended)) for _ in range(STRANGERS)]
    await connected.wait()
    await asyncio.sleep(0.5)  # the first burst accepted
    held = _descriptors(pid)
    codes = await asyncio.to_thread(_owner_requests, daemon)
    await asyncio.gather(*tasks)
    return ended, held, codes


def test_strangers_holding_the_remote_listener_never_starve_the_main_port(
    daemon: Daemon,
) -> None:
    assert daemon.proc is not None
    pid = daemon.proc.pid
    before = _descriptors(pid)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (before + SPARE_FDS,) * 2)
    remote_port = daemon.auth()["remote_port"]
    ended, held, codes = asyncio.run(_attack(daemon, pid, remote_port))
    assert codes == [200] * 20, codes  # the owner, meanwhile, on the main port
    assert held <= before + CAP + 5, (before, held)  # never more strangers than the cap
    assert len(ended) == STRANGERS and "still open" not in ended, sorted(set(ended))
    assert ended.count("closed by svc") >= CAP, ended.count("closed by svc")
    # And the remote listener serves again once they are gone.
    assert httpx.get(f"http://127.0.0.1:{remote_port}/pair", timeout=10).status_code == 200

"""Live lists and session stop: `/ws/sessions` frame latency after the API returns, with 50
clients, beside a raw broadcast in the same run; `DELETE /api/sessions/{id}` latency; Ctrl-C
reaching a flooding terminal's producer. Servers pinned to one core, the clients to the other.

The raw broadcast is the least a server can do: a bare ASGI app on the same daphne that, on one
HTTP POST, sends a fixed text frame to each of its 50 WebSocket clients.

    .venv/bin/python bench/lists.py        (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLIENTS = 50
CHANGES = int(os.environ.get("BENCH_CHANGES", "40"))
STOPS = int(os.environ.get("BENCH_STOPS", "40"))
SERVER_CORE, CLIENT_CORE = 0, 1


# --- the raw broadcast (run by daphne as bench.lists:raw) ---------------------------------------


class RawBroadcast:
    def __init__(self) -> None:
        self.sockets: set[Any] = set()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.send", "text": "[]"})  # the snapshot on connect
            self.sockets.add(send)
            try:
                while (await receive())["type"] != "websocket.disconnect":
                    pass
            finally:
                self.sockets.discard(send)
        elif scope["type"] == "http":
            while (await receive()).get("more_body"):
                pass
            frame = json.dumps([{"id": str(time.time()), "status": "running"}])
            for client in list(self.sockets):
                await client({"type": "websocket.send", "text": frame})
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})


raw = RawBroadcast()


# --- processes ---------------------------------------------------------------------------------


def pin(pid: int, core: int) -> None:
    """Every thread: threads started before pinning keep their old affinity."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(task), {core})


def start_raw() -> tuple[subprocess.Popen, int]:
    from tests.support.daemon import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "bench.lists:raw"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(1.5)
    pin(proc.pid, SERVER_CORE)
    return proc, port


def start_svc() -> Any:
    from tests.support.daemon import Daemon, migrated_home

    # "idle" starts a process that does no start-up work of its own: with it the frames measure
    # svc's list path alone; with "shell", bash's start-up shares the server's pinned core.
    settings = {"agents": {"idle": {"command": ["sleep", "3600"]}}}
    home = migrated_home(Path(tempfile.mkdtemp(prefix="svc-bench-")) / "home", settings)
    svc = Daemon(home).start()
    assert svc.proc is not None
    pin(svc.proc.pid, SERVER_CORE)
    return svc


# --- measures ----------------------------------------------------------------------------------


async def frames_after(
    urls: list[str], headers: dict[str, str], trigger: Any, origin: str, done: Any
) -> list[float]:
    """For each of CHANGES triggers: seconds from the trigger's return to each client's frame
    that shows the change (50 samples per change)."""
    import websockets

    sockets = [
        await websockets.connect(u, additional_headers=headers, origin=origin, max_size=None)
        for u in urls
    ]
    for ws in sockets:
        await ws.recv()  # the snapshot on connect
    samples: list[float] = []
    try:
        for _ in range(CHANGES):
            marker = await trigger()
            returned = time.perf_counter()

            async def until_seen(ws: Any, marker: Any = marker, since: float = returned) -> float:
                while not done(json.loads(await ws.recv()), marker):
                    pass
                return time.perf_counter() - since

            samples += await asyncio.gather(*(until_seen(ws) for ws in sockets))
    finally:
        for ws in sockets:
            await ws.close()
    return samples


async def svc_lists(svc: Any, work: str, agent: str) -> tuple[list[float], list[float]]:
    import httpx

    client = httpx.AsyncClient(headers=svc.owner_headers(), timeout=30)
    created: list[str] = []

    async def create() -> str:
        made = await client.post(
            f"{svc.url}/api/sessions", json={"agent": agent, "workspace": work}
        )
        created.append(made.json()["id"])
        return created[-1]

    def shows(items: list[dict], marker: str) -> bool:
        return any(s["id"] == marker for s in items)

    urls = [f"{svc.ws_url}/ws/sessions"] * CLIENTS
    lat = await frames_after(urls, svc.owner_headers(), create, svc.origin, shows)
    stops = []
    for sid in created[:STOPS]:
        started = time.perf_counter()
        answer = await client.delete(f"{svc.url}/api/sessions/{sid}")
        stops.append(time.perf_counter() - started)
        assert answer.status_code in (200, 202), answer.text
    await client.aclose()
    return lat, stops


async def raw_lists(port: int) -> list[float]:
    import httpx

    client = httpx.AsyncClient(timeout=30)

    async def trigger() -> None:
        await client.post(f"http://127.0.0.1:{port}/go")

    urls = [f"ws://127.0.0.1:{port}/ws"] * CLIENTS
    lat = await frames_after(urls, {}, trigger, f"http://127.0.0.1:{port}", lambda i, m: True)
    await client.aclose()
    return lat


def ms(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000


def main() -> None:
    pin(os.getpid(), CLIENT_CORE)
    raw_proc, raw_port = start_raw()
    svc = start_svc()
    work = tempfile.mkdtemp(prefix="svc-bench-work-")
    try:
        raw_lat = asyncio.run(raw_lists(raw_port))
        svc_lat, stops = asyncio.run(svc_lists(svc, work, "shell"))
        # Second, so its list is the longer one (the shells' 40 exited rows stay listed).
        idle_lat, idle_stops = asyncio.run(svc_lists(svc, work, "idle"))
    finally:
        svc.stop()
        raw_proc.terminate()
        raw_proc.wait(10)
    print(f"/ws/sessions frame after the API returns, {CLIENTS} clients, {CHANGES} changes:")
    for name, lat in (("svc, bash shell", svc_lat), ("svc, idle process", idle_lat)):
        print(f"  {name:19s} p50 {ms(lat, 50):6.1f} ms   p99 {ms(lat, 99):6.1f} ms")
    print(f"  raw broadcast       p50 {ms(raw_lat, 50):6.1f} ms   p99 {ms(raw_lat, 99):6.1f} ms")
    print(f"  svc (idle) p99 {ms(idle_lat, 99):.1f} ms (bar <= 50 ms); svc/raw p99 = "
          f"{ms(idle_lat, 99) / ms(raw_lat, 99):.1f}x")  # fmt: skip
    print(f"DELETE /api/sessions/{{id}}, {STOPS} stops each:")
    for name, lat in (("bash shell", stops), ("idle process", idle_stops)):
        print(
            f"  {name:12s} p50 {ms(lat, 50):6.1f} ms   p99 {ms(lat, 99):6.1f} ms (bar p50 <= 50 ms)"
        )


if __name__ == "__main__":
    main()

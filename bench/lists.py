"""Live lists and session start/stop: `POST /api/sessions` latency; `/ws/sessions` frame latency
with 50 clients, after the API returns and end to end (from the POST being sent), beside a raw
broadcast in the same run; `DELETE /api/sessions/{id}` latency. Servers pinned to one core, the
clients to the other. svc's holder (and so every session it starts) runs on any core, as in use;
`BENCH_HOLDER_FREE=0` leaves it on svc's core, as it would inherit the pin (docs/performance.md).

The raw broadcast is the least a server can do: a bare ASGI app on the same daphne that, on one
HTTP POST, sends a fixed text frame to each of its 50 WebSocket clients.

    .venv/bin/python bench/lists.py        (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support.machine import pin  # noqa: E402

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


def start_raw() -> tuple[subprocess.Popen, int]:
    from harness.daemon import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "bench.lists:raw"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(1.5)
    pin(proc.pid, SERVER_CORE)
    return proc, port


def start_svc() -> Any:
    from harness.daemon import Daemon, migrated_home

    # "idle" starts a process that does no start-up work of its own: with it the frames measure
    # svc's list path alone; with "shell", bash's start-up shares the server's pinned core. The
    # shell starts from an empty HOME (bench/terminal.py does the same): a developer's rc files
    # (pyenv init alone is ~150 ms of CPU here) would measure the machine, not svc.
    settings = {"agents": {"idle": {"command": ["sleep", "3600"]}}}
    base = Path(tempfile.mkdtemp(prefix="svc-bench-"))
    home = migrated_home(base / "home", settings)
    (base / "user-home").mkdir()
    svc = Daemon(home, env={"HOME": str(base / "user-home"), "SHELL": "/bin/bash"}).start()
    assert svc.proc is not None
    pin(svc.proc.pid, SERVER_CORE)
    if os.environ.get("BENCH_HOLDER_FREE", "1") == "1":
        free_the_holder(svc, home)
    return svc


def free_the_holder(svc: Any, home: Path) -> None:
    """svc's holder is started by svc and would inherit its pin, and every session with it: in
    use nothing is pinned, and the holder and the sessions it starts run on whichever core is
    free. One session starts the holder; the holder then gets every core back."""
    import httpx

    work = tempfile.mkdtemp(prefix="svc-bench-work-")
    headers = svc.owner_headers()
    made = httpx.post(f"{svc.url}/api/sessions", json={"agent": "idle", "workspace": work},
                      headers=headers, timeout=30).json()  # fmt: skip
    httpx.delete(f"{svc.url}/api/sessions/{made['id']}?wait=1", headers=headers, timeout=30)
    holder = int((home / "holder" / "holder.pid").read_text())
    for task in os.listdir(f"/proc/{holder}/task"):
        os.sched_setaffinity(int(task), set(range(os.cpu_count() or 1)))


# --- measures ----------------------------------------------------------------------------------


@dataclass
class Frames:
    after_return: list[float] = field(default_factory=list)  # trigger returned → frame
    end_to_end: list[float] = field(default_factory=list)  # trigger sent → frame
    trigger: list[float] = field(default_factory=list)  # how long the trigger itself took


async def frames_after(
    urls: list[str], headers: dict[str, str], trigger: Any, origin: str, done: Any
) -> Frames:
    """For each of CHANGES triggers: seconds from the trigger's return (and from its start) to
    each client's frame that shows the change (50 samples per change)."""
    import websockets

    sockets = [
        await websockets.connect(u, additional_headers=headers, origin=origin, max_size=None)
        for u in urls
    ]
    for ws in sockets:
        await ws.recv()  # the snapshot on connect
    frames = Frames()
    try:
        for _ in range(CHANGES):
            sent = time.perf_counter()
            marker = await trigger()
            returned = time.perf_counter()
            frames.trigger.append(returned - sent)

            async def until_seen(ws: Any, marker: Any = marker) -> float:
                while not done(json.loads(await ws.recv()), marker):
                    pass
                return time.perf_counter()

            seen = await asyncio.gather(*(until_seen(ws) for ws in sockets))
            frames.after_return += [t - returned for t in seen]
            frames.end_to_end += [t - sent for t in seen]
    finally:
        for ws in sockets:
            await ws.close()
    return frames


async def svc_lists(svc: Any, work: str, agent: str) -> tuple[Frames, list[float]]:
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


async def raw_lists(port: int) -> Frames:
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


def line(values: list[float]) -> str:
    return f"p50 {ms(values, 50):6.1f} ms   p99 {ms(values, 99):6.1f} ms"


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
    runs = (
        ("svc, bash shell", svc_lat),
        ("svc, idle process", idle_lat),
        ("raw broadcast", raw_lat),
    )
    print(f"POST /api/sessions (raw: its POST /go), {CHANGES} each, {CLIENTS} list clients open:")
    for name, frames in runs:
        print(f"  {name:19s} {line(frames.trigger)}")
    print("  bar: shell p50 <= 15 ms")
    print(f"/ws/sessions frame after the API returns, {CLIENTS} clients, {CHANGES} changes:")
    for name, frames in runs:
        print(f"  {name:19s} {line(frames.after_return)}")
    print("/ws/sessions end to end (POST sent → frame):")
    for name, frames in runs:
        print(f"  {name:19s} {line(frames.end_to_end)}")
    shell, raw = ms(svc_lat.end_to_end, 99), ms(raw_lat.end_to_end, 99)
    print(
        f"  svc (shell) end-to-end p99 {shell:.1f} ms (bar <= 50 ms); svc/raw = {shell / raw:.1f}x"
    )
    print(f"DELETE /api/sessions/{{id}}, {STOPS} stops each:")
    for name, lat in (("bash shell", stops), ("idle process", idle_stops)):
        print(
            f"  {name:12s} p50 {ms(lat, 50):6.1f} ms   p99 {ms(lat, 99):6.1f} ms (bar p50 <= 50 ms)"
        )


if __name__ == "__main__":
    main()

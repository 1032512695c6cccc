"""A fleet on this machine (contract §18, issue 35): three members sharing one PostgreSQL database
and the machine's Redis, 50 shell sessions on each.

- Echo: one keystroke at a time into a shell on member c, typed through c's own /ws ("local")
  and through a's /ws ("across": a → Redis Streams relay → c's consumer → c's PTY and back),
  the two taking turns key by key; p50 and p99 of each, and their ratios. Bars: p50 ≤ 2×,
  p99 ≤ 3× local.
- Flood: the bytes of `head -c 30000000 /dev/zero | base64` through c's /ws and through a's,
  interleaved, 5 rounds each, median MB/s. Bar: across ≥ 0.5× local.
- Lists: a rename of one of b's sessions (PATCH on b) until the frame of a's /ws/sessions that
  shows it, with 3 × 50 sessions in the fleet; 100 changes, p50/p99. Bar: p99 ≤ 100 ms.
- RSS of each member with its 50 sessions held.
- The floor under the echo bar: a bare XADD → blocking XREAD ping-pong between two processes
  with redis-py's asyncio client (what the relays use), no svc code at all. An echo across
  crosses it once on top of everything a local echo does, so local + floor is the best ratio
  any relay over Redis could reach on this machine.

Run: `.venv/bin/python bench/fleet.py` (make bench sets SVC_HOME to a temporary directory).
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.terminal import echo_latency, settle, throughput  # noqa: E402

SESSIONS_PER_MEMBER = 50
KEYSTROKES = 300
ECHO_BLOCK = 50
FLOOD_ROUNDS = 5
LIST_CHANGES = 100


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def terminal(daemon: Any, session_id: str) -> tuple[Any, Any, Any]:
    from websockets.asyncio.client import connect

    ws = await connect(
        f"{daemon.ws_url}/ws?session_id={session_id}",
        origin=daemon.origin,
        additional_headers=daemon.owner_headers(),
        max_size=None,
    )

    async def recv() -> bytes:
        while True:
            frame = await ws.recv()
            if isinstance(frame, bytes):
                return frame

    return ws.send, recv, ws


async def echo_and_flood(a: Any, c: Any, session_id: str) -> dict[str, Any]:
    """One viewer at a time (a second would see the same echo), local and across taking turns
    in blocks of ECHO_BLOCK keys."""
    echo: dict[str, list[float]] = {"local": [], "across": []}
    for _ in range(KEYSTROKES // ECHO_BLOCK):
        for which, daemon in (("local", c), ("across", a)):
            send, recv, ws = await terminal(daemon, session_id)
            await settle(recv)
            for i in range(ECHO_BLOCK):
                echo[which].append(await echo_latency(send, recv, i))
            await settle(recv)
            await ws.close()
    flood: dict[str, list[float]] = {"local": [], "across": []}
    redis_cpu_s = 0.0  # Redis's CPU during the floods across (what one MB across costs it)
    for _ in range(FLOOD_ROUNDS):
        for which, daemon in (("local", c), ("across", a)):
            send, recv, ws = await terminal(daemon, session_id)
            await settle(recv)
            before = redis_cpu()
            flood[which].append(await throughput(send, recv))
            if which == "across":
                redis_cpu_s += redis_cpu() - before
            await settle(recv)
            await ws.close()
    # 30 MB of zeros, base64: 40.5 MB of output per round.
    mb_across = FLOOD_ROUNDS * 40.5
    return {"echo": echo, "flood": flood, "redis_cpu_per_mb": redis_cpu_s / mb_across}


PING_PONGS = 2000


async def redis_ping_pong(key: str, *, answer: bool) -> list[float]:
    """One side of the floor: the answering side echoes each entry of `key`:up onto `key`:down;
    the asking side adds one and waits for its echo, PING_PONGS times (ms each, the first 10 %
    dropped as warm-up)."""
    from redis.asyncio import Redis

    redis = Redis.from_url(os.environ.get("SVC_BENCH_REDIS", "redis://127.0.0.1:6379/0"))
    up, down = f"{key}:up", f"{key}:down"
    mine, theirs = (down, up) if answer else (up, down)
    last, took = b"0-0", []
    for i in range(PING_PONGS + (1 if answer else 0)):
        start = time.perf_counter()
        if not answer or i:
            await redis.xadd(mine, {"n": str(i)})
        if answer and i == PING_PONGS:
            break
        entries = await redis.xread({theirs: last}, count=1, block=5000)
        if not entries:
            raise SystemExit(f"floor: no answer on {theirs} within 5 s")
        last = entries[0][1][-1][0]
        took.append((time.perf_counter() - start) * 1000)
    if not answer:  # the asking side read last: the answering one may still be writing
        await redis.delete(up, down)
    await redis.aclose()
    return took[PING_PONGS // 10 :]


def redis_floor() -> list[float]:
    key = f"svc-bench-floor:{os.getpid()}"
    answering = subprocess.Popen([sys.executable, __file__, "--answer-ping-pong", key], cwd=ROOT)
    try:
        return asyncio.run(redis_ping_pong(key, answer=False))
    finally:
        answering.wait(30)


def redis_cpu() -> float:
    """Redis's own CPU seconds so far (user + system, all its threads)."""
    import redis

    info = redis.Redis.from_url(os.environ.get("SVC_BENCH_REDIS", "redis://127.0.0.1:6379/0"))
    cpu = info.info("cpu")
    info.close()
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


async def list_latency(a: Any, b: Any, b_sessions: list[str]) -> list[float]:
    import httpx
    from websockets.asyncio.client import connect

    ws = await connect(
        f"{a.ws_url}/ws/sessions",
        origin=a.origin,
        additional_headers=a.owner_headers(),
        max_size=None,
    )
    await ws.recv()
    took = []
    before = redis_cpu()
    async with httpx.AsyncClient(headers=b.owner_headers(), timeout=30) as client:
        for i in range(LIST_CHANGES):
            sid, title = b_sessions[i % len(b_sessions)], f"renamed {i}"
            start = time.perf_counter()
            await client.patch(f"{b.url}/api/sessions/{sid}", json={"title": title})
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if any(r["id"] == sid and r.get("title") == title for r in frame):
                    break
            took.append((time.perf_counter() - start) * 1000)
    took.append((redis_cpu() - before) / LIST_CHANGES)  # the last value: Redis CPU per change
    await ws.close()
    return took


def start_sessions(daemon: Any, workspace: Path, count: int) -> list[str]:
    import httpx

    with httpx.Client(headers=daemon.owner_headers(), timeout=60) as client:
        client.post(f"{daemon.url}/api/workspaces", json={"path": str(workspace)})
        return [
            client.post(
                f"{daemon.url}/api/sessions",
                json={"agent": "shell", "workspace": str(workspace), "cols": 120, "rows": 40},
            ).json()["id"]
            for _ in range(count)
        ]


def wait_listed(daemon: Any, wanted: int) -> None:
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = httpx.get(f"{daemon.url}/api/sessions", headers=daemon.owner_headers()).json()
        if sum(r["status"] == "running" for r in rows) >= wanted:
            return
        time.sleep(0.2)
    raise SystemExit(f"{daemon.url} never listed {wanted} running sessions")


def main() -> int:
    from harness.fleet import running_fleet

    root = Path(tempfile.mkdtemp(prefix="svc-bench-fleet-"))
    settings = {"agents": {}}
    with running_fleet(root, settings=settings) as fleet:
        a, b, c = (fleet.daemon(n) for n in "abc")
        os.environ.setdefault("SHELL", "/bin/bash")
        made = {}
        for name in "abc":
            (root / f"work-{name}").mkdir()
            made[name] = start_sessions(
                fleet.daemon(name), root / f"work-{name}", SESSIONS_PER_MEMBER
            )
        wait_listed(a, 3 * SESSIONS_PER_MEMBER)
        measured = asyncio.run(echo_and_flood(a, c, made["c"][0]))
        *lists, redis_per_change = asyncio.run(list_latency(a, b, made["b"]))
        snapshot = len(json.dumps(httpx_rows(b)))
        rss = {name: rss_mib(fleet.daemon(name).proc.pid) for name in "abc"}
        measured["floor"] = redis_floor()
        report(measured, lists, rss)
        estimate(measured, redis_per_change, snapshot)
    return 0


def httpx_rows(daemon: Any) -> list[dict]:
    """One member's own rows of the sessions list (what it publishes on each change)."""
    import httpx

    rows = httpx.get(
        f"{daemon.url}/api/sessions", params={"machine": "b"}, headers=daemon.owner_headers()
    ).json()
    return [{k: v for k, v in r.items() if k not in ("machine", "machine_name")} for r in rows]


def estimate(measured: dict[str, Any], per_change_s: float, snapshot: int) -> None:
    """Where one Redis stops being enough, from this run's costs (one core for Redis)."""
    per_mb = measured["redis_cpu_per_mb"]
    print(
        f"  Redis CPU: {per_mb * 1000:.2f} ms per MB of terminal output across members "
        f"(→ ≈ {1 / per_mb:.0f} MB/s of it on one core); {per_change_s * 1000:.2f} ms per list "
        f"change with 3 members (one {snapshot / 1024:.0f} KiB snapshot of 50 sessions to 2 others)"
    )


def report(measured: dict[str, Any], lists: list[float], rss: dict[str, float]) -> None:
    echo, flood = measured["echo"], measured["flood"]
    e50 = {k: statistics.median(v) for k, v in echo.items()}
    e99 = {k: pct(v, 99) for k, v in echo.items()}
    f = {k: statistics.median(v) for k, v in flood.items()}
    print(f"fleet: 3 members × {SESSIONS_PER_MEMBER} shell sessions, one PostgreSQL, one Redis")
    for k in ("local", "across"):
        print(
            f"  echo {k:7s} p50 {e50[k]:6.2f} ms  p99 {e99[k]:6.2f} ms   "
            f"flood {f[k]:7.1f} MB/s (rounds: {', '.join(f'{x:.1f}' for x in flood[k])})"
        )
    ratio50, ratio99 = e50["across"] / e50["local"], e99["across"] / e99["local"]
    print(f"  echo across ÷ local: p50 {ratio50:.2f}× (bar ≤ 2×), p99 {ratio99:.2f}× (bar ≤ 3×)")
    floor = statistics.median(measured["floor"])
    print(
        f"  floor: a bare XADD → XREAD ping-pong between two processes p50 {floor:.2f} ms, "
        f"p99 {pct(measured['floor'], 99):.2f} ms; local + floor = "
        f"{(e50['local'] + floor) / e50['local']:.2f}× local, before any svc code"
    )
    print(f"  flood across ÷ local: {f['across'] / f['local']:.2f}× (bar ≥ 0.5×)")
    print(
        f"  list change on b → frame on a: p50 {statistics.median(lists):.1f} ms, "
        f"p99 {pct(lists, 99):.1f} ms, worst {max(lists):.1f} ms (bar p99 ≤ 100 ms)"
    )
    print("  RSS: " + ", ".join(f"{k} {v:.0f} MiB" for k, v in rss.items()))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--answer-ping-pong"]:
        asyncio.run(redis_ping_pong(sys.argv[2], answer=True))
        raise SystemExit(0)
    raise SystemExit(main())

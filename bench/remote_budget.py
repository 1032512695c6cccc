"""The remote listener's budget (issue 31, finding 5): the owner's `GET /api/sessions` on the main
port, quiet and while strangers hold 1,000 slow connections on the remote listener, in one run.

The daemon runs with 1,024 open files (`ulimit -n 1024`, what many systems give a process), as in
the finding that this bench reproduces. The strangers are a slowloris: each connection sends a
request line, then one header byte every 2 s and never ends its headers; a connection svc closes
is opened again 0.5 s later, so about 1,000 are always trying. Measured twice:

- with svc's budget (`remote.max_connections` 256, `remote.header_timeout_s` 10: the defaults);
- with the cap lifted (`remote.max_connections` 100,000) and 1,100 strangers, as in the
  finding: what svc did before.

Prints p50 and p99 of the owner's requests (c=1, keep-alive, BENCH_N of them) quiet and under
the strangers, their ratio, and how many of the owner's requests failed. The budget holds when
the p99 under the strangers is within 2x of quiet and none failed; the exit code says so.

Servers on core 0, the strangers and the owner's client on core 1.

    .venv/bin/python bench/remote_budget.py      (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support.machine import p50, percentile, pin  # noqa: E402

STRANGERS = int(os.environ.get("BENCH_STRANGERS", "1000"))
N = int(os.environ.get("BENCH_N", "400"))
OPEN_FILES = 1024
TRICKLE_S = 2.0
REOPEN_S = 0.5
SERVER_CORE, CLIENT_CORE = 0, 1


def start_svc(tmp: Path, max_connections: int) -> Any:
    from harness.daemon import Daemon, migrated_home

    settings = {"remote": {"max_connections": max_connections, "header_timeout_s": 10}}
    svc = Daemon(migrated_home(tmp / "home", settings)).start()
    assert svc.proc is not None
    resource.prlimit(svc.proc.pid, resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
    pin(svc.proc.pid, SERVER_CORE)
    return svc


class Strangers:
    """About STRANGERS slow connections, each reopened when svc closes it."""

    def __init__(self, port: int, count: int) -> None:
        self.port, self.count = port, count
        self.open = 0  # connected, as the stranger sees it (the kernel's backlog included)
        self.closed_by_svc = 0
        self._tasks: list[asyncio.Task] = []

    async def _one(self) -> None:
        while True:
            writer = None
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", self.port), 5
                )
                self.open += 1
                writer.write(b"GET / HTTP/1.1\r\nHost: tunnel.example.test\r\n")
                while True:
                    await writer.drain()
                    with contextlib.suppress(TimeoutError):
                        if await asyncio.wait_for(reader.read(1024), TRICKLE_S) == b"":
                            break  # svc hung up
                    writer.write(b"X")
            except (OSError, TimeoutError):
                pass
            finally:
                if writer is not None:
                    self.open -= 1
                    self.closed_by_svc += 1
                    writer.close()
            await asyncio.sleep(REOPEN_S)

    async def start(self) -> None:
        for _ in range(self.count):
            self._tasks.append(asyncio.ensure_future(self._one()))
            await asyncio.sleep(0)
        await asyncio.sleep(3)  # all of them are trying

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def owner_requests(svc: Any) -> tuple[list[float], int]:
    """(latencies in ms, failures) of N sequential GET /api/sessions on the main port."""
    import httpx

    times, failures = [], 0
    # A new connection for every request, as each CLI command and many browser loads make:
    # what a full descriptor table refuses first.
    fresh = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(
        base_url=svc.url, headers=svc.owner_headers(), timeout=10, limits=fresh
    ) as c:
        with contextlib.suppress(httpx.HTTPError):
            await c.get("/api/sessions")  # warm: Django's first request loads what it needs
        for _ in range(N):
            started = time.perf_counter()
            try:
                answer = await c.get("/api/sessions")
                answer.raise_for_status()
            except httpx.HTTPError:
                failures += 1
                await asyncio.sleep(0.05)
                continue
            times.append((time.perf_counter() - started) * 1000)
    return times, failures


def line(label: str, times: list[float], failures: int) -> str:
    if not times:
        return f"  {label:<30} every request failed ({failures})"
    return (
        f"  {label:<30} p50 {p50(times):6.2f} ms   p99 {percentile(times, 0.99):7.2f} ms   "
        f"failed {failures}/{N}"
    )


async def measure(tmp: Path, max_connections: int, count: int) -> tuple[float, float, int]:
    svc = start_svc(tmp / str(max_connections), max_connections)
    try:
        quiet, quiet_failed = await owner_requests(svc)
        strangers = Strangers(svc.auth()["remote_port"], count)
        await strangers.start()
        loaded, loaded_failed = await owner_requests(svc)
        held = strangers.open
        await strangers.stop()
    finally:
        svc.stop()
    print(f"remote.max_connections {max_connections}: {held} stranger connections open at the end")
    print(line("quiet", quiet, quiet_failed))
    print(line(f"{count} slow connections", loaded, loaded_failed))
    if not quiet or not loaded:
        return float("inf"), float("inf"), loaded_failed or N
    ratio = percentile(loaded, 0.99) / percentile(quiet, 0.99)
    print(f"  p99 ratio (slow connections / quiet): {ratio:.2f}x")
    return ratio, p50(loaded) / p50(quiet), loaded_failed


def main() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))
    pin(os.getpid(), CLIENT_CORE)
    print(f"owner: {N} x GET /api/sessions on the main port; svc limited to {OPEN_FILES} files")
    with tempfile.TemporaryDirectory() as tmp:
        ratio, _, failed = asyncio.run(measure(Path(tmp), 256, STRANGERS))
        # Before the budget, as the finding had it (1,100 connections): for comparison only.
        asyncio.run(measure(Path(tmp), 100_000, STRANGERS + 100))
    held = ratio <= 2.0 and failed == 0
    print(f"budget holds (p99 within 2x of quiet, no failure): {'yes' if held else 'NO'}")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())

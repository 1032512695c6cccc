"""Model-bridge benchmark: the same requests direct to the fake provider, through a minimal raw-ASGI
passthrough proxy (the least a Python ASGI proxy can do) hosted on daphne and on uvicorn, and
through svc (daphne) — in one run; and, to see what a change of server alone would give, svc's
own ASGI app and runtime on uvicorn (bench/support/svc_on_uvicorn.py; not a way to run svc).

Every server runs in its own session, pinned to core 0; the fake provider (it stands in for a
remote machine) and the load generator share core 1. Prints, for each server:

- c=1: p50 and p99 of 1000 requests, the servers' requests alternating (a passthrough pair and
  a translated pair for svc), and the latency each adds over going direct;
- c=32: requests/s (median of interleaved rounds), p50 / p99 under that load, each server's
  CPU per request, and the requests/s that CPU allows on its one core: the load generator and
  the fake provider share the other core, so a fast server (uvicorn's rows) can be held below
  its own limit by the client side;
- stream time to first chunk (c=1, 100 requests);
- svc's ratios to the raw proxy on each server (and the two servers' to each other).

    .venv/bin/python bench/bridge.py        (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support.machine import percentile, pin  # noqa: E402

N_SEQUENTIAL = int(os.environ.get("BENCH_N", "1000"))  # p99 = the 10th worst, not the 3rd
N_CONCURRENT = int(os.environ.get("BENCH_N32", "3000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
CONCURRENCY = 32
CHAT_BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hello bench"}]}
ANTHROPIC_BODY = {"model": "fake-model", "max_tokens": 64,
                  "messages": [{"role": "user", "content": "hello bench"}]}  # fmt: skip


# --- the raw passthrough proxy (served as bench.bridge:rawproxy) -------------------------------


class RawProxy:
    """The least a Python ASGI proxy can do: forward the body, relay the answer, watch for
    disconnects. No gate, no parsing, no translation."""

    def __init__(self) -> None:
        self.session: Any = None
        self.upstream = os.environ.get("BENCH_UPSTREAM", "")

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        import aiohttp

        if self.session is None:
            self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256))
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        url = self.upstream + scope["path"]
        async with self.session.post(
            url, data=body, headers={"content-type": "application/json"}
        ) as resp:
            ctype = resp.headers.get("content-type", "application/json").encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": resp.status,
                    "headers": [(b"content-type", ctype)],
                }
            )
            async for chunk in resp.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


rawproxy = RawProxy()


# --- processes -------------------------------------------------------------------------------


SERVER_CORE, CLIENT_CORE = 0, 1


@dataclass
class Target:
    name: str
    url: str
    body: dict
    pid: int  # the server's process, for its CPU per request


def _free_port() -> int:
    from harness.daemon import free_port

    return free_port()


def _wait_port(port: int, timeout: float = 30) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def start_fake() -> tuple[subprocess.Popen, int]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.fakes.fake_provider", "--port", str(port)], cwd=ROOT
    )
    _wait_port(port)
    pin(proc.pid, CLIENT_CORE)  # the provider stands in for a remote machine
    return proc, port


def start_rawproxy(server: str, fake_port: int) -> tuple[subprocess.Popen, int]:
    """The raw proxy on `server`, in its own session as svc's daemon is (with the kernel's
    autogroup scheduling a session is a scheduling group: a peer left in the load generator's
    group has its wake-ups favoured)."""
    port = _free_port()
    env = {**os.environ, "BENCH_UPSTREAM": f"http://127.0.0.1:{fake_port}"}
    if server == "daphne":
        argv = ["daphne", "-b", "127.0.0.1", "-p", str(port), "bench.bridge:rawproxy"]
    else:  # uvicorn's defaults here: the asyncio loop, h11 (no uvloop, no httptools installed)
        argv = ["uvicorn", "--host", "127.0.0.1", "--port", str(port), "--no-access-log",
                "--log-level", "warning", "--lifespan", "off", "bench.bridge:rawproxy"]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    _wait_port(port)
    pin(proc.pid, SERVER_CORE)
    return proc, port


def _bridge_home(fake_port: int) -> Path:
    from harness.daemon import migrated_home
    from harness.fakes.bridge_setup import bridge_settings
    from harness.fakes.fake_provider import FakeProvider

    return migrated_home(
        Path(tempfile.mkdtemp(prefix="svc-bench-")) / "home",
        bridge_settings(FakeProvider(fake_port)),
    )


def start_svc(fake_port: int) -> Any:
    from harness.daemon import Daemon

    svc = Daemon(_bridge_home(fake_port)).start()
    pin(svc.proc.pid, SERVER_CORE)
    return svc


def start_svc_on_uvicorn(fake_port: int) -> tuple[subprocess.Popen, int]:
    """svc's ASGI app on uvicorn (bench/support/svc_on_uvicorn.py: the runtime, none of svc's
    server hooks), its own home, its access log on as the daemon's is."""
    port = _free_port()
    env = {**os.environ, "SVC_HOME": str(_bridge_home(fake_port)), "BENCH_PORT": str(port)}
    argv = ["uvicorn", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
            "bench.support.svc_on_uvicorn:app"]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    _wait_port(port, timeout=60)
    pin(proc.pid, SERVER_CORE)
    return proc, port


# --- load ------------------------------------------------------------------------------------


async def _one(session: Any, url: str, body: dict, first_chunk: bool = False) -> float:
    started = time.perf_counter()
    async with session.post(url, json=body) as resp:
        if first_chunk:
            await resp.content.readany()
            elapsed = time.perf_counter() - started
            await resp.read()
            return elapsed
        await resp.read()
        assert resp.status == 200, resp.status
    return time.perf_counter() - started


async def alternating(
    targets: list[Target], n: int = N_SEQUENTIAL, first_chunk: bool = False, stream: bool = False
) -> list[list[float]]:
    """c=1, one kept-alive connection per target, the targets' requests alternating (the order
    rotated every round): a burst of other work on the machine lands on all alike."""
    import aiohttp

    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(aiohttp.ClientSession()) for _ in targets]
        bodies = [{**t.body, "stream": True} if stream else t.body for t in targets]
        for _ in range(20):  # warm the pools on both sides
            for k, t in enumerate(targets):
                await _one(sessions[k], t.url, bodies[k], first_chunk)
        out: list[list[float]] = [[] for _ in targets]
        for i in range(n):
            shift = i % len(targets)
            for k in [*range(shift, len(targets)), *range(shift)]:
                out[k].append(await _one(sessions[k], targets[k].url, bodies[k], first_chunk))
        return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process: per-request cost, robust to a busy machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def concurrent(url: str, body: dict, n: int = N_CONCURRENT) -> tuple[float, list[float]]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    latencies: list[float] = []
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(_one(session, url, body) for _ in range(CONCURRENCY * 2)))
        left = [n]

        async def worker() -> None:
            while left[0] > 0:
                left[0] -= 1
                latencies.append(await _one(session, url, body))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return n / (time.perf_counter() - started), latencies


def interleaved(targets: list[Target]) -> list[tuple[float, list[float], float]]:
    """ROUNDS rounds at c=32, the targets taken in turn (rotated): median requests/s, every
    latency, and the server's median CPU ms per request, per target."""
    rates: list[list[float]] = [[] for _ in targets]
    lats: list[list[float]] = [[] for _ in targets]
    cpus: list[list[float]] = [[] for _ in targets]
    for r in range(ROUNDS):
        for k in [*range(r % len(targets), len(targets)), *range(r % len(targets))]:
            before = cpu_seconds(targets[k].pid)
            rate, latencies = asyncio.run(concurrent(targets[k].url, targets[k].body))
            cpus[k].append((cpu_seconds(targets[k].pid) - before) * 1000 / (N_CONCURRENT + 64))
            rates[k].append(rate)
            lats[k].extend(latencies)
    return [
        (statistics.median(rates[k]), lats[k], statistics.median(cpus[k]))
        for k in range(len(targets))
    ]


def ms(values: list[float], q: float) -> float:
    return percentile(values, q) * 1000


# --- the run ---------------------------------------------------------------------------------


def main() -> None:
    fake, fake_port = start_fake()
    procs = {server: start_rawproxy(server, fake_port) for server in ("daphne", "uvicorn")}
    pin(os.getpid(), CLIENT_CORE)
    svc = start_svc(fake_port)
    procs["svc"] = start_svc_on_uvicorn(fake_port)
    try:
        report(fake, fake_port, procs, svc)
    finally:
        svc.stop()
        for proc in (*(p for p, _ in procs.values()), fake):
            proc.terminate()
            proc.wait(10)


def report(fake: Any, fake_port: int, procs: dict[str, tuple[Any, int]], svc: Any) -> None:
    chat, anthropic = "/v1/chat/completions", "/v1/messages"
    base = f"{svc.url}/svc/local-api/chat/bench"
    on_uvicorn = f"http://127.0.0.1:{procs['svc'][1]}/svc/local-api/chat/bench"
    raw = {server: f"http://127.0.0.1:{procs[server][1]}{chat}" for server in ("daphne", "uvicorn")}
    svc_uvicorn = procs["svc"][0].pid
    targets = [
        Target("svc passthrough", f"{base}/openai-chat{chat}", CHAT_BODY, svc.proc.pid),
        Target("svc translated", f"{base}/anthropic{anthropic}", ANTHROPIC_BODY, svc.proc.pid),
        Target("raw proxy on daphne", raw["daphne"], CHAT_BODY, procs["daphne"][0].pid),
        Target("raw proxy on uvicorn", raw["uvicorn"], CHAT_BODY, procs["uvicorn"][0].pid),
        Target("svc app on uvicorn*", f"{on_uvicorn}/openai-chat{chat}", CHAT_BODY, svc_uvicorn),
        Target("direct to the fake", f"http://127.0.0.1:{fake_port}{chat}", CHAT_BODY, fake.pid),
    ]
    c1 = asyncio.run(alternating(targets))
    c32 = interleaved(targets)
    ttfc = asyncio.run(alternating(targets, n=100, first_chunk=True, stream=True))
    direct = c1[-1]
    print(f"c=1 n={N_SEQUENTIAL} alternating; c={CONCURRENCY} {ROUNDS} rounds of {N_CONCURRENT}")
    print(f"{'':22s} {'c=1 p50':>8s} {'p99':>7s} {'added p50':>9s} {'p99':>6s}  "
          f"{'c=32 req/s':>10s} {'p50':>6s} {'p99':>6s} {'CPU ms/req':>10s} {'1 core':>6s}  "
          f"{'stream 1st p50':>14s}")  # fmt: skip
    for k, t in enumerate(targets):
        added = ms(c1[k], 0.5) - ms(direct, 0.5), ms(c1[k], 0.99) - ms(direct, 0.99)
        rate, lat, cpu = c32[k]
        print(f"{t.name:22s} {ms(c1[k], .5):8.2f} {ms(c1[k], .99):7.2f} {added[0]:9.2f} "
              f"{added[1]:6.2f}  {rate:10.0f} {ms(lat, .5):6.1f} {ms(lat, .99):6.1f} {cpu:10.3f} "
              f"{1000 / cpu:6.0f}  {ms(ttfc[k], .5):14.2f}")  # fmt: skip
    print("* svc's ASGI app and runtime on uvicorn, without svc's server hooks (bench only)")
    print("1 core: the req/s the server's CPU per request allows on its core; a c=32 req/s well")
    print("below it was held back by the client core (the load, the fake provider)")
    print("ratios (c=1 p50, p99 ; c=32 req/s, p50, p99):")
    for k, p in ((0, 2), (0, 3), (1, 2), (1, 3), (4, 3), (2, 3)):
        print(f"  {targets[k].name:20s} / {targets[p].name:20s} "
              f"{ms(c1[k], .5) / ms(c1[p], .5):.2f}x {ms(c1[k], .99) / ms(c1[p], .99):.2f}x ; "
              f"{c32[k][0] / c32[p][0]:.2f}x {ms(c32[k][1], .5) / ms(c32[p][1], .5):.2f}x "
              f"{ms(c32[k][1], .99) / ms(c32[p][1], .99):.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()

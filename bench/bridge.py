"""Model-bridge benchmark: the same requests direct to the fake provider, through a minimal raw-ASGI
passthrough proxy on daphne (the physical limit), and through svc (daphne) — in one run.

Prints added latency p50/p99 at concurrency 1 (a passthrough pair and a translated pair),
requests/s at 32 connections, stream time-to-first-chunk, and the ratios to the raw proxy. Each
server has one core; the fake provider and the load generator share the other.

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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support.machine import pin  # noqa: E402

N_SEQUENTIAL = int(os.environ.get("BENCH_N", "1000"))  # p99 = the 10th worst, not the 3rd
N_CONCURRENT = int(os.environ.get("BENCH_N32", "3000"))
CONCURRENCY = 32
CHAT_BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hello bench"}]}


# --- the raw passthrough proxy (run by daphne as bench.bridge:rawproxy) -------------------------


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


def _free_port() -> int:
    from tests.support.daemon import free_port

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
        [sys.executable, "-m", "tests.fakes.fake_provider", "--port", str(port)], cwd=ROOT
    )
    _wait_port(port)
    pin(proc.pid, CLIENT_CORE)  # the provider stands in for a remote machine
    return proc, port


def start_rawproxy(fake_port: int) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    env = {**os.environ, "BENCH_UPSTREAM": f"http://127.0.0.1:{fake_port}"}
    cmd = [
        sys.executable,
        "-m",
        "daphne",
        "-b",
        "127.0.0.1",
        "-p",
        str(port),
        "bench.bridge:rawproxy",
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _wait_port(port)
    pin(proc.pid, SERVER_CORE)
    return proc, port


def start_svc(fake_port: int) -> Any:
    from tests.fakes.bridge_setup import bridge_settings
    from tests.fakes.fake_provider import FakeProvider
    from tests.support.daemon import Daemon, migrated_home

    home = migrated_home(
        Path(tempfile.mkdtemp(prefix="svc-bench-")) / "home",
        bridge_settings(FakeProvider(fake_port)),
    )
    svc = Daemon(home).start()
    pin(svc.proc.pid, SERVER_CORE)
    return svc


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


async def sequential(
    url: str, body: dict, n: int = N_SEQUENTIAL, first_chunk: bool = False
) -> list[float]:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        for _ in range(20):  # warm the pools on both sides
            await _one(session, url, body, first_chunk)
        return [await _one(session, url, body, first_chunk) for _ in range(n)]


async def concurrent(url: str, body: dict, n: int = N_CONCURRENT) -> float:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(_one(session, url, body) for _ in range(CONCURRENCY * 2)))
        left = [n]

        async def worker() -> None:
            while left[0] > 0:
                left[0] -= 1
                await _one(session, url, body)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return n / (time.perf_counter() - started)


def pct(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100)[int(q) - 1] * 1000
        if len(values) > 1
        else values[0] * 1000
    )


def ms(values: list[float]) -> tuple[float, float]:
    return pct(values, 50), pct(values, 99)


# --- the run ---------------------------------------------------------------------------------


def svc_urls(svc: Any) -> dict[str, tuple[str, dict]]:
    base = f"{svc.url}/svc/local-api"
    anth = {
        "model": "fake-model",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hello bench"}],
    }
    return {
        "passthrough (openai-chat -> openai-chat)": (
            f"{base}/chat/bench/openai-chat/v1/chat/completions",
            CHAT_BODY,
        ),
        "translated (anthropic -> openai-chat)": (f"{base}/chat/bench/anthropic/v1/messages", anth),
    }


def main() -> None:
    fake, fake_port = start_fake()
    raw, raw_port = start_rawproxy(fake_port)
    pin(os.getpid(), CLIENT_CORE)
    svc = start_svc(fake_port)
    try:
        report(fake_port, raw_port, svc)
    finally:
        svc.stop()
        for proc in (raw, fake):
            proc.terminate()
            proc.wait(10)


def report(fake_port: int, raw_port: int, svc: Any) -> None:
    direct_url = f"http://127.0.0.1:{fake_port}/v1/chat/completions"
    raw_url = f"http://127.0.0.1:{raw_port}/v1/chat/completions"
    direct = asyncio.run(sequential(direct_url, CHAT_BODY))
    rawlat = asyncio.run(sequential(raw_url, CHAT_BODY))
    print(f"direct to fake           c=1 p50 {ms(direct)[0]:.2f} ms  p99 {ms(direct)[1]:.2f} ms")
    print(
        f"raw ASGI proxy (daphne)  added p50 {ms(rawlat)[0] - ms(direct)[0]:.2f} ms  "
        f"p99 {ms(rawlat)[1] - ms(direct)[1]:.2f} ms"
    )
    for name, (url, body) in svc_urls(svc).items():
        lat = asyncio.run(sequential(url, body))
        print(
            f"svc {name:40s} added p50 {ms(lat)[0] - ms(direct)[0]:.2f} ms  "
            f"p99 {ms(lat)[1] - ms(direct)[1]:.2f} ms"
        )
    rps_direct = asyncio.run(concurrent(direct_url, CHAT_BODY))
    rps_raw = asyncio.run(concurrent(raw_url, CHAT_BODY))
    url, body = svc_urls(svc)["passthrough (openai-chat -> openai-chat)"]
    rps_svc = asyncio.run(concurrent(url, body))
    turl, tbody = svc_urls(svc)["translated (anthropic -> openai-chat)"]
    rps_tr = asyncio.run(concurrent(turl, tbody))
    print(
        f"c=32 requests/s: direct {rps_direct:.0f}  raw proxy {rps_raw:.0f}  "
        f"svc passthrough {rps_svc:.0f}  svc translated {rps_tr:.0f}"
    )
    print(
        f"ratio svc/raw proxy at c=32: passthrough {rps_svc / rps_raw:.0%}  "
        f"translated {rps_tr / rps_raw:.0%}"
    )
    stream_body = {**CHAT_BODY, "stream": True}
    ttfc_direct = asyncio.run(sequential(direct_url, stream_body, n=100, first_chunk=True))
    ttfc_svc = asyncio.run(sequential(url, stream_body, n=100, first_chunk=True))
    ttfc_tr = asyncio.run(sequential(turl, {**tbody, "stream": True}, n=100, first_chunk=True))
    print(
        f"stream time-to-first-chunk p50: direct {ms(ttfc_direct)[0]:.2f} ms  "
        f"svc passthrough {ms(ttfc_svc)[0]:.2f} ms  svc translated {ms(ttfc_tr)[0]:.2f} ms"
    )


if __name__ == "__main__":
    main()

"""Preview proxy cost: the same dev server fetched directly and through svc, same run.

Upstream: the test suite's threaded static server (harness/upstream.py) serving a small
CSS file and a 64 MiB file. Client: aiohttp, on the preview origin with the owner's bearer header
(what a browser does with its grant cookie). Small: 1500 GETs at concurrency 16 → requests/s and
p50 latency. Large: 3 downloads of 64 MiB → MiB/s (median).
Bars (issue 5, proposed): proxied small-request rate ≥ 20 % of direct, large-download throughput
≥ 25 % of direct.

Run: `.venv/bin/python bench/preview_proxy.py` (make bench sets SVC_HOME to a temporary directory).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import httpx  # noqa: E402

from harness.daemon import Daemon, migrated_home  # noqa: E402
from harness.upstream import Upstream  # noqa: E402

SMALL, CONCURRENCY, BIG_MIB, BIG_ROUNDS = 1500, 16, 64, 3


async def small(url: str, headers: dict[str, str]) -> tuple[float, float]:
    latencies: list[float] = []
    queue = list(range(SMALL))
    async with aiohttp.ClientSession(headers=headers) as session:

        async def worker() -> None:
            while queue:
                queue.pop()
                started = time.perf_counter()
                async with session.get(url) as response:
                    await response.read()
                    assert response.status == 200, response.status
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        elapsed = time.perf_counter() - started
    return SMALL / elapsed, statistics.median(latencies) * 1000


async def big(url: str, headers: dict[str, str]) -> float:
    rates = []
    async with aiohttp.ClientSession(headers=headers) as session:
        for _ in range(BIG_ROUNDS):
            started = time.perf_counter()
            size = 0
            async with session.get(url) as response:
                async for chunk in response.content.iter_chunked(1 << 16):
                    size += len(chunk)
            assert size == BIG_MIB << 20, size
            rates.append(BIG_MIB / (time.perf_counter() - started))
    return statistics.median(rates)


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "site"
        root.mkdir()
        (root / "style.css").write_text("#headline { color: rgb(12, 34, 56); }\n" * 20)
        (root / "big.bin").write_bytes(os.urandom(1 << 20) * BIG_MIB)
        home = migrated_home(Path(scratch) / "home")
        daemon = Daemon(home).start()
        try:
            with Upstream(root) as upstream:
                made = httpx.post(
                    f"{daemon.url}/api/previews",
                    json={"port": upstream.port},
                    headers=daemon.owner_headers(),
                ).json()
                via = {**daemon.owner_headers(), "Host": f"{made['slug']}.localhost:{daemon.port}"}
                direct = f"http://127.0.0.1:{upstream.port}"
                report(asyncio.run(run(direct, daemon.url, via)))
        finally:
            daemon.stop()


async def run(
    direct: str, svc: str, via: dict[str, str]
) -> tuple[dict[str, float], tuple[float, float]]:
    d_rps, d_p50 = await small(direct + "/style.css", {})
    p_rps, p_p50 = await small(svc + "/style.css", via)
    d_big = await big(direct + "/big.bin", {})
    p_big = await big(svc + "/big.bin", via)
    return {"d_rps": d_rps, "d_p50": d_p50, "p_rps": p_rps, "p_p50": p_p50}, (d_big, p_big)


def report(results: tuple[dict[str, float], tuple[float, float]]) -> None:
    small_r, (d_big, p_big) = results
    ratio_small = small_r["p_rps"] / small_r["d_rps"]
    ratio_big = p_big / d_big
    print(f"small GET  direct {small_r['d_rps']:8.0f} req/s  p50 {small_r['d_p50']:6.2f} ms")
    print(f"small GET  proxied{small_r['p_rps']:8.0f} req/s  p50 {small_r['p_p50']:6.2f} ms")
    print(f"  ratio {ratio_small:.2f} (bar ≥ 0.20)")
    print(f"{BIG_MIB} MiB   direct {d_big:8.0f} MiB/s   proxied {p_big:8.0f} MiB/s")
    print(f"  ratio {ratio_big:.2f} (bar ≥ 0.25)")
    if ratio_small < 0.20 or ratio_big < 0.25:
        raise SystemExit("preview proxy below its bar")


if __name__ == "__main__":
    main()

"""MCP benchmark: svc's /mcp beside a bare `MCPServer` with the same tools
(bench/support/mcp_peer.py), the peer hosted on daphne and on uvicorn, all in one run.

Every server runs in its own session (see `start_peer`) pinned to core 0; the load generator is
pinned to core 1. For `tools/list` and a tool call (`get_session_id`, one read of the session
row) it prints, per server:

- c=1 through the official `mcp` client (it speaks 2026-07-28: one self-contained POST per call),
  the three servers' calls alternating: p50, p99, and the server's CPU per call;
- c=16 requests/s (median of interleaved rounds), p50 and p99 under that load, and the server's
  CPU per request, twice: 16 callers POSTing exactly what the SDK sends (2026-07-28), and 16
  POSTing as today's agent CLIs do after their `initialize` (2025-11-25, the SDK's per-request
  stateless transport);
- svc's ratios to each peer.

    .venv/bin/python bench/mcp_calls.py        (make bench runs it with a temp SVC_HOME)
    BENCH_PROFILE=/tmp/svc.txt …    also samples svc with py-spy (pip install py-spy) for 20 s of
                                    the get_session_id rows: whole stacks, holding the GIL, in
                                    py-spy's raw format; sampling pauses svc, so that run's
                                    numbers are not comparable
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support.machine import percentile, pin  # noqa: E402

N_SEQUENTIAL = int(os.environ.get("BENCH_N", "300"))
N_CONCURRENT = int(os.environ.get("BENCH_N16", "800"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
CONCURRENCY = 16
SERVER_CORE, CLIENT_CORE = 0, 1
MODERN, LEGACY = "2026-07-28", "2025-11-25"


@dataclass
class Target:
    name: str
    pid: int
    url: str
    proc: Any = None
    rows: dict[str, Any] = field(default_factory=dict)


# --- processes -------------------------------------------------------------------------------


def _wait(port: int, timeout: float = 30) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def start_peer(server: str, home: Path) -> Target:
    """The bare MCPServer on `server` (daphne or uvicorn), reading svc's database.

    Its own session, as svc's daemon has (harness.daemon starts it with start_new_session,
    as a terminal's `make run` is): with the kernel's autogroup scheduling a session is a
    scheduling group, and a peer left in the load generator's group had its thread wake-ups
    favoured (a tool call's thread hop is two wake-ups)."""
    from harness.daemon import free_port

    port = free_port()
    if server == "daphne":
        argv = ["daphne", "-b", "127.0.0.1", "-p", str(port), "bench.support.mcp_peer:daphne_app"]
    else:  # uvicorn's defaults here: the asyncio loop, h11 (no uvloop, no httptools installed)
        argv = ["uvicorn", "--host", "127.0.0.1", "--port", str(port), "--no-access-log",
                "--log-level", "warning", "bench.support.mcp_peer:app"]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv], cwd=ROOT, env={**os.environ, "SVC_HOME": str(home)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    _wait(port)
    pin(proc.pid, SERVER_CORE)
    return Target(f"peer on {server}", proc.pid, f"http://127.0.0.1:{port}/mcp", proc)


def start_svc() -> Any:
    import httpx

    from harness.daemon import Daemon, migrated_home

    home = migrated_home(Path(tempfile.mkdtemp(prefix="svc-bench-")) / "home")
    svc = Daemon(home).start()
    assert svc.proc is not None
    pin(svc.proc.pid, SERVER_CORE)
    work = home.parent / "work"
    work.mkdir()
    session = httpx.post(
        f"{svc.url}/api/sessions", json={"agent": "shell", "workspace": str(work)},
        headers=svc.owner_headers(), timeout=30,
    ).json()  # fmt: skip
    svc.session_id = session["id"]  # type: ignore[attr-defined]
    return svc


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process: per-request cost, robust to a busy machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- c=1 through the SDK -----------------------------------------------------------------------


def _client(url: str, token: str) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


async def _once(client: Any, call: tuple[str, dict] | None) -> float:
    started = time.perf_counter()
    if call is None:
        await client.list_tools()
    else:
        result = await client.call_tool(*call)
        assert not result.is_error, result
    return time.perf_counter() - started


async def sdk_latencies(
    targets: list[Target], token: str, call: tuple[str, dict] | None
) -> list[tuple[list[float], float]]:
    """c=1 through the official client, one connection per server, as an agent calls tools.

    The calls alternate between the servers (the order rotated every round), so a burst of
    other work on the machine lands on all alike; measured one after the other, the ratio read
    whatever the machine did in each phase. Returns (latencies, server CPU ms/call) per target."""
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(_client(t.url, token)) for t in targets]
        for _ in range(20):
            for client in clients:
                await _once(client, call)
        latencies: list[list[float]] = [[] for _ in targets]
        before = [cpu_seconds(t.pid) for t in targets]
        for i in range(N_SEQUENTIAL):
            shift = i % len(clients)
            for k in [*range(shift, len(clients)), *range(shift)]:
                latencies[k].append(await _once(clients[k], call))
        cpu = [
            (cpu_seconds(t.pid) - start) * 1000 / N_SEQUENTIAL
            for t, start in zip(targets, before, strict=True)
        ]
        return list(zip(latencies, cpu, strict=True))


# --- c=16 ------------------------------------------------------------------------------------


def _rpc(call: tuple[str, dict] | None, version: str) -> tuple[dict[str, str], bytes]:
    """Headers and body of one request, byte for byte what the SDK's client sends (2026-07-28)
    or what a 2025-11-25 client sends once initialized (stateless: no session id)."""
    method = "tools/list" if call is None else "tools/call"
    params: dict[str, Any] = {} if call is None else {"name": call[0], "arguments": call[1]}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": version}  # fmt: skip
    if version == MODERN:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers["Mcp-Method"] = method
        if call is not None:
            headers["Mcp-Name"] = call[0]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return headers, json.dumps(body, separators=(",", ":")).encode()


async def load(url: str, token: str, call: tuple[str, dict] | None, version: str):
    """c=16 POSTs on kept-alive connections: (requests/s, latencies)."""
    import aiohttp

    headers, body = _rpc(call, version)
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    latencies: list[float] = []
    async with aiohttp.ClientSession(
        connector=connector, headers={**headers, "Authorization": f"Bearer {token}"}
    ) as session:

        async def one() -> None:
            started = time.perf_counter()
            async with session.post(url, data=body) as resp:
                text = await resp.read()
                assert resp.status == 200 and b'"error"' not in text, (resp.status, text[:300])
                assert b'"isError":true' not in text, text[:300]
            latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(one() for _ in range(CONCURRENCY * 2)))
        latencies.clear()
        left = [N_CONCURRENT]

        async def worker() -> None:
            while left[0] > 0:
                left[0] -= 1
                await one()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return N_CONCURRENT / (time.perf_counter() - started), latencies


def interleaved(targets: list[Target], token: str, call: tuple[str, dict] | None, version: str):
    """ROUNDS rounds, the servers taken in turn (rotated): a burst of other work on the machine
    hits every server alike. Per target: median req/s, p50 and p99 of all latencies, median
    server CPU ms per request."""
    rates: list[list[float]] = [[] for _ in targets]
    cpus: list[list[float]] = [[] for _ in targets]
    lats: list[list[float]] = [[] for _ in targets]
    for r in range(ROUNDS):
        for k in [*range(r % len(targets), len(targets)), *range(r % len(targets))]:
            before = cpu_seconds(targets[k].pid)
            rate, latencies = asyncio.run(load(targets[k].url, token, call, version))
            cpus[k].append((cpu_seconds(targets[k].pid) - before) * 1000 / (N_CONCURRENT + 32))
            rates[k].append(rate)
            lats[k].extend(latencies)
    return [
        (statistics.median(rates[k]), lats[k], statistics.median(cpus[k]))
        for k in range(len(targets))
    ]


# --- same tools ------------------------------------------------------------------------------


async def tool_definitions(url: str, token: str) -> list[dict]:
    async with _client(url, token) as client:
        tools = (await client.list_tools()).tools
    keys = ("name", "description", "input_schema", "output_schema")
    return [{k: getattr(t, k, None) for k in keys} for t in tools]


def check_same_tools(targets: list[Target], token: str) -> None:
    """The peer must offer exactly svc's tools, or the comparison is not of like with like."""
    svc = asyncio.run(tool_definitions(targets[0].url, token))
    for target in targets[1:]:
        if asyncio.run(tool_definitions(target.url, token)) != svc:
            raise SystemExit(
                f"{target.name} lists other tools than svc: update bench/support/mcp_peer.py"
            )


# --- report ----------------------------------------------------------------------------------


def ms(values: list[float], q: float) -> float:
    return percentile(values, q) * 1000


def print_rows(name: str, targets: list[Target], rows: dict[str, list[tuple]]) -> None:
    print(f"\n{name}")
    print(f"  {'':15s} {'':17s} {'p50 ms':>8s} {'p99 ms':>8s} {'req/s':>7s} {'CPU ms/req':>10s}"
          f"   svc / this: p50, p99, req/s")  # fmt: skip
    for label, results in rows.items():
        svc_row = results[0]
        for target, (rate, latencies, cpu) in zip(targets, results, strict=True):
            ratios = ""
            if target is not targets[0]:
                ratios = (f"   {ms(svc_row[1], .5) / ms(latencies, .5):.2f}x "
                          f"{ms(svc_row[1], .99) / ms(latencies, .99):.2f}x")  # fmt: skip
                ratios += f" {svc_row[0] / rate:.2f}x" if rate else ""
            rate_s = f"{rate:7.0f}" if rate else f"{'':>7s}"
            print(f"  {label:15s} {target.name:17s} {ms(latencies, .5):8.2f} "
                  f"{ms(latencies, .99):8.2f} {rate_s} {cpu:10.2f}{ratios}")  # fmt: skip


def profile(pid: int, seconds: int) -> subprocess.Popen | None:
    out = os.environ.get("BENCH_PROFILE")
    if not out:
        return None
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(pid), "--gil",
         "--rate", "250", "--duration", str(seconds), "--format", "raw", "-o", out],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def main() -> None:
    pin(os.getpid(), CLIENT_CORE)
    svc = start_svc()
    peers = [start_peer("daphne", svc.home), start_peer("uvicorn", svc.home)]
    targets = [Target("svc (daphne)", svc.proc.pid, f"{svc.url}/mcp"), *peers]
    token = svc.mcp_token
    try:
        check_same_tools(targets, token)
        print(f"svc and the bare MCPServer (same 7 tools); c=1 n={N_SEQUENTIAL} each, "
              f"c={CONCURRENCY} {ROUNDS} rounds of {N_CONCURRENT}")  # fmt: skip
        for name, call in (
            ("tools/list", None),
            ("get_session_id", ("get_session_id", {"session_id": svc.session_id})),
        ):  # fmt: skip
            spy = profile(svc.proc.pid, 20) if call else None
            rows: dict[str, list[tuple]] = {}
            c1 = asyncio.run(sdk_latencies(targets, token, call))
            rows["c=1 SDK"] = [(0.0, lat, cpu) for lat, cpu in c1]
            rows[f"c=16 {MODERN}"] = interleaved(targets, token, call, MODERN)
            rows[f"c=16 {LEGACY}"] = interleaved(targets, token, call, LEGACY)
            if spy is not None:
                spy.wait()
            print_rows(name, targets, rows)
    finally:
        svc.stop()
        for peer in peers:
            peer.proc.terminate()
        for peer in peers:
            try:
                peer.proc.wait(5)
            except subprocess.TimeoutExpired:  # daphne waits on the session manager's task
                peer.proc.kill()
                peer.proc.wait(5)


if __name__ == "__main__":
    main()

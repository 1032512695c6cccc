"""Remote access through an SSH reverse tunnel: svc's remote listener beside a bare static file
server behind the same kind of tunnel, in one run.

One SSH server (harness/fakes/ssh_server.py, asyncssh's server side) carries two reverse forwards:
svc's own `ssh` tunnel to its remote listener, and one the bench opens with the same keys
(`asyncssh.connect(...).forward_remote_port(...)`) to a bare aiohttp static server. Each forward
runs in its server's own process and event loop — asyncssh's client beside daphne in svc, beside
aiohttp in the bare peer — so the two sides are alike but for what serves the request.

Prints: `GET /static/svc/pair.js` (open on the remote listener, no pairing) requests/s at c=16
(keep-alive connections, median of ROUNDS interleaved rounds) with each server process's CPU per
request, and p50/p99 at c=1 (the four targets alternating, so a burst of other work lands on all
alike), through each tunnel and direct; then terminal keystroke echo (the PTY's own echo under
`cat`) on a session's `/ws` on the main port with the owner token and through the tunnel as a
paired browser (cookie, page-key subprotocol, Origin), alternating.

Servers (svc, the bare peer and the SSH server) are pinned to one core, the clients to the other.

    .venv/bin/python bench/remote.py        (make bench runs it with a temp SVC_HOME)
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

from bench.support.machine import pin  # noqa: E402

PATH = "/static/svc/pair.js"
SECONDS = float(os.environ.get("BENCH_SECONDS", "1.2"))  # one c=16 run of one target
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "6"))
N_SEQUENTIAL = int(os.environ.get("BENCH_N", "300"))  # c=1 requests per target
KEYSTROKES = int(os.environ.get("BENCH_KEYS", "200"))
CONCURRENCY = 16
SERVER_CORE, CLIENT_CORE = 0, 1
BARE_PEER = ROOT / "bench" / "support" / "bare_static_peer.py"


# --- processes ---------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process: per-request cost, robust to a busy machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_bare(ssh: Any) -> tuple[subprocess.Popen, int, int]:
    """(process, its direct port, its forwarded port)."""
    from harness.daemon import free_port

    config = {
        "ssh_port": ssh.port,
        "key_file": str(ssh.user_key_path),
        "known_hosts": str(ssh.known_hosts("known_hosts_bare")),
        "remote_port": free_port(),
    }
    # Its own session, as svc's daemon has (autogroup scheduling: see bench/mcp_calls.py).
    proc = subprocess.Popen(
        [sys.executable, str(BARE_PEER), json.dumps(config)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if not line or line[0] != "ready":
        raise RuntimeError(f"the bare peer did not start: {line!r}")
    pin(proc.pid, SERVER_CORE)
    return proc, int(line[1]), int(line[2])


def start_svc(ssh: Any, tmp: Path) -> tuple[Any, int, Path]:
    """(daemon, its forwarded port, a declared workspace); returns once the tunnel is online."""
    import httpx

    from harness.daemon import Daemon, free_port, migrated_home
    from harness.termclient import shell_env

    forwarded = free_port()
    work = tmp / "work"
    work.mkdir()
    settings = {
        "workspaces": [str(work)],
        "tunnels": {"vps": ssh.tunnel(forwarded, keepalive_s=15)},
    }
    svc = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    assert svc.proc is not None
    pin(svc.proc.pid, SERVER_CORE)
    deadline = time.monotonic() + 30
    while True:
        rows = httpx.get(f"{svc.url}/api/tunnels", headers=svc.owner_headers()).json()
        row = next(r for r in rows if r["name"] == "vps")
        if row["status"] == "online":
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"svc's tunnel is not online: {row}")
        time.sleep(0.1)
    pin(svc.proc.pid, SERVER_CORE)  # threads started since
    return svc, forwarded, work


def pair(svc: Any, url: str) -> tuple[str, str]:
    """A browser paired through the tunnel (as tests/e2e/test_remote_tunnel.py's Remote.pair):
    (its svc_remote cookie, the dashboard page's key)."""
    import httpx

    with httpx.Client(base_url=url, timeout=10) as client:
        started = client.post("/pair/start").json()
        approved = httpx.post(
            f"{svc.url}/api/pairings/approve", json={"code": started["code"]},
            headers=svc.owner_headers(),
        )  # fmt: skip
        assert approved.status_code == 200, approved.text
        status = client.get("/pair/status", params={"pair_id": started["pair_id"]})
        assert status.json() == {"status": "approved"}, status.text
        page = client.get("/", headers={"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"})
        key = page.text.split('name="svc-page-key" content="', 1)[1].split('"', 1)[0]
        return client.cookies["svc_remote"], key


# --- HTTP load ---------------------------------------------------------------------------------


async def latencies(urls: list[str]) -> list[list[float]]:
    """c=1, one keep-alive connection per target, the targets taken in turn (order reversed on
    every other pass)."""
    import aiohttp

    async with contextlib.AsyncExitStack() as stack:
        sessions = [
            await stack.enter_async_context(
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1))
            )
            for _ in urls
        ]

        async def once(k: int) -> float:
            started = time.perf_counter()
            async with sessions[k].get(urls[k]) as resp:
                await resp.read()
                assert resp.status == 200, (urls[k], resp.status)
            return time.perf_counter() - started

        for _ in range(20):
            for k in range(len(urls)):
                await once(k)
        samples: list[list[float]] = [[] for _ in urls]
        for i in range(N_SEQUENTIAL):
            order = range(len(urls)) if i % 2 == 0 else reversed(range(len(urls)))
            for k in order:
                samples[k].append(await once(k))
        return samples


async def rps(url: str, size: int) -> tuple[float, int]:
    """c=16 on keep-alive connections for SECONDS: (requests/s, requests made)."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> None:
            async with session.get(url) as resp:
                body = await resp.read()
                assert resp.status == 200 and len(body) == size, (url, resp.status, len(body))

        await asyncio.gather(*(one() for _ in range(CONCURRENCY * 2)))  # open the connections
        done = [0]
        started = time.perf_counter()
        until = started + SECONDS

        async def worker() -> None:
            while time.perf_counter() < until:
                await one()
                done[0] += 1

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return done[0] / (time.perf_counter() - started), done[0] + CONCURRENCY * 2


def load(targets: list[tuple[str, str, list[int]]], size: int) -> list[list[tuple[float, float]]]:
    """ROUNDS rounds, the targets taken in turn in each: per round, per target, (requests/s, CPU
    ms per request of the processes in its path). Short runs in many rounds, so a burst of other
    work on the machine hits every target alike instead of deciding a ratio."""
    rounds = []
    for _ in range(ROUNDS):
        row = []
        for _, url, pids in targets:
            before = [cpu_seconds(p) for p in pids]
            rate, count = asyncio.run(rps(url, size))
            cpu = sum(cpu_seconds(p) - b for p, b in zip(pids, before, strict=True))
            row.append((rate, cpu * 1000 / count))
        rounds.append(row)
    return rounds


# --- terminal echo -----------------------------------------------------------------------------


async def echo(svc: Any, work: Path, tunnel_url: str, cookie: str, key: str) -> list[list[float]]:
    """Two shell sessions, each running `cat` (the PTY echoes every key, no prompt redraws): one
    viewed on the main port, one through the tunnel; keys typed into each in turn, timed from
    send to the key's echo arriving. Returns [local, tunnel] seconds."""
    import httpx
    import websockets

    async def session() -> str:
        async with httpx.AsyncClient(headers=svc.owner_headers(), timeout=30) as client:
            made = await client.post(
                f"{svc.url}/api/sessions",
                json={"agent": "shell", "workspace": str(work), "kind": "terminal"},
            )
            assert made.status_code == 201, made.text
            return made.json()["id"]

    local_id, tunnel_id = await session(), await session()
    ws_tunnel = "ws" + tunnel_url.removeprefix("http")
    sockets = [
        await websockets.connect(
            f"{svc.ws_url}/ws?session_id={local_id}&token={svc.owner_token}",
            origin=websockets.Origin(svc.origin), open_timeout=10, max_size=None,
        ),
        await websockets.connect(
            f"{ws_tunnel}/ws?session_id={tunnel_id}",
            subprotocols=[websockets.Subprotocol(f"svc.page.{key}")],
            additional_headers={"Cookie": f"svc_remote={cookie}"},
            origin=websockets.Origin(tunnel_url), open_timeout=10, max_size=None,
        ),
    ]  # fmt: skip
    try:
        for ws in sockets:
            assert isinstance(await asyncio.wait_for(ws.recv(), 10), bytes)  # the scrollback
            state = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert state.get("type") == "running", state

        async def until(ws: Any, needle: bytes, timeout: float = 10) -> None:
            out = b""
            async with asyncio.timeout(timeout):
                while needle not in out:
                    frame = await ws.recv()
                    if isinstance(frame, bytes):
                        out = (out + frame)[-4096:]

        async def quiet(ws: Any) -> None:
            with contextlib.suppress(TimeoutError):
                while True:
                    await asyncio.wait_for(ws.recv(), 0.3)

        for ws in sockets:
            await ws.send(b"stty -echoctl; echo ca''t-ready; exec cat\r")
            await until(ws, b"cat-ready")
            await quiet(ws)
        keys = [bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyz0123456789"]
        samples: list[list[float]] = [[], []]
        for i in range(KEYSTROKES + 20):
            if i and i % 30 == 0:  # a fresh line now and then: cat repeats it, let that pass
                for ws in sockets:
                    await ws.send(b"\r")
                    await quiet(ws)
            order = (0, 1) if i % 2 == 0 else (1, 0)
            for k in order:
                sent = time.perf_counter()
                await sockets[k].send(keys[i % len(keys)])
                await until(sockets[k], keys[i % len(keys)])
                if i >= 20:  # the first 20 warm up
                    samples[k].append(time.perf_counter() - sent)
        return samples
    finally:
        for ws in sockets:
            await ws.close()


# --- report ------------------------------------------------------------------------------------


def ms(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000


def main() -> None:
    import httpx

    from harness.ssh import SSHServer

    pin(os.getpid(), CLIENT_CORE)
    tmp = Path(tempfile.mkdtemp(prefix="svc-bench-remote-"))
    ssh = SSHServer(tmp / "sshd").start()
    assert ssh.proc is not None
    pin(ssh.proc.pid, SERVER_CORE)
    svc = bare = None
    try:
        svc, svc_forwarded, work = start_svc(ssh, tmp)
        bare, bare_direct, bare_forwarded = start_bare(ssh)
        assert svc.proc is not None
        remote_port = svc.auth()["remote_port"]
        tunnel_url = f"http://127.0.0.1:{svc_forwarded}"
        size = len((ROOT / "static" / "svc" / "pair.js").read_bytes())
        names_urls_pids = [
            ("svc via tunnel", f"{tunnel_url}{PATH}", [svc.proc.pid, ssh.proc.pid]),
            ("bare via tunnel", f"http://127.0.0.1:{bare_forwarded}{PATH}", [bare.pid, ssh.proc.pid]),  # noqa: E501
            ("svc direct", f"http://127.0.0.1:{remote_port}{PATH}", [svc.proc.pid]),
            ("bare direct", f"http://127.0.0.1:{bare_direct}{PATH}", [bare.pid]),
        ]  # fmt: skip
        for name, url, _ in names_urls_pids:
            got = httpx.get(url)
            assert got.status_code == 200 and len(got.content) == size, (name, got.status_code)
        lat = asyncio.run(latencies([url for _, url, _ in names_urls_pids]))
        rounds = load(names_urls_pids, size)
        cookie, key = pair(svc, tunnel_url)
        local_echo, tunnel_echo = asyncio.run(echo(svc, work, tunnel_url, cookie, key))
    finally:
        if svc is not None:
            svc.stop()
        if bare is not None:
            bare.terminate()
            bare.wait(10)
        ssh.stop()

    def median(k: int, field: int) -> float:
        return statistics.median(r[k][field] for r in rounds)

    def paired(a: int, b: int, field: int) -> float:
        """The median over rounds of one target's figure over another's in the same round."""
        return statistics.median(r[a][field] / r[b][field] for r in rounds)

    print(
        f"GET {PATH} ({size} B): req/s at c={CONCURRENCY} on keep-alive connections, {ROUNDS} "
        f"rounds of {SECONDS:g} s, targets in turn (median); CPU/req is the server process's "
        f"(+ the SSH server's via a tunnel); c=1: {N_SEQUENTIAL} each, targets alternating."
    )
    print()
    print("| target | req/s c=16 | CPU/req | p50 c=1 | p99 c=1 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for k, ((name, _, _), samples) in enumerate(zip(names_urls_pids, lat, strict=True)):
        print(
            f"| {name} | {median(k, 0):,.0f} | {median(k, 1):.2f} ms | {ms(samples, 50):.2f} ms "
            f"| {ms(samples, 99):.2f} ms |"
        )
    ratios = {}
    for label, a, b in (("via tunnel", 0, 1), ("direct", 2, 3)):
        ratios[label] = (
            paired(a, b, 0), paired(a, b, 1),
            ms(lat[a], 50) / ms(lat[b], 50), ms(lat[a], 99) / ms(lat[b], 99),
        )  # fmt: skip
        r, c, p50, p99 = ratios[label]
        bold = "**" if label == "via tunnel" else ""
        print(
            f"| {bold}svc / bare {label}{bold} | {bold}{r:.2f}x{bold} | {c:.2f}x "
            f"| {bold}{p50:.2f}x{bold} | {bold}{p99:.2f}x{bold} |"
        )
    print()
    print(
        f"Added by the tunnel at c=1, p50 via tunnel - p50 direct: svc "
        f"{ms(lat[0], 50) - ms(lat[2], 50):+.2f} ms, bare {ms(lat[1], 50) - ms(lat[3], 50):+.2f} ms"
    )
    print()
    print(f"Terminal keystroke echo (`cat` in a PTY), {KEYSTROKES} keys each, alternating:")
    print()
    print("| terminal /ws | p50 | p99 |")
    print("| --- | ---: | ---: |")
    echoes = (("main port, owner token", local_echo), ("via tunnel, paired", tunnel_echo))
    for name, samples in echoes:
        print(f"| {name} | {ms(samples, 50):.2f} ms | {ms(samples, 99):.2f} ms |")
    e50 = ms(tunnel_echo, 50) / ms(local_echo, 50)
    e99 = ms(tunnel_echo, 99) / ms(local_echo, 99)
    print(f"| **tunnel / local** | **{e50:.2f}x** | **{e99:.2f}x** |")
    print()
    r, c, p50, p99 = ratios["via tunnel"]
    print(
        f"Summary: through the SSH tunnel svc serves {median(0, 0):,.0f} req/s = {r:.2f}x the "
        f"bare peer's ({c:.2f}x its CPU per request; c=1 p50 {p50:.2f}x, p99 {p99:.2f}x); "
        f"keystroke echo through the tunnel p50 {ms(tunnel_echo, 50):.2f} ms vs "
        f"{ms(local_echo, 50):.2f} ms local ({e50:.2f}x)."
    )


if __name__ == "__main__":
    main()

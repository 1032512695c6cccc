"""PTY → WebSocket throughput and keystroke echo latency: svc through its holder, svc hosting the
PTY itself (SVC_HOLDER=0, "direct") and terminado, same run.

All three serve `bash -l` in a PTY to a `websockets` client on loopback. Throughput: the bytes of
`head -c 30000000 /dev/zero | base64` between two markers, over the time between them (7 rounds,
interleaved, median: one round is about a second, and with 3 the median moved by ±10 % from run
to run on a quiet machine). Echo: one keystroke at a time into bash's prompt, time until the next
output frame (p50/p99 of 600, the servers taking turns key by key). Ctrl-C mid-flood: `yes`
floods the PTY; once 1 MB has arrived,
Ctrl-C and a command are typed, and the time until that command's output arrives is how long the
person waits for a usable terminal (5 rounds each, interleaved).
Bars (issue 4): svc throughput ≥ 50 % of terminado's, echo p50 ≤ 5 ms; (issue 8) Ctrl-C mid-flood
to a usable prompt, worst of 5 ≤ 1 s; (issue 33) through the holder, echo p50 ≤ 1.2× direct and
flood throughput ≥ 0.9× direct.

Run: `.venv/bin/python bench/terminal.py` (make bench sets SVC_HOME to a temporary directory).
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
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FLOOD = "printf '\\001BEGIN\\001'; head -c 30000000 /dev/zero | base64; printf '\\001END\\001'"
ROUNDS = 7
KEYSTROKES = 600

Send = Callable[[bytes], Awaitable[None]]
Recv = Callable[[], Awaitable[bytes]]


def shell_env() -> dict[str, str]:
    """Both servers' shells start from an empty HOME: no rc files, the same prompt."""
    global _shell_home
    _shell_home = _shell_home or tempfile.mkdtemp(prefix="svc-bench-user-")
    return {"HOME": _shell_home, "SHELL": "/bin/bash"}


_shell_home = ""


def serve_terminado(port: int) -> None:
    import tornado.ioloop
    import tornado.web
    from terminado import SingleTermManager, TermSocket

    manager = SingleTermManager(shell_command=["bash", "-l"])
    app = tornado.web.Application([(r"/websocket", TermSocket, {"term_manager": manager})])
    app.listen(port, "127.0.0.1")
    tornado.ioloop.IOLoop.current().start()


async def throughput(send: Send, recv: Recv) -> float:
    """MB/s of PTY output reaching the client."""
    out = bytearray()
    await send(FLOOD.encode() + b"\r")
    while b"\x01BEGIN\x01" not in out:
        out += await recv()
    start = time.perf_counter()
    del out[: out.index(b"\x01BEGIN\x01") + 7]
    size = len(out)
    while b"\x01END\x01" not in out[-4096:]:
        chunk = await recv()
        out += chunk
        size += len(chunk)
        if len(out) > 1 << 20:
            del out[: len(out) - 8192]
    return size / (time.perf_counter() - start) / 1e6


async def echo_latency(send: Send, recv: Recv, i: int) -> float:
    """Milliseconds from one keystroke to its echo."""
    key = b"x" if i % 2 == 0 else b"\x7f"  # type, erase: the line never grows
    start = time.perf_counter()
    await send(key)
    await recv()
    return (time.perf_counter() - start) * 1000


async def ctrl_c_mid_flood(send: Send, recv: Recv) -> float:
    """Seconds from Ctrl-C, typed while `yes` floods the terminal, to the next command's output."""
    await send(b"yes\r")
    seen = 0
    while seen < 1_000_000:
        seen += len(await recv())
    typed = time.perf_counter()
    await send(b"\x03")
    await send(b"echo stopped-$((3*3))\r")
    tail = b""
    while b"stopped-9" not in tail:
        tail = (tail + await recv())[-4096:]
    return time.perf_counter() - typed


async def settle(recv: Recv) -> None:
    """Swallow output until the shell has been quiet for 300 ms."""
    while True:
        try:
            await asyncio.wait_for(recv(), 0.3)
        except TimeoutError:
            return


async def open_svc(*, held: bool = True) -> tuple[Send, Recv, Callable[[], None]]:
    import httpx
    from websockets.asyncio.client import connect

    from harness.daemon import Daemon, migrated_home

    home = Path(tempfile.mkdtemp(prefix="svc-bench-"))
    env = {**shell_env(), "SVC_HOLDER": "1" if held else "0"}
    daemon = Daemon(migrated_home(home / "home"), env=env).start()
    session = httpx.post(
        f"{daemon.url}/api/sessions",
        json={"agent": "shell", "workspace": str(home), "cols": 120, "rows": 40},
        headers=daemon.owner_headers(),
        timeout=30,
    ).json()
    ws = await connect(
        f"{daemon.ws_url}/ws?session_id={session['id']}",
        origin=daemon.origin,  # type: ignore[arg-type]
        additional_headers=daemon.owner_headers(),
        max_size=None,
    )

    async def recv() -> bytes:
        while True:
            frame = await ws.recv()
            if isinstance(frame, bytes):
                return frame

    return ws.send, recv, daemon.stop


async def open_terminado() -> tuple[Send, Recv, Callable[[], None]]:
    from websockets.asyncio.client import connect

    from harness.daemon import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-terminado", str(port)],
        env={**os.environ, **shell_env()},
    )
    for _ in range(100):
        try:
            ws = await connect(f"ws://127.0.0.1:{port}/websocket", max_size=None)
            break
        except OSError:
            await asyncio.sleep(0.1)
    await ws.send(json.dumps(["set_size", 40, 120]))

    async def send(data: bytes) -> None:
        await ws.send(json.dumps(["stdin", data.decode()]))

    async def recv() -> bytes:
        while True:
            message = json.loads(await ws.recv())
            if message[0] == "stdout":
                return message[1].encode()

    return send, recv, proc.terminate


async def main() -> int:
    servers = {
        "svc": await open_svc(),
        "direct": await open_svc(held=False),
        "terminado": await open_terminado(),
    }
    rates: dict[str, list[float]] = {name: [] for name in servers}
    for _send, recv, _stop in servers.values():
        await settle(recv)
    for _ in range(ROUNDS):  # interleaved, so both see the same machine load
        for name, (send, recv, _) in servers.items():
            rates[name].append(await throughput(send, recv))
            await settle(recv)
    echo = {name: [] for name in servers}
    for i in range(KEYSTROKES):  # one key each in turn: every server sees the same moments
        for name, (send, recv, _) in servers.items():
            echo[name].append(await echo_latency(send, recv, i))
    interrupts: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(5):
        for name, (send, recv, _) in servers.items():
            interrupts[name].append(await ctrl_c_mid_flood(send, recv))
            await settle(recv)
    for _, _, stop in servers.values():
        stop()
    return report(rates, echo, interrupts)


def report(
    rates: dict[str, list[float]], echo: dict[str, list[float]], interrupts: dict[str, list[float]]
) -> int:
    print(
        f"{'server':<10} {f'MB/s (median of {ROUNDS})':>20} {'echo p50 ms':>12} {'echo p99 ms':>12}"
    )
    for name in rates:
        p99 = statistics.quantiles(echo[name], n=100)[98]
        print(
            f"{name:<10} {statistics.median(rates[name]):>20.1f} "
            f"{statistics.median(echo[name]):>12.2f} {p99:>12.2f}"
        )
    for name, each in rates.items():
        print(f"  {name} rounds MB/s: " + " ".join(f"{r:.1f}" for r in each))
    # Each round's two floods ran back to back: their ratio sees the same load on the machine.
    paired = [held / direct for held, direct in zip(rates["svc"], rates["direct"], strict=True)]
    print("  svc / direct by round: " + " ".join(f"{r:.2f}" for r in paired)
          + f" (median {statistics.median(paired):.2f})")  # fmt: skip
    ratio = statistics.median(rates["svc"]) / statistics.median(rates["terminado"])
    echo_p50 = statistics.median(echo["svc"])
    echo_ratio = echo_p50 / statistics.median(echo["terminado"])
    print(f"throughput svc/terminado = {ratio:.2f} (bar ≥ 0.50)")
    print(f"echo p50 svc/terminado = {echo_ratio:.2f}; svc p50 {echo_p50:.2f} ms (bar ≤ 5 ms)")
    for name, waits in interrupts.items():
        print(f"Ctrl-C mid-flood to a usable prompt, {name}: p50 {statistics.median(waits):.3f} s  "
              f"max of {len(waits)} {max(waits):.3f} s")  # fmt: skip
    ctrl_c = max(interrupts["svc"])
    print(f"Ctrl-C svc worst {ctrl_c:.3f} s (bar ≤ 1 s)")
    held_rate = statistics.median(rates["svc"]) / statistics.median(rates["direct"])
    held_echo = echo_p50 / statistics.median(echo["direct"])
    print(f"through the holder / direct: flood {held_rate:.2f} (bar ≥ 0.90), "
          f"echo p50 {held_echo:.2f} (bar ≤ 1.20)")  # fmt: skip
    ok = ratio >= 0.5 and echo_p50 <= 5.0 and ctrl_c <= 1.0
    ok = ok and held_rate >= 0.9 and held_echo <= 1.2
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-terminado":
        serve_terminado(int(sys.argv[2]))
    else:
        os.environ.setdefault("SVC_HOME", tempfile.mkdtemp(prefix="svc-bench-home-"))
        sys.exit(asyncio.run(main()))

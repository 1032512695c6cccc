"""Taking sessions back after svc is SIGKILLed, and what holding a session costs (contract §17).

Take-back: 50 terminals (`cat` in a PTY, its scrollback a few lines) and 50 chats (the scripted
ACP agent) run; svc is SIGKILLed and started again on the same home, 3 rounds. For each session,
the seconds from bind (the port accepting) until it is running and attachable: the terminal's
/ws sends its scrollback and state `running`, the chat's /ws/chat `open` answers `running`; all
100 checks run at once from the moment the port accepts. p50, p99 and the worst of 300.
Bar (issue 33): p99 ≤ 3 s.

Memory: the holder's resident memory holding 1 session and holding 100 (the same 50 + 50),
per held session beyond the first. Bar: ≤ 2 MiB per held session.

    .venv/bin/python bench/holders.py        (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TERMINALS = CHATS = 50
ROUNDS = 3


def settings() -> dict[str, Any]:
    from harness.termclient import hosting_settings

    made = hosting_settings()
    made["agents"]["cat"] = {"command": ["cat"], "enabled": True}
    return made


def holder_rss_kib(home: Path) -> int:
    pid = int((home / "holder" / "holder.pid").read_text())
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def bound(port: int) -> None:
    """Until the port accepts a connection (svc bound it)."""
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.002)


async def ready(daemon: Any, session: dict[str, Any], since: float) -> float:
    """Seconds from `since` until the session is running and attachable."""
    from harness.termclient import open_ws

    while True:
        try:
            if session["kind"] == "terminal":
                ws = await open_ws(daemon, f"/ws?session_id={session['id']}")
                await ws.recv()  # the scrollback
                state = json.loads(await ws.recv())
                ok = state.get("type") == "running"
            else:
                ws = await open_ws(daemon, "/ws/chat")
                await ws.send(json.dumps({"type": "open", "session_id": session["id"]}))
                while (event := json.loads(await ws.recv()))["kind"] != "session":
                    pass
                ok = event.get("status") == "running"
            await ws.close()
            if ok:
                return time.perf_counter() - since
        except Exception:  # refused, closed, not there yet: it is not ready, try again
            pass
        await asyncio.sleep(0.01)


async def take_back_round(daemon: Any, sessions: list[dict[str, Any]]) -> list[float]:
    daemon.kill()
    started = threading.Thread(target=daemon.start)
    started.start()
    await asyncio.to_thread(bound, daemon.port)
    since = time.perf_counter()
    waits = await asyncio.gather(*(ready(daemon, s, since) for s in sessions))
    await asyncio.to_thread(started.join)
    return list(waits)


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1]


async def main() -> int:
    from harness.daemon import Daemon, migrated_home
    from harness.termclient import create_session

    work = Path(tempfile.mkdtemp(prefix="svc-bench-work-"))
    daemon = Daemon(migrated_home(work / "home", settings())).start()
    try:
        first = create_session(daemon, work, agent="cat")
        rss_one = holder_rss_kib(daemon.home)
        sessions = [first]
        sessions += [create_session(daemon, work, agent="cat") for _ in range(TERMINALS - 1)]
        sessions += [create_session(daemon, work, agent="fake", kind="chat") for _ in range(CHATS)]
        await asyncio.sleep(1)
        rss_all = holder_rss_kib(daemon.home)
        waits: list[float] = []
        for _ in range(ROUNDS):
            waits += await take_back_round(daemon, sessions)
    finally:
        daemon.stop()
    per_session = (rss_all - rss_one) / (len(sessions) - 1) / 1024
    p50, p99, worst = statistics.median(waits), pct(waits, 99), max(waits)
    print(
        f"take back {TERMINALS} terminals + {CHATS} chats after SIGKILL, {ROUNDS} rounds, "
        f"bind → running and attachable: p50 {p50:.3f} s  p99 {p99:.3f} s  worst {worst:.3f} s "
        "(bar p99 ≤ 3 s)"
    )
    print(
        f"holder RSS: {rss_one / 1024:.1f} MiB holding 1 session, {rss_all / 1024:.1f} MiB "
        f"holding {len(sessions)}: {per_session * 1024:.0f} KiB per held session (bar ≤ 2 MiB)"
    )
    ok = p99 <= 3.0 and per_session <= 2.0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""Chat streaming over /ws/chat: one chat with the scripted ACP agent and 10 viewers reading.

Short turns: `echo` of ten words, 40 rounds; from the prompt sent (by the first viewer) to each
viewer's first `agent_message_chunk` and to its `turn_end` (400 samples each). Floods: `flood
2000 1024` (2,000 chunks of 1 KB as fast as the agent can), 5 rounds; from the prompt to each
viewer's `turn_end`, the chunks a second that makes, and svc's CPU time per chunk (user and
system, all threads, from /proc: less moved than wall time by other work on the machine). svc on
core 0, the bench on core 1, the agent on any core. No peer: run it on two commits back to back
to compare (docs/performance.md). `BENCH_ROUNDS`, `BENCH_FLOODS` and `BENCH_VIEWERS` set the
counts.

    .venv/bin/python bench/chat_stream.py        (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support.machine import p50, percentile, pin  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "40"))
FLOODS = int(os.environ.get("BENCH_FLOODS", "5"))
VIEWERS = int(os.environ.get("BENCH_VIEWERS", "10"))
FLOOD_CHUNKS = 2000
SERVER_CORE, CLIENT_CORE = 0, 1


class Viewer:
    """A /ws/chat client reading everything; when this round's first chunk and end came."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.first: float | None = None
        self.end: float | None = None
        self.ended = asyncio.Event()

    def reset(self) -> None:
        self.first = self.end = None
        self.ended.clear()

    async def run(self) -> None:
        async for message in self.ws:
            event = json.loads(message)
            if event.get("kind") == "agent_message_chunk" and self.first is None:
                self.first = time.perf_counter()
            elif event.get("kind") == "turn_end":
                self.end = time.perf_counter()
                self.ended.set()


async def turn(
    viewers: list[Viewer], session_id: str, text: str
) -> tuple[list[float], list[float]]:
    """One turn: seconds from the prompt sent to each viewer's first chunk, and to its end."""
    for viewer in viewers:
        viewer.reset()
    sent = time.perf_counter()
    message = {"type": "prompt", "session_id": session_id, "text": text}
    await viewers[0].ws.send(json.dumps(message))
    await asyncio.wait_for(asyncio.gather(*(v.ended.wait() for v in viewers)), 300)
    firsts = [v.first - sent for v in viewers if v.first is not None]
    return firsts, [v.end - sent for v in viewers if v.end is not None]


def cpu_seconds(pid: int) -> float:
    """The process's CPU time, user and system, every thread (less moved by other work on the
    machine than wall time is)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(svc: Any, session_id: str) -> dict[str, list[float]]:
    import websockets

    viewers = []
    for _ in range(VIEWERS):
        ws = await websockets.connect(
            f"{svc.ws_url}/ws/chat", origin=svc.origin, additional_headers=svc.owner_headers()
        )
        await ws.send(json.dumps({"type": "open", "session_id": session_id}))
        viewers.append(Viewer(ws))
    readers = [asyncio.create_task(v.run()) for v in viewers]
    await asyncio.sleep(1)  # every viewer has opened the chat
    words = " ".join(f"w{i}" for i in range(10))
    results: dict[str, list[float]] = {"first": [], "end": [], "flood": [], "cpu": []}
    pid = svc.proc.pid
    try:
        await turn(viewers, session_id, f"echo {words}")  # warm-up, not counted
        for _ in range(ROUNDS):
            firsts, ends = await turn(viewers, session_id, f"echo {words}")
            results["first"] += firsts
            results["end"] += ends
        for _ in range(FLOODS):
            used = cpu_seconds(pid)
            _, ends = await turn(viewers, session_id, f"flood {FLOOD_CHUNKS} 1024")
            results["flood"] += ends
            results["cpu"].append(cpu_seconds(pid) - used)
    finally:
        for task in readers:
            task.cancel()
        for viewer in viewers:
            await viewer.ws.close()
    return results


def start_svc() -> tuple[Any, str]:
    import httpx

    from harness.daemon import Daemon, migrated_home
    from harness.termclient import create_session, hosting_settings

    base = Path(tempfile.mkdtemp(prefix="svc-bench-"))
    svc = Daemon(migrated_home(base / "home", hosting_settings())).start()
    assert svc.proc is not None
    pin(svc.proc.pid, SERVER_CORE)
    made = create_session(
        svc, tempfile.mkdtemp(prefix="svc-bench-work-"), agent="fake", kind="chat"
    )
    row = httpx.get(f"{svc.url}/api/sessions/{made['id']}", headers=svc.owner_headers()).json()
    if row.get("pid"):  # the agent runs on any core, as in use
        for task in os.listdir(f"/proc/{row['pid']}/task"):
            os.sched_setaffinity(int(task), set(range(os.cpu_count() or 1)))
    return svc, made["id"]


def ms(values: list[float]) -> str:
    return f"p50 {p50(values) * 1000:7.1f} ms   p99 {percentile(values, 0.99) * 1000:7.1f} ms"


def main() -> None:
    pin(os.getpid(), CLIENT_CORE)
    svc, session_id = start_svc()
    try:
        results = asyncio.run(measure(svc, session_id))
    finally:
        svc.stop()
    print(f"/ws/chat, one chat, {VIEWERS} viewers reading:")
    print(f"  echo, prompt → first chunk ({ROUNDS} rounds)   {ms(results['first'])}")
    print(f"  echo, prompt → turn_end                      {ms(results['end'])}")
    print(f"  flood {FLOOD_CHUNKS} × 1 KB → turn_end ({FLOODS} rounds)  {ms(results['flood'])}")
    rate = FLOOD_CHUNKS / p50(results["flood"])
    print(f"  flood, chunks a second at each viewer (p50)   {rate:,.0f}")
    cpu = [c / FLOOD_CHUNKS * 1000 for c in results["cpu"]]
    print(f"  flood, svc's CPU per chunk, ms (p50, max)     {p50(cpu):.2f}, {max(cpu):.2f}")


if __name__ == "__main__":
    main()

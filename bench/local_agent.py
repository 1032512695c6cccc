"""Agent-as-API benchmark: `/svc/local-agent` beside driving the same ACP agent directly over
stdio (the official agent-client-protocol SDK), in one run.

Time to the first answer token and to the end of the answer, for a one-shot request (a new agent
process each time, on both sides) and for a conversation (one agent session, turn after turn);
and how long after a client leaves its agent receives `session/cancel` (bar: 100 ms): mid-stream,
and before the agent's first word (its socket closed 0.5 s after the prompt reached the agent,
streamed and not).

    .venv/bin/python bench/local_agent.py        (make bench runs it with a temp SVC_HOME)
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FAKE_ACP = str(ROOT / "harness" / "fakes" / "acp_agent.py")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "30"))
PROMPT = "echo one two three four five"


# --- the agent, directly -----------------------------------------------------------------------


class _Client:
    def __init__(self) -> None:
        self.first: asyncio.Event | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.first is not None and type(update).__name__ == "AgentMessageChunk":
            self.first.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def on_connect(self, conn: Any) -> None:
        pass


async def _turn(conn: Any, client: _Client, session_id: str) -> tuple[float, float]:
    from acp import text_block

    client.first = asyncio.Event()
    started = time.perf_counter()
    prompt = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block(PROMPT)]))
    await client.first.wait()
    first = time.perf_counter() - started
    await prompt
    return first, time.perf_counter() - started


async def direct(one_shot: bool) -> list[tuple[float, float]]:
    from acp import PROTOCOL_VERSION, spawn_agent_process
    from acp.schema import ClientCapabilities, Implementation

    samples = []
    client = _Client()

    async def open_session(conn: Any) -> str:
        await conn.initialize(protocol_version=PROTOCOL_VERSION,
                              client_capabilities=ClientCapabilities(),
                              client_info=Implementation(name="bench", version="1"))  # fmt: skip
        return (await conn.new_session(cwd=str(ROOT), mcp_servers=[])).session_id

    if one_shot:
        for _ in range(ROUNDS):
            started = time.perf_counter()
            async with spawn_agent_process(client, sys.executable, FAKE_ACP) as (conn, _proc):
                session_id = await open_session(conn)
                ready = time.perf_counter() - started  # the process start counts, as on svc
                first, whole = await _turn(conn, client, session_id)
            samples.append((ready + first, ready + whole))
        return samples
    async with spawn_agent_process(client, sys.executable, FAKE_ACP) as (conn, _proc):
        session_id = await open_session(conn)
        return [await _turn(conn, client, session_id) for _ in range(ROUNDS)]


# --- the same agent through svc ----------------------------------------------------------------


def start_svc() -> Any:
    from harness.daemon import Daemon, migrated_home
    from harness.fakes.bridge_setup import bridge_settings
    from harness.fakes.fake_provider import FakeProvider

    root = Path(tempfile.mkdtemp(prefix="svc-bench-"))
    (root / "work").mkdir()
    fake = FakeProvider().start()
    settings = {
        **bridge_settings(fake),
        "workspaces": [str(root / "work")],
        "agents": {"fake": {"acp_command": [sys.executable, FAKE_ACP], "enabled": True}},
        "local_agent_api": {"enabled": True, "agents": ["fake"]},
    }
    log, prompts = root / "cancels.log", root / "prompts.log"
    env = {"FAKE_AGENT_CANCEL_LOG": str(log), "FAKE_AGENT_PROMPT_LOG": str(prompts)}
    svc = Daemon(migrated_home(root / "home", settings), env=env)
    svc.start()
    svc.cancel_log, svc.prompt_log, svc.fake = log, prompts, fake  # type: ignore[attr-defined]
    return svc


async def through_svc(svc: Any, conversation: bool) -> list[tuple[float, float]]:
    import httpx

    url = f"{svc.url}/svc/local-agent/fake/chat/v1/chat/completions"
    headers = {"X-Svc-Conversation": "bench"} if conversation else {}
    body = {"model": "fake", "stream": True, "messages": [{"role": "user", "content": PROMPT}]}
    samples = []
    async with httpx.AsyncClient(timeout=60) as http:
        for i in range(ROUNDS + (1 if conversation else 0)):
            started, first = time.perf_counter(), 0.0
            async with http.stream("POST", url, json=body, headers=headers) as resp:
                async for line in resp.aiter_lines():
                    if not first and '"content"' in line:
                        first = time.perf_counter() - started
            if i or not conversation:  # a conversation's first turn starts its agent: not counted
                samples.append((first, time.perf_counter() - started))
    return samples


def logged(log: Path, marker: str) -> float | None:
    """When the fake agent logged the cancel (or prompt) of the turn named `marker` (its first)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return next((float(ln.split()[0]) for ln in lines if ln.endswith(f" echo {marker}")), None)


async def until_logged(log: Path, marker: str, timeout: float = 10) -> float:
    deadline = time.monotonic() + timeout
    while not (arrived := logged(log, marker)):
        assert time.monotonic() < deadline, f"the agent never logged {marker} in {log.name}"
        await asyncio.sleep(0.005)
    return arrived


async def cancel_latency(svc: Any) -> list[float]:
    import httpx

    url = f"{svc.url}/svc/local-agent/fake/chat/v1/chat/completions"
    gaps = []
    for i in range(min(ROUNDS, 20)):
        # The turn names itself so that its own cancel is told apart from a late one of another.
        marker = f"round-{i}"
        body = {
            "model": "fake",
            "stream": True,
            "messages": [{"role": "user", "content": f"sleep 30 ; echo {marker}"}],
        }
        async with (
            httpx.AsyncClient(timeout=60) as http,
            http.stream("POST", url, json=body) as resp,
        ):
            async for line in resp.aiter_lines():
                if '"content"' in line:
                    # The client decides to leave here; closing its socket is counted in.
                    left = time.time()
                    break
        gaps.append(await until_logged(svc.cancel_log, marker) - left)
    return gaps


async def early_cancel_latency(svc: Any, stream: bool) -> list[float]:
    """A client that leaves before the agent's first word: a raw socket, closed 0.5 s after the
    prompt reached the agent (which says nothing for 30 s)."""
    gaps = []
    for i in range(min(ROUNDS, 20)):
        marker = f"early-{'stream' if stream else 'whole'}-{i}"
        body = json.dumps({"model": "fake", "stream": stream, "messages": [
            {"role": "user", "content": f"wait 30 ; echo {marker}"}]}).encode()  # fmt: skip
        _, writer = await asyncio.open_connection("127.0.0.1", svc.port)
        writer.write(
            b"POST /svc/local-agent/fake/chat/v1/chat/completions HTTP/1.1\r\n"
            + f"Host: 127.0.0.1:{svc.port}\r\nContent-Type: application/json\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        prompted = await until_logged(svc.prompt_log, marker, timeout=30)
        await asyncio.sleep(max(0.0, prompted + 0.5 - time.time()))
        left = time.time()  # closing the socket is counted in, as above
        writer.close()
        gaps.append(await until_logged(svc.cancel_log, marker) - left)
    return gaps


def ms(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000


def row(name: str, ours: list[tuple[float, float]], base: list[tuple[float, float]]) -> None:
    for label, i in (("first token", 0), ("whole answer", 1)):
        a, b = [s[i] for s in ours], [s[i] for s in base]
        print(f"{name:13s} {label:13s} svc p50 {ms(a, 50):7.1f} p99 {ms(a, 99):7.1f} ms | "
              f"direct p50 {ms(b, 50):7.1f} p99 {ms(b, 99):7.1f} ms | "
              f"added p50 {ms(a, 50) - ms(b, 50):6.1f} ms")  # fmt: skip


def main() -> None:
    direct_once = asyncio.run(direct(one_shot=True))
    direct_conv = asyncio.run(direct(one_shot=False))
    svc = start_svc()
    try:
        svc_once = asyncio.run(through_svc(svc, conversation=False))
        svc_conv = asyncio.run(through_svc(svc, conversation=True))
        cancels = asyncio.run(cancel_latency(svc))
        early_streamed = asyncio.run(early_cancel_latency(svc, stream=True))
        early_whole = asyncio.run(early_cancel_latency(svc, stream=False))
    finally:
        svc.stop()
        svc.fake.stop()
    row("one-shot", svc_once, direct_once)
    row("conversation", svc_conv, direct_conv)
    for name, gaps in (("mid-stream", cancels), ("before first word, streamed", early_streamed),
                       ("before first word, whole", early_whole)):  # fmt: skip
        print(
            f"client gone {name:27s} -> agent gets session/cancel: p50 {ms(gaps, 50):5.1f} ms"
            f"  p99 {ms(gaps, 99):5.1f} ms  max {max(gaps) * 1000:5.1f} ms (bar 100 ms)"
        )


if __name__ == "__main__":
    main()

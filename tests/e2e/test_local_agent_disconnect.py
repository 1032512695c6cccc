"""Agent-as-API (contract §6): a client that disconnects before the agent's first word still cancels
the agent's turn (ACP session/cancel; bar 100 ms, bench/local_agent.py measures it) and with it
the agent's own model request through the bridge — streamed or not; one that leaves while its
agent is still starting leaves neither a turn nor a process behind.

The fake agent logs when each prompt and each session/cancel reached it (FAKE_AGENT_*_LOG); the
client closes its raw socket 0.5 s after its prompt arrived, and the cancel must follow within a
second."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from harness.daemon import Daemon, migrated_home
from harness.fakes.fake_provider import FakeProvider
from tests.e2e.test_local_agent_turns import FAKE_ACP, api_sessions, settings, wait_until

# Wide enough for a busy 2-core CI, still well inside the agent's own 30 s turn, so the cancel
# cannot be the turn ending by itself; the contract's 100 ms is measured by bench/local_agent.py.
MARGIN_S = 10.0
START_DELAY_S = 3.0  # the "slow" agent answers `initialize` this late


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, FakeProvider, Path]]:
    root = tmp_path_factory.mktemp("agent-disconnect")
    (root / "work").mkdir()
    fake = FakeProvider().start()
    config = settings(fake, root / "work")
    slow = [sys.executable, FAKE_ACP, "--start-delay", str(START_DELAY_S)]
    config["agents"]["slow"] = {"acp_command": slow, "enabled": True}
    config["local_agent_api"]["agents"].append("slow")
    env = {
        "FAKE_AGENT_PROMPT_LOG": str(root / "prompts.log"),
        "FAKE_AGENT_CANCEL_LOG": str(root / "cancels.log"),
    }
    server = Daemon(migrated_home(root / "home", config), env=env).start()
    yield server, fake, root
    server.stop()
    fake.stop()


def logged(log: Path, marker: str, timeout: float) -> float | None:
    """When the fake agent logged the turn whose last line ends with `marker`."""
    deadline = time.monotonic() + timeout
    while True:
        lines = log.read_text().splitlines() if log.exists() else []
        if found := next((ln for ln in lines if ln.endswith(marker)), None):
            return float(found.split()[0])
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def post(daemon: Daemon, agent: str, content: str, stream: bool) -> socket.socket:
    """chat/completions on a raw socket, so that closing it is the client leaving."""
    body = json.dumps(
        {"model": agent, "stream": stream, "messages": [{"role": "user", "content": content}]}
    )
    sock = socket.create_connection(("127.0.0.1", daemon.port))
    sock.sendall(
        f"POST /svc/local-agent/{agent}/chat/v1/chat/completions HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{daemon.port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
    )
    return sock


def close_unanswered(sock: socket.socket) -> float:
    """Close the socket, checking nothing was answered yet; returns when (time.time())."""
    sock.setblocking(False)
    with pytest.raises(BlockingIOError):
        sock.recv(1)
    sock.close()
    return time.time()


def leave_early(
    daemon: Daemon, root: Path, command: str, stream: bool, busy: Callable[[], bool] = lambda: True
) -> float:
    """Close the request 0.5 s after its prompt reached the agent (and once `busy()` holds);
    returns how long after that the agent got session/cancel (inf: not within 5 s)."""
    marker = f"#{uuid.uuid4().hex[:8]}"
    sock = post(daemon, "fake", f"{command} {marker}", stream)
    prompted = logged(root / "prompts.log", marker, timeout=30)
    assert prompted is not None, "the prompt never reached the agent"
    wait_until(busy, "the agent never got busy")
    time.sleep(max(0.0, prompted + 0.5 - time.time()))
    left = close_unanswered(sock)  # before the agent's first word
    cancelled = logged(root / "cancels.log", marker, timeout=20)
    return float("inf") if cancelled is None else cancelled - left


def test_a_streaming_client_that_leaves_before_the_first_word_cancels_the_turn(svc) -> None:
    daemon, fake, root = svc
    # The agent is waiting for its own model, which says nothing (`[hang]`).
    asked = lambda: any("[early-stream]" in json.dumps(r.body) for r in fake.requests)  # noqa: E731
    gap = leave_early(daemon, root, "ask [hang] [early-stream]", stream=True, busy=asked)
    assert gap < MARGIN_S, f"session/cancel {gap:.3f} s after the client left"
    assert fake.wait_closed("[early-stream]", timeout=5).closed_at is not None


def test_a_waiting_client_that_leaves_before_the_answer_cancels_the_turn(svc) -> None:
    daemon, _, root = svc
    gap = leave_early(daemon, root, "wait 30 ; echo late", stream=False)
    assert gap < MARGIN_S, f"session/cancel {gap:.3f} s after the client left"


@pytest.mark.parametrize("stream", [True, False])
def test_a_client_that_leaves_while_its_agent_starts_leaves_no_turn_and_no_process(
    svc, stream: bool
) -> None:
    daemon, _, root = svc
    before = {s["id"] for s in api_sessions(daemon)}
    marker = f"#{uuid.uuid4().hex[:8]}"
    sock = post(daemon, "slow", f"wait 30 ; echo {marker}", stream)
    wait_until(
        lambda: any(s["id"] not in before for s in api_sessions(daemon)),
        "the request never started its agent",
    )
    time.sleep(0.5)
    close_unanswered(sock)  # the agent is still starting (it answers `initialize` at 3 s)
    (new,) = [s for s in api_sessions(daemon) if s["id"] not in before]
    url = f"{daemon.url}/api/sessions/{new['id']}"

    def ended() -> bool:
        status = httpx.get(url, headers=daemon.owner_headers()).json()["status"]
        return status in ("exited", "failed")

    time.sleep(START_DELAY_S)  # past the point where the agent would have been prompted
    wait_until(ended, "the agent's process outlived the request that started it", timeout=10)
    assert logged(root / "prompts.log", marker, timeout=0.5) is None, "the agent was prompted"
    assert not [p for p in _agent_pids() if "--start-delay" in _cmdline(p)], "a process is left"


def _agent_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and FAKE_ACP in _cmdline(int(p))]


def _cmdline(pid: int | str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""

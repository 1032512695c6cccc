"""Agent-as-API (SPEC §6): a client that disconnects before the agent's first word still cancels
the agent's turn (ACP session/cancel; bar 100 ms, bench/local_agent.py measures it) and with it
the agent's own model request through the bridge — streamed or not.

The fake agent logs when each prompt and each session/cancel reached it (FAKE_AGENT_*_LOG); the
client closes its raw socket 0.5 s after its prompt arrived, and the cancel must follow within a
second."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_local_agent_turns import settings
from tests.fakes.fake_provider import FakeProvider
from tests.support.daemon import Daemon, migrated_home

MARGIN_S = 1.0  # generous for a busy test machine; the contract's 100 ms is the bench's


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, FakeProvider, Path]]:
    root = tmp_path_factory.mktemp("agent-disconnect")
    (root / "work").mkdir()
    fake = FakeProvider().start()
    env = {"FAKE_AGENT_PROMPT_LOG": str(root / "prompts.log"),
           "FAKE_AGENT_CANCEL_LOG": str(root / "cancels.log")}  # fmt: skip
    server = Daemon(migrated_home(root / "home", settings(fake, root / "work")), env=env).start()
    yield server, fake, root
    server.stop()
    fake.stop()


def logged(log: Path, marker: str, timeout: float) -> float | None:
    """When the fake agent logged the turn whose last line ends with `marker`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if found := next((ln for ln in lines if ln.endswith(marker)), None):
            return float(found.split()[0])
        time.sleep(0.005)
    return None


def leave_early(daemon: Daemon, root: Path, command: str, stream: bool) -> float:
    """POST chat/completions on a raw socket and close it 0.5 s after the prompt reached the agent;
    returns how long after that the agent got session/cancel (inf: never, in 5 s)."""
    marker = f"#{uuid.uuid4().hex[:8]}"
    body = json.dumps({"model": "fake", "stream": stream,
                       "messages": [{"role": "user", "content": f"{command} {marker}"}]})  # fmt: skip
    sock = socket.create_connection(("127.0.0.1", daemon.port))
    sock.sendall(
        f"POST /svc/local-agent/fake/chat/v1/chat/completions HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{daemon.port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
    )
    prompted = logged(root / "prompts.log", marker, timeout=30)
    assert prompted is not None, "the prompt never reached the agent"
    time.sleep(max(0.0, prompted + 0.5 - time.time()))
    sock.setblocking(False)
    with pytest.raises(BlockingIOError):  # nothing was answered yet: before the first word
        sock.recv(1)
    sock.close()
    left = time.time()
    cancelled = logged(root / "cancels.log", marker, timeout=5)
    return float("inf") if cancelled is None else cancelled - left


def test_a_streaming_client_that_leaves_before_the_first_word_cancels_the_turn(svc) -> None:
    daemon, fake, root = svc
    # The agent is waiting for its own model, which says nothing (`[hang]`).
    gap = leave_early(daemon, root, "ask [hang] [early-stream]", stream=True)
    assert gap < MARGIN_S, f"session/cancel {gap:.3f} s after the client left"
    assert fake.wait_closed("[early-stream]", timeout=5).closed_at is not None


def test_a_waiting_client_that_leaves_before_the_answer_cancels_the_turn(svc) -> None:
    daemon, fake, root = svc
    gap = leave_early(daemon, root, "wait 30 ; echo late", stream=False)
    assert gap < MARGIN_S, f"session/cancel {gap:.3f} s after the client left"

"""PtySession in-process (a real PTY and shell, fake sockets): who holds the PTY back, and when a
stalled viewer is let go."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from harness.holders import end_holder
from holder.client import HolderClient
from sessions_app.host import fanout
from sessions_app.host.direct import DirectPty
from sessions_app.host.pty import PtySession
from tests.sessions_app.test_terminal_fanout import FakeSocket

FLOOD = b"head -c 6000000 /dev/zero | base64; echo done-$((40+2))\n"


@pytest.fixture(params=["held", "direct"])
async def start(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[[list[int]], Awaitable[PtySession]]]:
    """Start a shell in a PtySession whose PTY a real holder holds, or svc's own (SVC_HOLDER=0)."""
    holder = HolderClient(tmp_path / "holder", lambda sid, code: None)

    async def started(ended: list[int]) -> PtySession:
        async def on_exit(session_id: str, code: int | None) -> None:
            ended.append(code)

        session = PtySession("test", on_exit)
        argv = ("setsid", "-c", "/bin/sh")
        env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "TERM": "dumb", "PS1": "$ "}
        if request.param == "direct":
            session.run(DirectPty(argv, env, "/", 80, 24))
        else:
            await holder.spawn("test", kind="pty", argv=argv, env=env, cwd="/")
            session.run(await holder.attach("test", 0))
        return session

    yield started
    await holder.close()
    end_holder(tmp_path)


async def test_when_every_viewer_is_behind_nobody_is_dropped_and_nothing_is_lost(start) -> None:
    ended: list[int] = []
    session = await start(ended)
    socks = [FakeSocket(), FakeSocket()]
    viewers = [session.attach(s.send_bytes, s.send_json, s) for s in socks]
    for sock in socks:
        sock.stalled = True  # both clients stop reading
    session.write(FLOOD)
    deadline = asyncio.get_running_loop().time() + 10
    while not all(v.full for v in viewers):  # a loaded machine may take a while to fill them
        assert asyncio.get_running_loop().time() < deadline, "the viewers' queues never filled"
        await asyncio.sleep(0.01)
    await asyncio.sleep(3 * fanout.STALL_S)  # well past the stall limit: still nobody dropped
    assert not any(v.lagging for v in viewers)
    socks[0].stalled = False  # one client reads again: the other now holds it back and is let go
    while b"done-42" not in socks[0].data():
        await asyncio.sleep(0.01)
    assert viewers[1].lagging
    assert socks[0].data().count(b"A") == 8_000_000  # base64 of 6 MB of zeros: every byte
    session.write(b"exit 7\n")
    await asyncio.wait_for(session.exited.wait(), 5)
    assert ended == [7]
    for viewer in viewers:
        await session.detach(viewer)


async def test_a_viewer_already_let_go_waits_for_nothing_so_a_slow_reader_loses_nothing(
    start,
) -> None:
    """A viewer that skipped ahead takes output only once its socket drains; it is not one
    waiting on the reader that is behind, so that reader is not dropped (the 20 MB flood test
    lost bytes so on a loaded machine)."""
    ended: list[int] = []
    session = await start(ended)
    socks = [FakeSocket(), FakeSocket()]
    viewers = [session.attach(s.send_bytes, s.send_json, s) for s in socks]
    for sock in socks:
        sock.stalled = True
    session.write(FLOOD)
    deadline = asyncio.get_running_loop().time() + 10
    while not all(v.full for v in viewers):
        assert asyncio.get_running_loop().time() < deadline, "the viewers' queues never filled"
        await asyncio.sleep(0.01)
    viewers[1].drop_behind()  # let go, as when it stalled while the other was reading
    await asyncio.sleep(3 * fanout.STALL_S)  # the reader still sends nothing meanwhile
    assert not viewers[0].lagging
    socks[0].stalled = False
    while b"done-42" not in socks[0].data():
        await asyncio.sleep(0.01)
    assert socks[0].data().count(b"A") == 8_000_000
    session.write(b"exit 7\n")
    await asyncio.wait_for(session.exited.wait(), 5)
    for viewer in viewers:
        await session.detach(viewer)

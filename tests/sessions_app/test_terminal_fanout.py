"""The terminal host's scrollback and per-viewer backpressure, in-process with fake sockets."""

from __future__ import annotations

import asyncio

from sessions_app.consumers_terminal import text_frame
from sessions_app.host import fanout
from sessions_app.host.processes import exit_code_of
from sessions_app.host.pty import Scrollback


def test_scrollback_keeps_exactly_the_last_bytes() -> None:
    ring = Scrollback(limit=10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"q"):
        ring.append(chunk)
    assert ring.read() == b"hijklmnopq"
    assert ring.size == 10


def test_text_frames_resize_type_or_are_dropped() -> None:
    assert text_frame('{"type":"resize","cols":80,"rows":24}') == (80, 24)
    # A resize with a size no terminal has is dropped, never typed into the shell.
    assert text_frame('{"type":"resize","cols":0,"rows":24}') is None
    assert text_frame('{"type":"resize","cols":"80","rows":24}') is None
    # Anything else is typed, JSON or not.
    assert text_frame('{"type":"other"}') == b'{"type":"other"}'
    assert text_frame("{not json") == b"{not json"
    assert text_frame("echo hi\r") == b"echo hi\r"


def test_signals_become_shell_style_exit_codes() -> None:
    assert exit_code_of(3) == 3
    assert exit_code_of(-1) == 129  # SIGHUP


class FakeSocket:
    """A viewer's socket and its flow: `stalled` is a client that stopped reading."""

    def __init__(self) -> None:
        self.frames: list[bytes | dict] = []
        self._writable = asyncio.Event()
        self._writable.set()

    @property
    def stalled(self) -> bool:
        return not self._writable.is_set()

    @stalled.setter
    def stalled(self, value: bool) -> None:
        if value:
            self._writable.clear()
        else:
            self._writable.set()

    async def wait_writable(self) -> None:
        await self._writable.wait()

    async def send_bytes(self, data: bytes) -> None:
        self.frames.append(data)

    async def send_json(self, event: dict) -> None:
        self.frames.append(event)

    def data(self) -> bytes:
        return b"".join(f for f in self.frames if isinstance(f, bytes))


async def test_preamble_comes_first_then_output_in_order() -> None:
    sock = FakeSocket()
    viewer = fanout.Viewer(sock.send_bytes, sock.send_json, sock, [b"old", {"type": "running"}])
    for i in range(100):
        viewer.offer(b"%d," % i)
    viewer.offer_event({"type": "exited", "exit_code": 0})
    while not sock.frames or sock.frames[-1] != {"type": "exited", "exit_code": 0}:
        await asyncio.sleep(0.001)
    assert sock.frames[:2] == [b"old", {"type": "running"}]
    assert sock.data()[3:] == b"".join(b"%d," % i for i in range(100))
    await viewer.close()


async def test_a_stalled_viewer_skips_ahead_and_is_told_how_much() -> None:
    sock = FakeSocket()
    viewer = fanout.Viewer(sock.send_bytes, sock.send_json, sock, [b""])
    while not sock.frames:  # the (empty) scrollback frame goes out, then the client stalls
        await asyncio.sleep(0.001)
    sock.stalled = True
    viewer.offer(b"x" * fanout.QUEUE_LIMIT)
    assert viewer.full
    viewer.drop_behind()  # what the PTY's stall watchdog does
    assert not viewer.full
    viewer.offer(b"y" * 100)  # skipped while lagging
    await asyncio.sleep(0.05)
    assert sock.frames == [b""]
    sock.stalled = False  # the client reads again
    while len(sock.frames) < 2:
        await asyncio.sleep(0.001)
    assert sock.frames[1] == {"type": "skipped", "bytes": fanout.QUEUE_LIMIT + 100}
    viewer.offer(b"live")
    while sock.data() != b"live":
        await asyncio.sleep(0.001)
    await viewer.close()


async def test_a_viewer_whose_socket_refuses_a_frame_lets_go_of_the_terminal() -> None:
    """A send that fails (e.g. a frame over the server's message limit) must not leave a dead
    viewer behind holding the PTY back for everyone."""
    gone: list[fanout.Viewer] = []

    async def refuse(data: bytes) -> None:
        raise ValueError("frame too large")

    sock = FakeSocket()
    viewer = fanout.Viewer(refuse, sock.send_json, sock, [b"scrollback"])
    viewer.on_gone = gone.append
    deadline = asyncio.get_running_loop().time() + 5
    while not gone:
        assert asyncio.get_running_loop().time() < deadline, "the dead viewer was never let go"
        await asyncio.sleep(0.001)
    assert gone == [viewer]
    await viewer.close()

"""svc's end of one attached session (holder/client.py attaches): the frames read from the
holder's connection, the stream svc reads and writes, and the keys written straight into a PTY
svc was handed. Under a lease (holder/lease.py) the stream reads a terminal's PTY itself."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from holder import protocol as p
from holder.held import INPUT_LIMIT, set_size
from holder.lease import LeasedPty

logger = logging.getLogger(__name__)


class Frames(asyncio.Protocol):
    """A session's stream as frames, parsed as they arrive. Consecutive output is handed on as
    one piece (a terminal flood costs one wake-up per socket read, not one per PTY read), and
    reading pauses while more than PAUSE_AT bytes wait, so a slow svc holds the holder back."""

    PAUSE_AT = 1 << 20

    def __init__(self) -> None:
        self.frames: collections.deque[tuple[bytes, bytes]] = collections.deque()
        self.output: list[bytes] = []  # output after the last frame in `frames`, not yet joined
        self.buffer = bytearray()
        self.waiting: asyncio.Future[None] | None = None
        self.queued = 0
        self.ended = False
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream connection's

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        for kind, payload in p.split_frames(self.buffer):
            if kind == p.OUTPUT:
                self.output.append(payload)
            else:
                self._flush_output()
                self.frames.append((kind, payload))
            self.queued += len(payload)
        if self.queued > self.PAUSE_AT and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self._wake()

    def ready(self) -> bool:
        """Whether a frame waits to be read, or the connection ended."""
        return bool(self.frames or self.output) or self.ended

    def _flush_output(self) -> None:
        if self.output:
            self.frames.append((p.OUTPUT, b"".join(self.output)))
            self.output = []

    def _wake(self) -> None:
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_result(None)

    async def next(self) -> tuple[bytes, bytes] | None:
        while not self.frames:
            if self.output:
                self._flush_output()
                break
            if self.ended:
                return None
            self.waiting = asyncio.get_running_loop().create_future()
            await self.waiting
        kind, payload = self.frames.popleft()
        self.queued -= len(payload)
        if self.paused and self.queued < self.PAUSE_AT // 2:
            self.paused = False
            self.transport.resume_reading()
        return kind, payload


@dataclass
class Attached:
    """One answered attach: its connection, the holder's answer and the descriptors it passed."""

    transport: asyncio.Transport
    frames: Frames
    hello: dict[str, Any]
    fds: list[int]


Again = Callable[[int, bool], Awaitable[Attached | None]]  # (offset, lease); None: it failed


class Stream:
    """One session's output from `offset` on, and the way to its input."""

    held = True  # the holder keeps the process when svc lets go of the stream

    def __init__(self, attached: Attached, again: Again | None = None) -> None:
        hello = attached.hello
        self.offset: int = hello["offset"]  # where the first output frame starts
        self.position = self.offset  # where the next output svc reads starts
        self.pid: int = hello["pid"]
        self.exit_code: int | None = hello["exit_code"]
        # A terminal's PTY, passed by the holder: keys and sizes go straight into it.
        self.pty = PtyInput(attached.fds[0]) if attached.fds else None
        self.lease: LeasedPty | None = None
        self._again = again
        self._take(attached)

    def _take(self, attached: Attached) -> None:
        self.transport, self.frames = attached.transport, attached.frames
        self.generation: int = attached.hello["generation"]
        terms, fds = attached.hello.get("lease"), attached.fds[1:]
        if terms and self.pty is not None and len(fds) == 3:
            self.lease = LeasedPty(self.pty.fd, fds, terms)
        else:
            for fd in fds:
                os.close(fd)

    async def read(self) -> tuple[bytes, bytes] | None:
        """The next frame (OUTPUT, GAP or EXIT), or None once the holder closed the stream."""
        while True:
            lease = self.lease
            if lease is not None and lease.ending and self.position >= lease.start:
                self._give_back()
            elif lease is None or not lease.reads(self.position) or self.frames.ready():
                frame = await self.frames.next()
                if lease is None or frame is None or frame[0] != p.LEASE_END:
                    if frame is not None and frame[0] == p.OUTPUT:
                        self.position += len(frame[1])
                    return frame
                lease.ending = True  # given back once svc has what the holder sent before it
            elif data := await self._read_leased(lease):
                self.position += len(data)
                return p.OUTPUT, data

    async def _read_leased(self, lease: LeasedPty) -> bytes:
        """The PTY's output under `lease`; b"" once the lease was renewed or given back, or
        after a wait for output or for a frame."""
        if lease.due:
            if not await self._lease_again():
                self._give_back()
            return b""
        try:
            data = lease.read()
        except OSError as exc:  # a kernel that cannot splice a PTY: frames, then
            logger.warning("reading the PTY of pid %d under a lease failed: %s", self.pid, exc)
            self._give_back()
            return b""
        if not data:
            await self._output_or_frame(lease)
        return data

    async def _output_or_frame(self, lease: LeasedPty) -> None:
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self.frames.waiting = waiter  # a frame from the holder (LEASE_END), or its end
        watching = not lease.eof
        if watching:
            loop.add_reader(lease.pty, _resolve, waiter)
        try:
            await waiter
        finally:
            if watching:
                loop.remove_reader(lease.pty)

    def _give_back(self) -> None:
        """svc stops reading the PTY; the holder reads it again and sends, as frames, what svc
        has not had (from the journal's end: all svc read itself is in it)."""
        assert self.lease is not None
        self.lease.close()
        self.lease = None
        self.transport.write(p.frame(p.LEASE_BACK, b""))

    async def _lease_again(self) -> bool:
        """A new lease on a new connection, from `position`: the holder takes the journal back
        and cuts it first. False when svc could not attach again (the old one still serves)."""
        attached = await self._again(self.position, True) if self._again else None
        if attached is None:
            return False
        assert self.lease is not None
        self.lease.close()
        self.transport.close()
        for fd in attached.fds[:1]:
            os.close(fd)  # the same PTY again: svc's own descriptor stays
        self._take(attached)
        self.position = attached.hello["offset"]
        return True

    def write(self, data: bytes) -> None:
        if self.pty is not None:
            self.pty.write(data)
            return
        for start in range(0, len(data), p.MAX_FRAME):
            self.transport.write(p.frame(p.INPUT, data[start : start + p.MAX_FRAME]))

    def resize(self, cols: int, rows: int) -> None:
        if self.pty is not None:
            self.pty.resize(cols, rows)
            return
        self.transport.write(p.json_frame(p.RESIZE, {"cols": cols, "rows": rows}))

    def ack(self, offset: int) -> None:
        self.transport.write(p.json_frame(p.ACK, {"offset": offset}))

    def close_input(self) -> None:
        self.transport.write(p.frame(p.END_INPUT, b""))

    def close(self) -> None:
        self.transport.close()
        if self.lease is not None:
            self.lease.close()
            self.lease = None
        if self.pty is not None:
            self.pty.close()


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class PtyInput:
    """Writing to a terminal's PTY without blocking: what the process has not read yet waits,
    up to INPUT_LIMIT (keys typed ahead into a program that reads none are dropped beyond it,
    as a real terminal's would be)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)
        self.pending = bytearray()
        self.loop = asyncio.get_running_loop()
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        if self.pending:
            if len(self.pending) + len(data) <= INPUT_LIMIT:
                self.pending += data
            return
        try:
            written = os.write(self.fd, data)
        except BlockingIOError:
            written = 0
        except OSError:
            return
        if written < len(data):
            self.pending += data[written:]
            self.loop.add_writer(self.fd, self._flush)

    def _flush(self) -> None:
        try:
            written = os.write(self.fd, self.pending)
        except BlockingIOError:
            return
        except OSError:
            written = len(self.pending)
        del self.pending[:written]
        if not self.pending:
            self.loop.remove_writer(self.fd)

    def resize(self, cols: int, rows: int) -> None:
        if not self.closed:
            with contextlib.suppress(OSError):
                set_size(self.fd, cols, rows)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.pending:
                self.loop.remove_writer(self.fd)
            os.close(self.fd)
